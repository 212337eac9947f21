package spec

import (
	"sort"
	"strings"

	"github.com/ytflow/yt-flow/connectors/registry"
)

const flowNamespace = "NYT::NFlow::"

// computationClass describes one canonical computation class.
type computationClass struct {
	canonical   string
	kind        Kind
	passthrough bool
	names       []string // Flow names with namespace
	aliases     []string // extra short names
	companion   bool
}

var computationClasses = []computationClass{
	{"transform", KindTransform, false, []string{"NYT::NFlow::TProcessFunctionComputation", "NYT::NFlow::TTransformComputation"}, nil, false},
	{"passthrough", KindTransform, true, []string{"NYT::NFlow::TPassthroughComputation"}, nil, false},
	{"swift_map", KindSwiftMap, false, []string{"NYT::NFlow::TProcessFunctionSwiftMapComputation", "NYT::NFlow::TSwiftMapComputation"}, nil, false},
	{"swift_passthrough", KindSwiftMap, true, []string{"NYT::NFlow::TSwiftPassthroughComputation"}, nil, false},
	{"transform_source", KindTransformSource, false, []string{
		"NYT::NFlow::TProcessFunctionSourceComputation",
		"NYT::NFlow::TProcessFunctionTransformOrderedSourceComputation",
		"NYT::NFlow::TTransformOrderedSourceComputation",
	}, []string{"source"}, false},
	{"swift_source", KindSwiftSource, false, []string{"NYT::NFlow::TSwiftOrderedSourceComputation"}, nil, false},
	{"swift_passthrough_source", KindSwiftSource, true, []string{"NYT::NFlow::TSwiftPassthroughOrderedSourceComputation"}, nil, false},

	// Flow's companion classes run functions of another language in a companion process;
	// here Go functions run in the worker, so each is an alias of its native class (same
	// canonical name and kind). Without processing_function the function is the one
	// registered under the computation id, as a Flow companion looks functions up.
	{"transform", KindTransform, false, []string{"NYT::NFlow::NCompanion::TTransformCompanionComputation"}, nil, true},
	{"swift_map", KindSwiftMap, false, []string{"NYT::NFlow::NCompanion::TSwiftMapCompanionComputation"}, nil, true},
	{"transform_source", KindTransformSource, false, []string{"NYT::NFlow::NCompanion::TTransformOrderedSourceCompanionComputation"}, nil, true},
	{"swift_source", KindSwiftSource, false, []string{"NYT::NFlow::NCompanion::TSwiftOrderedSourceCompanionComputation"}, nil, true},
}

// computationByName maps every accepted spelling to its computation class. Source and sink
// classes live in the connector registry (connectors/registry).
var computationByName = map[string]*computationClass{}

// spellings returns every accepted spelling of a class: its Flow names, the same without
// the NYT::NFlow:: prefix, its canonical name and extra aliases.
func spellings(canonical string, names, aliases []string) []string {
	out := []string{canonical}
	for _, n := range names {
		out = append(out, n, strings.TrimPrefix(n, flowNamespace))
	}
	return append(out, aliases...)
}

func init() {
	for i := range computationClasses {
		c := &computationClasses[i]
		all := spellings(c.canonical, c.names, c.aliases)
		if c.companion {
			all = all[1:] // the canonical name is the native class's
		}
		for _, s := range all {
			computationByName[s] = c
		}
	}
}

// ClassAliases returns every accepted class name and alias mapped to its canonical name.
// Computation canonical names are transform, passthrough, swift_map, swift_passthrough,
// transform_source, swift_source and swift_passthrough_source; source and sink canonical
// names are those of the registered connector classes (connectors/registry). Names shared by
// a source and a sink class ("kafka") map to the same canonical spelling in both roles.
func ClassAliases() map[string]string {
	out := map[string]string{}
	for n, c := range computationByName {
		out[n] = c.canonical
	}
	for _, role := range []registry.Role{registry.Source, registry.Sink} {
		for _, c := range registry.Classes(role) {
			for _, n := range c.Spellings() {
				out[n] = c.Name
			}
		}
	}
	return out
}

// lookupConnector returns the connector class of role named name. An unknown name is
// reported at path, listing the known short names of that role; an empty name is not, as the
// caller has reported it missing already.
func lookupConnector(p *parser, role registry.Role, name, path string) (*registry.Class, bool) {
	c, ok := registry.Lookup(role, name)
	if !ok && name != "" {
		known := registry.ShortNames(role)
		if len(known) == 0 {
			p.errorf(path, "unknown %s class %q: no connector classes are registered in this program (import github.com/ytflow/yt-flow/connectors/all)", role, name)
		} else {
			p.errorf(path, "unknown %s class %q (known: %s)", role, name, strings.Join(known, ", "))
		}
	}
	return c, ok
}

// lookupClass returns the class registered under name in byName. An unknown
// name is reported at path, listing the known names of that kind; an empty
// name is not, as the caller has reported it missing already.
func lookupClass[V any](p *parser, kind string, byName map[string]V, name, path string) (V, bool) {
	c, ok := byName[name]
	if !ok && name != "" {
		p.errorf(path, "unknown %s class %q (known: %s)", kind, name, strings.Join(classNames(byName), ", "))
	}
	return c, ok
}

// classNames lists the names in m without the fully qualified Flow ones,
// sorted.
func classNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		if !strings.Contains(n, "::") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}
