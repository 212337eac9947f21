package ytstore

// Other clusters: a queue source or sink whose path names a cluster (<cluster=NAME>//path)
// reaches it through a Store of that cluster. The names resolve through the pipeline's
// @yt_flow_clusters (name → proxy), which `yt-flow start`, `deploy` and `run` write from the
// runner config's clusters map and $YT_FLOW_CLUSTERS.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// ClustersAttr is the pipeline attribute mapping cluster names to proxies.
const ClustersAttr = "yt_flow_clusters"

// ErrUnknownCluster is returned for a cluster name the pipeline's clusters map lacks.
var ErrUnknownCluster = errors.New("unknown cluster")

// remotes holds the stores of other clusters a Store opened (Cluster).
type remotes struct {
	mu      sync.Mutex
	proxies map[string]string // read once from ClustersAttr
	stores  map[string]*Store
}

// SetClusters records the pipeline's clusters map (name → proxy); an empty map removes it.
func (s *Store) SetClusters(ctx context.Context, clusters map[string]string) error {
	p := s.path.Attr(ClustersAttr)
	if len(clusters) == 0 {
		exists, err := s.yc.NodeExists(ctx, p, nil)
		if err != nil || !exists {
			return classifyWrap(err, "read "+p.String())
		}
		return classifyWrap(s.yc.RemoveNode(ctx, p, nil), "remove "+p.String())
	}
	return classifyWrap(s.yc.SetNode(ctx, p, clusters, nil), "write "+p.String())
}

func classifyWrap(err error, what string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("ytstore: %s: %w", what, classify(err))
}

// Cluster returns the Store of cluster name for the same pipeline, opened with this store's
// token on the proxy the pipeline's clusters map names; "" is this store. The map is read at
// the first call (and again after a name it lacks); the stores live until this one is closed.
func (s *Store) Cluster(ctx context.Context, name string) (*Store, error) {
	if name == "" {
		return s, nil
	}
	r := &s.remotes
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.stores[name]; ok {
		return st, nil
	}
	if r.proxies == nil {
		m := map[string]string{}
		p := s.path.Attr(ClustersAttr)
		exists, err := s.yc.NodeExists(ctx, p, nil)
		if err != nil {
			return nil, classifyWrap(err, "read "+p.String())
		}
		if exists {
			if err := s.yc.GetNode(ctx, p, &m, nil); err != nil {
				return nil, classifyWrap(err, "read "+p.String())
			}
		}
		r.proxies = m
	}
	proxy, ok := r.proxies[name]
	if !ok {
		defer func() { r.proxies = nil }() // read the map again next time: it may be set by then
		names := make([]string, 0, len(r.proxies))
		for n := range r.proxies {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("ytstore: cluster %q: %w (the pipeline's clusters: [%s]; set clusters in the runner config or $YT_FLOW_CLUSTERS and start again)",
			name, ErrUnknownCluster, strings.Join(names, ", "))
	}
	cfg := s.cfg
	cfg.Proxy = proxy
	st, err := Open(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("ytstore: cluster %q: %w", name, err)
	}
	if r.stores == nil {
		r.stores = map[string]*Store{}
	}
	r.stores[name] = st
	return st, nil
}

// closeRemotes closes the stores Cluster opened.
func (s *Store) closeRemotes() {
	r := &s.remotes
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.stores {
		st.Close()
	}
	r.stores = nil
}

// ParseClusters parses a clusters list as $YT_FLOW_CLUSTERS holds it:
// "name=proxy,name=proxy" (spaces around items ignored).
func ParseClusters(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, proxy, ok := strings.Cut(item, "=")
		name, proxy = strings.TrimSpace(name), strings.TrimSpace(proxy)
		if !ok || name == "" || proxy == "" {
			return nil, fmt.Errorf("clusters: %q is not name=proxy", item)
		}
		out[name] = proxy
	}
	return out, nil
}
