package arrivalorder

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/spec"
)

// pipelineWith is a pipeline whose computation writes stream rows to the sink with params.
func pipelineWith(params string) string {
	return fmt.Sprintf(`{
    computations = {
        read = {
            computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
            source_streams = {src = {source_class_name = "NYT::NFlow::TRandomSource"; parameters = {finite = %%true}}};
            output_stream_ids = ["rows"];
        };
        write = {
            computation_class_name = "NYT::NFlow::TPassthroughComputation";
            group_by_schema = [{name = hash; type = uint64; required = %%true; expression = "farm_hash(id)"}; {name = id; type = uint64; required = %%true}];
            input_stream_ids = ["rows"];
            output_stream_ids = ["out"];
            sinks = {tables = {sink_class_name = "NYT::NFlow::TArrivalOrderTableSink"; input_stream_ids = ["out"]; parameters = %s}};
        };
    };
    streams = {rows = {schema = [{name = id; type = uint64; required = %%true}]}; out = {schema = [{name = id; type = uint64; required = %%true}]}};
}`, params)
}

const paramsPath = "computations/write/sinks/tables/parameters"

// TestArrivalOrderParams: defaults, and bad parameters rejected by the spec with their YSON
// path (missing table_ttl, table_ttl / table_period > 40000, a bad name format).
func TestArrivalOrderParams(t *testing.T) {
	p, err := spec.ParsePipeline([]byte(pipelineWith(`{output_directory = "//out"; table_ttl = 86400000}`)))
	require.NoError(t, err)
	ap := p.Computations["write"].Sinks["tables"].Params.(*Params)
	assert.Equal(t, &Params{OutputDirectory: "//out", TablePeriod: 5 * time.Minute, TableTTL: 24 * time.Hour, TableNameFormat: "%Y-%m-%dT%H:%M:%SZ"}, ap)
	assert.Equal(t, "2026-12-06T07:05:00Z", ap.Name(time.Date(2026, 12, 6, 7, 5, 0, 0, time.UTC)))

	_, err = spec.ParsePipeline([]byte(pipelineWith(`{output_directory = "//out"; table_period = 1000; table_ttl = 40000000}`)))
	require.NoError(t, err, "exactly 40000 periods")
	for _, c := range []struct{ params, want string }{
		{`{output_directory = "//out"}`, paramsPath + "/table_ttl: required"},
		{`{output_directory = "//out"; table_period = 1000; table_ttl = 40000001}`, paramsPath + "/table_ttl: table_ttl / table_period is 40000, must be at most 40000"},
		{`{output_directory = "//out"; table_period = 1000; table_ttl = 80000000}`, paramsPath + "/table_ttl: table_ttl / table_period is 80000, must be at most 40000"},
		{`{output_directory = "//out"; table_ttl = 0}`, paramsPath + "/table_ttl: must be positive"},
		{`{output_directory = "//out"; table_ttl = 1000; table_period = 0}`, paramsPath + "/table_period: must be positive"},
		{`{output_directory = "//out"; table_ttl = 1000; table_name_format = "%Y/%m"}`, paramsPath + "/table_name_format: \"%Y/%m\" makes table names with a \"/\""},
		{`{output_directory = "//out"; table_ttl = 1000; table_name_format = "%Q"}`, paramsPath + "/table_name_format: \"%Q\": unsupported directive %Q"},
		{`{table_ttl = 1000}`, paramsPath + "/output_directory: required"},
		{`{output_directory = "//out"; table_ttl = 1000; ttl = 1}`, paramsPath + "/ttl: unknown key"},
		{`{output_directory = "//out"; table_ttl = 1000; data_weight_column = size}`, paramsPath + `/data_weight_column: stream "out" has no column "size"`},
	} {
		_, err := spec.ParsePipeline([]byte(pipelineWith(c.params)))
		if assert.Error(t, err, c.params) {
			assert.Contains(t, err.Error(), c.want, c.params)
		}
	}
}

// TestDataWeightColumnType: data_weight_column must be an int64 or uint64 column of the
// input stream.
func TestDataWeightColumnType(t *testing.T) {
	p, err := spec.ParsePipeline([]byte(pipelineWith(`{output_directory = "//out"; table_ttl = 1000; data_weight_column = id}`)))
	require.NoError(t, err)
	assert.Equal(t, "id", p.Computations["write"].Sinks["tables"].Params.(*Params).DataWeightColumn)
	bad := strings.ReplaceAll(pipelineWith(`{output_directory = "//out"; table_ttl = 1000; data_weight_column = name}`),
		`out = {schema = [{name = id; type = uint64; required = %true}]}`, `out = {schema = [{name = id; type = uint64; required = %true}; {name = name; type = string}]}`)
	_, err = spec.ParsePipeline([]byte(bad))
	assert.ErrorContains(t, err, paramsPath+`/data_weight_column: column "name" of stream "out" is string, want int64 or uint64`)
}

// TestTableNameFormat: every directive, and literal text kept as it is.
func TestTableNameFormat(t *testing.T) {
	ts := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	require.NoError(t, checkFormat("%Y%m%d %H%M%S %y %j %% T Z mon"))
	assert.Equal(t, "20260203 040506 26 034 % T Z mon", formatName(ts, "%Y%m%d %H%M%S %y %j %% T Z mon"))
	assert.Error(t, checkFormat(""))
	assert.Error(t, checkFormat("%Y%"))
}
