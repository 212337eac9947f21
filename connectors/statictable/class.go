// Package statictable connects yt-flow to static tables: the source
// (NStaticTableConnector::TSource) reads tables into the pipeline and the arrival-order sink
// (TArrivalOrderTableSink) writes time-sliced output tables. The spec accepts and validates
// both; the runtime does not run them yet.
package statictable

import (
	"time"

	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// Class names of the static table connector.
const (
	SourceClass           = "static_table"
	ArrivalOrderSinkClass = "arrival_order_table"
)

// SourceParams are the parameters of the static table source.
type SourceParams struct {
	Tables            []string
	TablesPath        string
	TableNameFilter   string
	Finite            bool
	WatermarkDelay    time.Duration // default 1h
	IgnoreSymlinks    bool
	SkipNonTableNodes bool
}

// IsFinite tells whether the source completes once every table is read.
func (p *SourceParams) IsFinite() bool { return p.Finite }

// ArrivalOrderParams are the parameters of TArrivalOrderTableSink.
type ArrivalOrderParams struct {
	OutputDirectory  string        // required
	TablePeriod      time.Duration // default 5m
	TableTTL         time.Duration // required, at most 40000 periods
	TableNameFormat  string        // default "%Y-%m-%dT%H:%M:%SZ"
	DataWeightColumn string
}

func init() {
	registry.Register(registry.Class{
		Name: SourceClass, Role: registry.Source,
		FlowNames: []string{"NYT::NFlow::NStaticTableConnector::TSource", "NYT::NFlow::TStaticTableSource"},
		Guarantee: registry.ExactlyOnce,
		Summary:   "reads static tables (a list or a directory) by row ranges; dedup by read range",
		Parse:     parseSource,
	})
	registry.Register(registry.Class{
		Name: ArrivalOrderSinkClass, Role: registry.Sink, FlowNames: []string{"NYT::NFlow::TArrivalOrderTableSink"},
		Guarantee: registry.ExactlyOnce, Kind: registry.AsyncSink, SingleInput: true,
		Summary: "writes time-sliced static tables; table and progress commit in one master transaction",
		Parse:   parseArrivalOrder,
	})
}

func parseSource(f *yson.Fields) any {
	st := &SourceParams{}
	st.Tables = f.Strings("tables", true)
	st.TablesPath = f.String("tables_path", "")
	st.TableNameFilter = f.String("table_name_filter", "")
	hasTables, hasPath := f.Has("tables"), f.Has("tables_path")
	switch {
	case hasTables && hasPath:
		f.Errorf("tables_path", "set either tables or tables_path, not both")
	case !hasTables && !hasPath:
		f.Errorf("tables", "required (or tables_path)")
	}
	for _, key := range []string{"event_timestamp_locator", "system_timestamp_locator"} {
		if ln := f.Node(key); ln != nil {
			lf := f.Walker().Fields(ln, f.Path(key))
			lf.String("attribute", "")
			lf.String("format", "")
			lf.Close()
		}
	}
	st.IgnoreSymlinks = f.Bool("ignore_symlinks", false)
	st.SkipNonTableNodes = f.Bool("skip_non_table_nodes", false)
	st.WatermarkDelay = f.Duration("watermark_delay", time.Hour)
	f.Bool("use_planned_timestamps", false)
	st.Finite = f.Bool("finite", false)
	f.Duration("update_info_period", 0)
	f.Float("byte_size_alpha", 0)
	return st
}

func parseArrivalOrder(f *yson.Fields) any {
	a := &ArrivalOrderParams{}
	a.OutputDirectory = registry.RichPath(f, "output_directory")
	a.TablePeriod = f.Duration("table_period", 5*time.Minute)
	if f.Required("table_ttl") != nil {
		a.TableTTL = f.Duration("table_ttl", 0)
	}
	a.TableNameFormat = f.String("table_name_format", "%Y-%m-%dT%H:%M:%SZ")
	a.DataWeightColumn = f.String("data_weight_column", "")
	if a.TablePeriod <= 0 {
		f.Errorf("table_period", "must be positive")
	} else if a.TableTTL/a.TablePeriod > 40000 || (a.TableTTL/a.TablePeriod == 40000 && a.TableTTL%a.TablePeriod != 0) {
		f.Errorf("table_ttl", "table_ttl/table_period must be at most 40000")
	}
	return a
}
