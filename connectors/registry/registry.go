// Package registry is the catalogue of connector classes: every source and sink class that a
// pipeline spec may name registers here, from the init function of its own package under
// connectors/, with its Flow names, its delivery guarantee, its sink kind and a strict parser
// of its parameters. The spec package asks the registry; no other package names a class.
//
// It is a leaf: it imports only the project's yson helpers and the SDK's leaf packages
// (ypath, schema), so that spec may use it. The runtime half of a connector (how it reads
// and writes) registers with package connectors/connector.
package registry

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/yson"
)

// Role says whether a class is a source or a sink.
type Role uint8

// Roles.
const (
	Source Role = iota + 1
	Sink
)

func (r Role) String() string {
	switch r {
	case Source:
		return "source"
	case Sink:
		return "sink"
	}
	return "unknown role"
}

// Guarantee is the delivery guarantee of a class.
type Guarantee uint8

// Guarantees, from the strongest.
const (
	ExactlyOnce Guarantee = iota + 1
	AtLeastOnce
	AtMostOnce
)

func (g Guarantee) String() string {
	switch g {
	case ExactlyOnce:
		return "exactly-once"
	case AtLeastOnce:
		return "at-least-once"
	case AtMostOnce:
		return "at-most-once"
	}
	return "unknown guarantee"
}

// SinkKind is how a sink's writes relate to the epoch commit.
type SinkKind uint8

// Sink kinds.
const (
	// SyncSink writes inside the epoch transaction: exactly once with the epoch.
	SyncSink SinkKind = iota + 1
	// AtLeastOnceSyncSink writes to an external system during the epoch, before the commit;
	// the epoch fails when the write fails, and a restart may write again.
	AtLeastOnceSyncSink
	// AsyncSink delivers committed outputs from the output store after the commit, with a
	// batch identity the target deduplicates on.
	AsyncSink
)

func (k SinkKind) String() string {
	switch k {
	case SyncSink:
		return "sync"
	case AtLeastOnceSyncSink:
		return "at-least-once sync"
	case AsyncSink:
		return "async"
	}
	return "unknown sink kind"
}

// Input is one input stream of a sink, for Class.Validate.
type Input struct {
	ID     string
	Schema schema.Schema
}

// Class describes one connector class.
type Class struct {
	// Name is the canonical short name ("queue", "sync_queue"); unique per role.
	Name string
	Role Role
	// FlowNames are YTsaurus Flow's fully qualified class names; each is also accepted
	// without its "NYT::NFlow::" prefix.
	FlowNames []string
	// Aliases are further accepted short names.
	Aliases   []string
	Guarantee Guarantee
	// Kind is the sink kind (sinks only).
	Kind SinkKind
	// AtMostOnce tells whether the sink accepts at_most_once_strategy (async sinks only);
	// AtMostOnceRefusal, when set, is the reason given to a spec that sets it anyway.
	AtMostOnce        bool
	AtMostOnceRefusal string
	// SingleInput: the sink reads exactly one input stream.
	SingleInput bool
	// Runs tells whether this build can run the class; a class that does not is validated
	// and reported as unsupported by the runtime.
	Runs bool
	// Summary is one line for documentation tables.
	Summary string

	// Parse reads the static parameters map f (consume every key Flow defines; Close is
	// called by the caller and reports the rest as unknown) and returns the typed
	// parameters. Problems go to f.Errorf; parsing goes on to report them all.
	Parse func(f *yson.Fields) any
	// ParseDynamic, when set, reads the dynamic parameters map of a source stream or sink
	// of this class in the same way; static holds what Parse returned.
	ParseDynamic func(f *yson.Fields, static any) any
	// Columns, when set, lists the payload columns the parameters name, by parameter key;
	// each must exist in every input stream.
	Columns func(params any) map[string][]string
	// Validate, when set, checks the parameters against the input streams; report takes
	// the path of the problem inside the parameters map ("payload_column").
	Validate func(params any, inputs []Input, report func(key, format string, args ...any))
	// CheckTables, when set, checks the parameters against the tables they name on a
	// cluster (`yt-flow validate --check-tables`); report takes the path of the problem
	// inside the parameters map ("table_joiner/fetchers/0/table_path").
	CheckTables func(ctx context.Context, c Cluster, params any, report func(key, format string, args ...any))
}

// Cluster is what CheckTables reads of a cluster (ytstore.Store implements it): the schema
// of the table at path, or an error naming it.
type Cluster interface {
	TableSchema(ctx context.Context, path string) (schema.Schema, error)
}

// FlowNamespace prefixes Flow's fully qualified class names.
const FlowNamespace = "NYT::NFlow::"

var (
	mu      sync.RWMutex
	classes = map[Role]map[string]*Class{} // role -> canonical name -> class
	names   = map[Role]map[string]*Class{} // role -> every accepted spelling -> class
)

// Register adds c. It panics on a malformed class or a name already taken in its role: both
// are programming errors of a connector package, found by its first test.
func Register(c Class) {
	mu.Lock()
	defer mu.Unlock()
	if c.Name == "" || (c.Role != Source && c.Role != Sink) || c.Parse == nil || c.Guarantee == 0 {
		panic(fmt.Sprintf("registry: class %q: name, role, guarantee and parser are required", c.Name))
	}
	if c.Role == Sink && c.Kind == 0 {
		panic(fmt.Sprintf("registry: sink class %q: kind is required", c.Name))
	}
	if c.AtMostOnce && c.Kind != AsyncSink {
		panic(fmt.Sprintf("registry: sink class %q: at_most_once_strategy applies to async sinks only", c.Name))
	}
	if classes[c.Role] == nil {
		classes[c.Role], names[c.Role] = map[string]*Class{}, map[string]*Class{}
	}
	cp := c
	for _, s := range cp.Spellings() {
		if prev, ok := names[c.Role][s]; ok {
			panic(fmt.Sprintf("registry: %s class name %q of %q is taken by %q", c.Role, s, c.Name, prev.Name))
		}
		names[c.Role][s] = &cp
	}
	classes[c.Role][c.Name] = &cp
}

// Spellings returns every accepted name of c: its canonical name, its Flow names with and
// without the namespace, and its aliases.
func (c *Class) Spellings() []string {
	out := []string{c.Name}
	for _, n := range c.FlowNames {
		out = append(out, n, strings.TrimPrefix(n, FlowNamespace))
	}
	out = append(out, c.Aliases...)
	slices.Sort(out)
	return slices.Compact(out)
}

// Lookup returns the class of role named name (any accepted spelling).
func Lookup(role Role, name string) (*Class, bool) {
	mu.RLock()
	defer mu.RUnlock()
	c, ok := names[role][name]
	return c, ok
}

// Classes returns the classes of role sorted by canonical name.
func Classes(role Role) []*Class {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]*Class, 0, len(classes[role]))
	for _, c := range classes[role] {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ShortNames lists the accepted names of role's classes that carry no namespace, sorted: what
// an error about an unknown class offers.
func ShortNames(role Role) []string {
	mu.RLock()
	defer mu.RUnlock()
	out := []string{}
	for n := range names[role] {
		if !strings.Contains(n, "::") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
