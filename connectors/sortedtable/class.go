package sortedtable

import (
	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// Class is the canonical name of the sorted dynamic table sink.
const Class = "sorted_table"

// Params are the parameters of the sorted dynamic table sink.
type Params struct {
	TablePath          string // required
	ColumnFilter       []string
	AggregateColumns   []string
	DeleteRows         bool
	RequireSyncReplica bool // default true
}

func init() {
	registry.Register(registry.Class{
		Name: Class, Role: registry.Sink,
		FlowNames: []string{"NYT::NFlow::NSortedDynamicTable::TSyncSink", "NYT::NFlow::TSortedDynamicTableSink"},
		Guarantee: registry.ExactlyOnce, Kind: registry.SyncSink, Runs: true,
		Summary: "upserts (or deletes) rows of a sorted dynamic table inside the epoch transaction",
		Parse:   parse,
		Columns: func(params any) map[string][]string {
			p := params.(*Params)
			return map[string][]string{"column_filter": p.ColumnFilter, "aggregate_columns": p.AggregateColumns}
		},
	})
}

func parse(f *yson.Fields) any {
	p := &Params{}
	p.TablePath = registry.RichPath(f, "table_path")
	p.ColumnFilter = f.Strings("column_filter", true)
	p.AggregateColumns = f.Strings("aggregate_columns", true)
	p.DeleteRows = f.Bool("delete_rows", false)
	p.RequireSyncReplica = f.Bool("require_sync_replica", true)
	f.Duration("update_partition_count_period", 0)
	return p
}

func init() {
	connector.RegisterSink(Class, connector.Constructors{
		SyncSink: func(_ connector.Env, params any) (connector.SyncSink, error) {
			p := params.(*Params)
			return &Sink{TablePath: p.TablePath, ColumnFilter: p.ColumnFilter, DeleteRows: p.DeleteRows}, nil
		},
	})
}
