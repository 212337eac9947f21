package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

// connectorParamsSpec has a static table source with a filter that does not compile and two
// arrival-order sinks, one without table_ttl and one with table_ttl / table_period > 40000.
const connectorParamsSpec = `{path = "//p"; spec = {
    computations = {
        read = {
            computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
            source_streams = {logs = {source_class_name = "NYT::NFlow::NStaticTableConnector::TSource";
                parameters = {tables_path = "//logs"; table_name_filter = "(unclosed"}}};
            output_stream_ids = ["rows"];
        };
        write = {
            computation_class_name = "NYT::NFlow::TPassthroughComputation";
            group_by_schema = [{name = hash; type = uint64; required = %true; expression = "farm_hash(id)"}; {name = id; type = uint64; required = %true}];
            input_stream_ids = ["rows"];
            output_stream_ids = ["out"];
            sinks = {
                a = {sink_class_name = "NYT::NFlow::TArrivalOrderTableSink"; input_stream_ids = ["out"]; parameters = {output_directory = "//a"}};
                b = {sink_class_name = "NYT::NFlow::TArrivalOrderTableSink"; input_stream_ids = ["out"];
                     parameters = {output_directory = "//b"; table_period = "1s"; table_ttl = "1d"}};
            };
        };
    };
    streams = {rows = {schema = [{name = id; type = uint64; required = %true}]}; out = {schema = [{name = id; type = uint64; required = %true}]}};
}}`

// serviceLogSpec reads the service log of table %q.
const serviceLogSpec = `{path = "//p"; spec = {
    computations = {read = {
        computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
        source_streams = {s = {source_class_name = "NYT::NFlow::TServiceLogSource";
            parameters = {table_joiner = {fetchers = [{table_path = %q}]}}}};
        output_stream_ids = ["rows"];
    }};
    streams = {rows = {schema = [{name = name; type = string}]}};
}}`

// TestValidateRejectsBadConnectorParams: yt-flow validate rejects the bad parameters of the
// YTsaurus-native connectors with their YSON paths: a missing table_ttl, table_ttl /
// table_period > 40000, a table_name_filter that does not compile, and — with
// --check-tables against a running server — a service log table whose first key column is
// not a uint64 (a table with a uint64 one passes).
func TestValidateRejectsBadConnectorParams(t *testing.T) {
	dir := t.TempDir()
	params := filepath.Join(dir, "params.yson")
	require.NoError(t, os.WriteFile(params, []byte(connectorParamsSpec), 0o644))
	code, _, stderr := runValidateCmd(t, params)
	assert.Equal(t, 1, code)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	require.Len(t, lines, 3, stderr)
	assert.Equal(t, params+`: spec/computations/read/source_streams/logs/parameters/table_name_filter: "(unclosed" does not compile (RE2): error parsing regexp: missing closing ): `+"`(unclosed`", lines[0])
	assert.Equal(t, params+`: spec/computations/write/sinks/a/parameters/table_ttl: required`, lines[1])
	assert.Equal(t, params+`: spec/computations/write/sinks/b/parameters/table_ttl: table_ttl / table_period is 86400, must be at most 40000`, lines[2])

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	defer func() { _ = srv.Close() }()
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: "//p"})
	require.NoError(t, err)
	defer st.Close()
	var sl string
	for _, c := range []struct {
		first schema.Type
		code  int
		err   string
	}{
		{schema.TypeString, 1, ": spec/computations/read/source_streams/s/parameters/table_joiner/fetchers/0/table_path: //state_utf8: first key column name is utf8, want uint64 (partitions are ranges of it)\n"},
		{schema.TypeUint64, 0, ""},
	} {
		table := "//state_" + string(c.first)
		sl = filepath.Join(dir, string(c.first)+".yson")
		require.NoError(t, os.WriteFile(sl, []byte(fmt.Sprintf(serviceLogSpec, table)), 0o644))
		sc := schema.Schema{UniqueKeys: true, Columns: []schema.Column{{Name: "name", Type: c.first, SortOrder: schema.SortAscending}, {Name: "v", Type: schema.TypeInt64}}}
		require.NoError(t, st.EnsureUserTable(ctx, ytstore.UserTable{Path: table, Kind: ytstore.UserSortedTable, Schema: sc}))
		code, stdout, stderr := runValidateCmd(t, "--check-tables", "--proxy", srv.Addr(), sl)
		assert.Equal(t, c.code, code, stderr)
		if c.code == 0 {
			assert.Equal(t, sl+": ok\n", stdout)
			assert.Empty(t, stderr)
		} else {
			assert.Equal(t, sl+c.err, stderr)
		}
	}
	// Without --check-tables validate does not read the cluster: the bad table passes.
	sl = filepath.Join(dir, "utf8.yson")
	// Without --check-tables validate does not read the cluster.
	code, stdout, _ := runValidateCmd(t, sl)
	assert.Equal(t, 0, code)
	assert.Equal(t, sl+": ok\n", stdout)
}
