package spec

import (
	"sort"
	"strings"
)

const flowNamespace = "NYT::NFlow::"

// computationClass describes one canonical computation class.
type computationClass struct {
	canonical   string
	kind        Kind
	passthrough bool
	names       []string // Flow names with namespace
	aliases     []string // extra short names
}

var computationClasses = []computationClass{
	{"transform", KindTransform, false, []string{"NYT::NFlow::TProcessFunctionComputation", "NYT::NFlow::TTransformComputation"}, nil},
	{"passthrough", KindTransform, true, []string{"NYT::NFlow::TPassthroughComputation"}, nil},
	{"swift_map", KindSwiftMap, false, []string{"NYT::NFlow::TProcessFunctionSwiftMapComputation", "NYT::NFlow::TSwiftMapComputation"}, nil},
	{"swift_passthrough", KindSwiftMap, true, []string{"NYT::NFlow::TSwiftPassthroughComputation"}, nil},
	{"transform_source", KindTransformSource, false, []string{
		"NYT::NFlow::TProcessFunctionSourceComputation",
		"NYT::NFlow::TProcessFunctionTransformOrderedSourceComputation",
		"NYT::NFlow::TTransformOrderedSourceComputation",
	}, []string{"source"}},
	{"swift_source", KindSwiftSource, false, []string{"NYT::NFlow::TSwiftOrderedSourceComputation"}, nil},
	{"swift_passthrough_source", KindSwiftSource, true, []string{"NYT::NFlow::TSwiftPassthroughOrderedSourceComputation"}, nil},
}

type sourceClass struct {
	class   SourceClass
	names   []string
	aliases []string
}

var sourceClasses = []sourceClass{
	{SourceQueue, []string{"NYT::NFlow::TQueueSource"}, nil},
	{SourceStaticTable, []string{"NYT::NFlow::NStaticTableConnector::TSource", "NYT::NFlow::TStaticTableSource"}, nil},
	{SourceServiceLog, []string{"NYT::NFlow::TServiceLogSource"}, nil},
	{SourceRandom, []string{"NYT::NFlow::TRandomSource"}, nil},
	{SourceKafka, []string{"NYT::NFlow::TKafkaSource"}, nil},
}

type sinkClass struct {
	class   SinkClass
	names   []string
	aliases []string
}

var sinkClasses = []sinkClass{
	{SinkSyncQueue, []string{"NYT::NFlow::TSyncQueueSink"}, nil},
	{SinkAsyncQueue, []string{"NYT::NFlow::TAsyncQueueSink"}, nil},
	{SinkSortedTable, []string{"NYT::NFlow::NSortedDynamicTable::TSyncSink", "NYT::NFlow::TSortedDynamicTableSink"}, nil},
	{SinkArrivalOrderTable, []string{"NYT::NFlow::TArrivalOrderTableSink"}, nil},
	{SinkAsyncHTTP, []string{"NYT::NFlow::TAsyncHttpSink"}, []string{"http"}},
	{SinkKafka, []string{"NYT::NFlow::TKafkaSink"}, nil},
	{SinkClickHouse, []string{"NYT::NFlow::TClickHouseBatchingSink"}, []string{"clickhouse"}},
}

// Separate lookup tables per role: "kafka" names both a source and a sink class.
var (
	computationByName = map[string]*computationClass{}
	sourceByName      = map[string]SourceClass{}
	sinkByName        = map[string]SinkClass{}
)

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
		for _, s := range spellings(c.canonical, c.names, c.aliases) {
			computationByName[s] = c
		}
	}
	for _, c := range sourceClasses {
		for _, s := range spellings(string(c.class), c.names, c.aliases) {
			sourceByName[s] = c.class
		}
	}
	for _, c := range sinkClasses {
		for _, s := range spellings(string(c.class), c.names, c.aliases) {
			sinkByName[s] = c.class
		}
	}
}

// ClassAliases returns every accepted class name and alias mapped to its canonical name.
// Computation canonical names are transform, passthrough, swift_map, swift_passthrough,
// transform_source, swift_source and swift_passthrough_source; source and sink canonical
// names are the SourceClass and SinkClass values. Names shared by a source and a sink class
// ("kafka") map to the same canonical spelling in both roles.
func ClassAliases() map[string]string {
	out := map[string]string{}
	for n, c := range computationByName {
		out[n] = c.canonical
	}
	for n, c := range sourceByName {
		out[n] = string(c)
	}
	for n, c := range sinkByName {
		out[n] = string(c)
	}
	return out
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
