package ytstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"testing"
)

// TestTransportSecret: CreatePipeline creates the secret node (with an ACL of its creator
// alone, not inherited) and keeps it when run again; a rotation makes a new current key and
// keeps the old one as previous.
func TestTransportSecret(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, "//tmp/secret/pipeline")
	if _, err := st.TransportSecret(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("before the pipeline exists: %v, want ErrNotFound", err)
	}
	if err := st.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	first, err := st.TransportSecret(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Current) != 32 || len(first.Previous) != 0 {
		t.Fatalf("a new secret: %d bytes current, %d previous; want 32 and 0", len(first.Current), len(first.Previous))
	}
	var acl []struct {
		Action      string   `yson:"action"`
		Subjects    []string `yson:"subjects"`
		Permissions []string `yson:"permissions"`
	}
	if err := st.yc.GetNode(ctx, st.child(TransportSecretNode).Attr("acl"), &acl, nil); err != nil {
		t.Fatal(err)
	}
	if len(acl) != 1 || acl[0].Action != "allow" || len(acl[0].Subjects) != 1 || acl[0].Subjects[0] != "root" {
		t.Errorf("@acl = %+v, want one allow entry for the creator (root on ytlocal)", acl)
	}
	var inherit bool
	if err := st.yc.GetNode(ctx, st.child(TransportSecretNode).Attr("inherit_acl"), &inherit, nil); err != nil || inherit {
		t.Errorf("@inherit_acl = %v (%v), want false", inherit, err)
	}

	if err := st.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := st.TransportSecret(ctx)
	if err != nil || !bytes.Equal(again.Current, first.Current) {
		t.Fatalf("CreatePipeline again changed the secret (%v)", err)
	}

	if err := st.RotateTransportSecret(ctx, rand.Reader); err != nil {
		t.Fatal(err)
	}
	rotated, err := st.TransportSecret(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(rotated.Current, first.Current) || !bytes.Equal(rotated.Previous, first.Current) {
		t.Errorf("after a rotation: current new %v, previous the old current %v",
			!bytes.Equal(rotated.Current, first.Current), bytes.Equal(rotated.Previous, first.Current))
	}
}

// TestTransportSecretCreatedWhole: a reader polling the secret while the pipeline is created
// sees either no secret or a whole one, never a node without its key; and a node an older
// version left without a key (created empty, the key never written) reads as no secret and
// is given one by CreatePipeline.
func TestTransportSecretCreatedWhole(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, "//tmp/secret/whole")
	stop := make(chan struct{})
	type seen struct {
		missing, whole int
		other          error
	}
	res := make(chan seen, 1)
	go func() {
		var s seen
		defer func() { res <- s }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, err := st.TransportSecret(ctx)
			switch {
			case err == nil:
				s.whole++
			case errors.Is(err, ErrNotFound):
				s.missing++
			default:
				s.other = err
				return
			}
		}
	}()
	if err := st.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	// Let the reader see the created secret before it stops.
	for {
		if _, err := st.TransportSecret(ctx); err == nil {
			break
		}
	}
	close(stop)
	s := <-res
	if s.other != nil {
		t.Fatalf("a reader during CreatePipeline got %v; want the secret or ErrNotFound", s.other)
	}
	t.Logf("reads during creation: %d found nothing, %d found the secret", s.missing, s.whole)

	legacy := openTestStore(t, "//tmp/secret/legacy")
	if err := legacy.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	if err := legacy.yc.SetNode(ctx, legacy.child(TransportSecretNode), map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := legacy.TransportSecret(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a node without a key: %v, want ErrNotFound", err)
	}
	if err := legacy.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	keys, err := legacy.TransportSecret(ctx)
	if err != nil || len(keys.Current) != 32 {
		t.Fatalf("after CreatePipeline over a node without a key: %d-byte key, %v; want 32", len(keys.Current), err)
	}
}
