package ytstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"go.ytsaurus.tech/yt/go/yt"

	"github.com/ytflow/yt-flow/internal/jobauth"
)

// TransportSecretNode is the document node under the pipeline that holds the transport
// secret: the key with which the pipeline's jobs sign the requests they send each other
// (package internal/jobauth).
//
// The node is created with an @acl that allows only the user who created it (and
// superusers, who may do anything), and @inherit_acl false, so that nobody else reads it on
// a cluster with authentication. On a proxy without authentication (plain `yt-flow local`)
// every request acts as root: there anyone who can reach the proxy can read the secret.
const TransportSecretNode = "transport_secret"

// transportSecretDoc is the value of the secret node: hex strings.
type transportSecretDoc struct {
	Current  string `yson:"current"`
	Previous string `yson:"previous,omitempty"`
}

// TransportSecret reads the transport secret: the current key and the one it replaced at
// the last rotation (empty when none). ErrNotFound when the pipeline has none yet: it was
// created by an older version, CreatePipeline has not run, or the node holds no key (an
// older version created it empty and wrote the key in a second step).
func (s *Store) TransportSecret(ctx context.Context) (jobauth.Keys, error) {
	var doc transportSecretDoc
	if err := s.yc.GetNode(ctx, s.child(TransportSecretNode), &doc, nil); err != nil {
		return jobauth.Keys{}, fmt.Errorf("ytstore: read %s: %w", s.child(TransportSecretNode), classify(err))
	}
	if doc.Current == "" {
		return jobauth.Keys{}, fmt.Errorf("ytstore: read %s: no key yet: %w", s.child(TransportSecretNode), ErrNotFound)
	}
	cur, err := hex.DecodeString(doc.Current)
	if err != nil {
		return jobauth.Keys{}, fmt.Errorf("ytstore: read %s: malformed current key", s.child(TransportSecretNode))
	}
	prev, err := hex.DecodeString(doc.Previous)
	if err != nil {
		return jobauth.Keys{}, fmt.Errorf("ytstore: read %s: malformed previous key", s.child(TransportSecretNode))
	}
	return jobauth.Keys{Current: cur, Previous: prev}, nil
}

// RotateTransportSecret makes a new transport secret from rand (crypto/rand.Reader): the
// current key becomes the previous one, which receivers still accept until the next
// rotation, so that jobs that have not read the new key yet are not refused meanwhile.
//
// When the pipeline has no secret, the node is created with its ACL (see
// TransportSecretNode) and the key in one request, so that no reader ever sees the node
// without a key.
//
// Invariant: a job that reads the secret while the pipeline is being created finds either
// no secret (and waits) or a whole one (TestTransportSecretCreatedWhole).
func (s *Store) RotateTransportSecret(ctx context.Context, rand io.Reader) error {
	key, err := jobauth.NewSecret(rand)
	if err != nil {
		return err
	}
	doc := transportSecretDoc{Current: hex.EncodeToString(key)}
	old, err := s.TransportSecret(ctx)
	if errors.Is(err, ErrNotFound) {
		if err := s.createSecretNode(ctx, doc); err != nil {
			return err
		}
		// The node may have existed already (created empty by an older version, or by
		// another process a moment ago): read what it holds now.
		old, err = s.TransportSecret(ctx)
		if err == nil && hex.EncodeToString(old.Current) == doc.Current {
			return nil
		}
	}
	switch {
	case err == nil:
		doc.Previous = hex.EncodeToString(old.Current)
	case errors.Is(err, ErrNotFound):
	default:
		return err
	}
	if err := s.yc.SetNode(ctx, s.child(TransportSecretNode), doc, nil); err != nil {
		return fmt.Errorf("ytstore: write %s: %w", s.child(TransportSecretNode), classify(err))
	}
	return nil
}

// ensureTransportSecret creates the transport secret when the pipeline has none.
func (s *Store) ensureTransportSecret(ctx context.Context, rand io.Reader) error {
	_, err := s.TransportSecret(ctx)
	if errors.Is(err, ErrNotFound) {
		return s.RotateTransportSecret(ctx, rand)
	}
	return err
}

// createSecretNode creates the secret document holding doc, readable and writable only by
// the current user. A node that exists already is left as it is.
func (s *Store) createSecretNode(ctx context.Context, doc transportSecretDoc) error {
	who, err := s.yc.WhoAmI(ctx, nil)
	if err != nil {
		return fmt.Errorf("ytstore: create %s: whoami: %w", s.child(TransportSecretNode), classify(err))
	}
	acl := []map[string]any{{
		"action":      "allow",
		"subjects":    []string{who.Login},
		"permissions": []string{"read", "write", "remove", "administer"},
	}}
	_, err = s.yc.CreateNode(ctx, s.child(TransportSecretNode), yt.NodeDocument, &yt.CreateNodeOptions{
		IgnoreExisting: true,
		Attributes:     map[string]any{"acl": acl, "inherit_acl": false, "value": doc},
	})
	if err != nil {
		return fmt.Errorf("ytstore: create %s: %w", s.child(TransportSecretNode), classify(err))
	}
	return nil
}
