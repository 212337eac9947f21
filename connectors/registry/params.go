package registry

import (
	"fmt"
	"strings"

	"go.ytsaurus.tech/yt/go/ypath"
	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/yson"
)

// RichPath consumes key as a required (possibly rich) YPath such as "<cluster=c>//home/q": it
// must parse with the SDK's ypath.Parse and name an absolute Cypress path.
func RichPath(f *yson.Fields, key string) string {
	s := f.RequiredString(key)
	CheckRichPath(f, key, s)
	return s
}

// CheckRichPath reports at key when s is set and is not an absolute (rich) YPath.
func CheckRichPath(f *yson.Fields, key, s string) {
	if s == "" {
		return
	}
	if !strings.HasPrefix(s, "<") && !strings.HasPrefix(s, "//") {
		f.Errorf(key, "%q is not an absolute Cypress path (want //…)", s)
		return
	}
	r, err := parseRichPath(s)
	if err != nil {
		f.Errorf(key, "%q is not a valid YPath: %v", s, err)
		return
	}
	if !strings.HasPrefix(string(r.Path), "//") {
		f.Errorf(key, "%q is not an absolute Cypress path (want //…)", s)
	}
}

func parseRichPath(s string) (r *ypath.Rich, err error) {
	defer func() {
		if rec := recover(); rec != nil {
			r, err = nil, fmt.Errorf("%v", rec)
		}
	}()
	return ypath.Parse(s)
}

// PartitionFilter consumes partition_filter: a list of [begin, end) index pairs; nil when
// absent.
func PartitionFilter(f *yson.Fields) [][2]int64 {
	n := f.Node("partition_filter")
	if n == nil {
		return nil
	}
	w, path := f.Walker(), f.Path("partition_filter")
	if n.Kind != yson.KindList {
		w.Errorf(path, "want a list of [begin; end] pairs, got %s", n.Kind)
		return nil
	}
	out := [][2]int64{}
	for i, item := range n.List {
		ip := yson.Join(path, fmt.Sprint(i))
		if item.Kind != yson.KindList || len(item.List) != 2 {
			w.Errorf(ip, "want a [begin; end] pair")
			continue
		}
		b, ok1 := w.Int(item.List[0], yson.Join(ip, "0"))
		e, ok2 := w.Int(item.List[1], yson.Join(ip, "1"))
		if ok1 && ok2 && (b < 0 || e <= b) {
			w.Errorf(ip, "range [%d, %d) is empty or negative", b, e)
			continue
		}
		out = append(out, [2]int64{b, e})
	}
	return out
}

// FiniteParams is implemented by the parameters of sources that can be finite.
type FiniteParams interface {
	// IsFinite tells whether the source completes at its end.
	IsFinite() bool
}

// ClusterPath consumes the required rich path at key and splits off its cluster attribute
// (<cluster=NAME>//path, a path on another cluster): it returns the cluster ("" for the
// pipeline's own) and the path without the attribute (as given when it has none).
func ClusterPath(f *yson.Fields, key string) (cluster, path string) {
	s := RichPath(f, key)
	if !strings.HasPrefix(s, "<") {
		return "", s
	}
	r, err := parseRichPath(s)
	if err != nil || r.Cluster == "" {
		return "", s
	}
	return r.Cluster, string(r.Path)
}

// PathAttrs returns the attributes of a rich path string (<k=v;…>//path) as a map, nil when
// it has none or they do not parse.
func PathAttrs(s string) map[string]any {
	if !strings.HasPrefix(s, "<") {
		return nil
	}
	for i := 1; i < len(s); i++ {
		if s[i] != '>' {
			continue
		}
		var m map[string]any
		if sdkyson.Unmarshal([]byte("{"+s[1:i]+"}"), &m) == nil {
			return m
		}
	}
	return nil
}

// PlainPath is the path of a rich path string without its attributes (s itself when it does
// not parse).
func PlainPath(s string) string {
	r, err := parseRichPath(s)
	if err != nil {
		return s
	}
	return string(r.Path)
}
