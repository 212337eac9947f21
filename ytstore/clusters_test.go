package ytstore

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
)

// TestClusterStores: the pipeline's clusters map names another server; Cluster opens a store
// there (the same one on every call), "" is the store itself, and an unknown name fails with
// ErrUnknownCluster listing the known ones.
func TestClusterStores(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, "//tmp/xc/pipeline")
	if err := st.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	other := ytlocaltest.New(t)
	if err := st.SetClusters(ctx, map[string]string{"a": other}); err != nil {
		t.Fatal(err)
	}
	if self, err := st.Cluster(ctx, ""); err != nil || self != st {
		t.Fatalf("Cluster(\"\"): %v %v, want the store itself", self, err)
	}
	remote, err := st.Cluster(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := st.Cluster(ctx, "a"); again != remote {
		t.Error("a second Cluster(\"a\") opened another store")
	}
	if remote.proxy != other {
		t.Errorf("cluster a reached through %s, want %s", remote.proxy, other)
	}
	// The pipeline exists on the first server only: the remote store sees the other one.
	if _, err := remote.Attributes(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("the pipeline's attributes through cluster a: %v, want ErrNotFound", err)
	}
	_, err = st.Cluster(ctx, "b")
	if !errors.Is(err, ErrUnknownCluster) || !strings.Contains(err.Error(), "[a]") {
		t.Errorf("an unknown cluster: %v", err)
	}
	if err := st.SetClusters(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

func TestParseClusters(t *testing.T) {
	m, err := ParseClusters(" a=host:1, b = h2:2 ,")
	if err != nil || !reflect.DeepEqual(m, map[string]string{"a": "host:1", "b": "h2:2"}) {
		t.Errorf("ParseClusters: %v %v", m, err)
	}
	for _, bad := range []string{"a", "=x", "a="} {
		if _, err := ParseClusters(bad); err == nil {
			t.Errorf("ParseClusters(%q) accepted", bad)
		}
	}
}

// FuzzParseClusters: any text parses to a map of non-empty names and proxies or fails.
func FuzzParseClusters(f *testing.F) {
	for _, s := range []string{"a=h:1,b=h:2", "", "a", "=", " a = b ,, c=d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseClusters(s)
		if err != nil {
			return
		}
		for k, v := range m {
			if k == "" || v == "" || strings.ContainsAny(k, "=,") || strings.Contains(v, ",") {
				t.Fatalf("ParseClusters(%q) gave %q=%q", s, k, v)
			}
		}
	})
}
