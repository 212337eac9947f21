package statictable

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/yson"
)

// pipelineWith is a pipeline reading the static table source with params.
func pipelineWith(params string) string {
	return fmt.Sprintf(`{
    computations = {read = {
        computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
        source_streams = {logs = {source_class_name = "NYT::NFlow::NStaticTableConnector::TSource"; parameters = %s}};
        output_stream_ids = ["rows"];
    }};
    streams = {rows = {schema = [{name = id; type = uint64}]}};
}`, params)
}

const paramsPath = "computations/read/source_streams/logs/parameters"

// TestStaticTableSourceParams: defaults, and bad parameters rejected by the spec with their YSON path.
func TestStaticTableSourceParams(t *testing.T) {
	p, err := spec.ParsePipeline([]byte(pipelineWith(`{tables_path = "//logs"; table_name_filter = "^\\d{4}-"; finite = %true}`)))
	require.NoError(t, err)
	sp := p.Computations["read"].Sources["logs"].Params.(*SourceParams)
	assert.Equal(t, Locator{Attribute: "key", Format: "iso8601"}, sp.EventTimestamp)
	assert.Equal(t, Locator{Attribute: "creation_time", Format: "iso8601"}, sp.SystemTimestamp)
	assert.Equal(t, time.Hour, sp.WatermarkDelay)
	assert.Equal(t, int64(1<<20), sp.RangeRowCount)
	assert.True(t, sp.NameFilter.MatchString("2026-12-06T05"))
	assert.False(t, sp.NameFilter.MatchString("x2026-12-06T05"), "anchored at the start")

	for _, c := range []struct{ params, want string }{
		{`{tables = ["//a"]; tables_path = "//logs"}`, paramsPath + "/tables_path: set either tables or tables_path, not both"},
		{`{}`, paramsPath + "/tables: required (or tables_path)"},
		{`{tables_path = "//logs"; table_name_filter = "(unclosed"}`, paramsPath + "/table_name_filter: \"(unclosed\" does not compile (RE2)"},
		{`{tables_path = "//logs"; table_name_filter = "(?=lookahead)"}`, paramsPath + "/table_name_filter:"},
		{`{tables_path = "logs"}`, paramsPath + "/tables_path: \"logs\" is not an absolute Cypress path"},
		{`{tables = ["//a"; "b"]}`, paramsPath + "/tables/1: \"b\" is not an absolute Cypress path"},
		{`{tables_path = "//logs"; event_timestamp_locator = {attribute = key; format = "%Q"}}`, paramsPath + "/event_timestamp_locator/format: format \"%Q\": unsupported directive"},
		{`{tables_path = "//logs"; system_timestamp_locator = {attr = key}}`, paramsPath + "/system_timestamp_locator/attr: unknown key"},
		{`{tables_path = "//logs"; range_row_count = 0}`, paramsPath + "/range_row_count: 0 is out of range"},
	} {
		_, err := spec.ParsePipeline([]byte(pipelineWith(c.params)))
		if assert.Error(t, err, c.params) {
			assert.Contains(t, err.Error(), c.want, c.params)
		}
	}
}

// TestStaticTableDynamicParams: every dynamic parameter of Flow's source with its default; bad
// values and unknown keys reported with their paths; event bounds admit tables.
func TestStaticTableDynamicParams(t *testing.T) {
	parse := func(text string) (*SourceDynamic, []string) {
		n, err := yson.Decode([]byte(text))
		require.NoError(t, err)
		var w yson.Walker
		f := w.Fields(n, "parameters")
		d := parseSourceDynamic(f, &SourceParams{}).(*SourceDynamic)
		f.Close()
		var problems []string
		for _, p := range w.Problems() {
			problems = append(problems, p.String())
		}
		return d, problems
	}
	d, problems := parse(`{}`)
	assert.Empty(t, problems)
	assert.Equal(t, SourceDynamic{DesiredTableProcessTime: time.Hour, MaxRowsPerSecond: 1e12, MaxBytesPerSecond: 1e12,
		MaxPartitionCount: 10000, DesiredPartitionProcessTime: 10 * time.Minute, DesiredPartitionRowsPerSecond: 1000,
		DesiredPartitionBytesPerSecond: 1e6, ReadTimeout: 5 * time.Minute, UnavailableThreshold: 5 * time.Minute,
		ThrottlerPeriod: 10 * time.Second}, *d)
	assert.True(t, d.admits(hour(3)))

	d, problems = parse(`{min_event_timestamp = "2026-12-06T02:00:00Z"; max_event_timestamp = 1796529600000; max_rows_per_second = 500}`)
	assert.Empty(t, problems)
	assert.Equal(t, hour(4), d.MaxEventTimestamp)
	assert.Equal(t, 500.0, d.MaxRowsPerSecond)
	assert.False(t, d.admits(hour(1)))
	assert.True(t, d.admits(hour(2)))
	assert.True(t, d.admits(hour(4)))
	assert.False(t, d.admits(hour(5)))

	_, problems = parse(`{min_event_timestamp = "soon"; max_rows_per_second = 0; max_partition_count = 0; speed = 1}`)
	assert.Equal(t, 4, len(problems), strings.Join(problems, "\n"))
	assert.Contains(t, strings.Join(problems, "\n"), "parameters/speed: unknown key")
	assert.Contains(t, strings.Join(problems, "\n"), "parameters/min_event_timestamp: \"soon\" is not an iso8601 time")
	assert.Contains(t, strings.Join(problems, "\n"), "parameters/max_rows_per_second: must be positive")
}

// TestStaticTableDynamicParamsInSpec: the spec checks a source stream's dynamic parameters
// with the class's parser and names their path.
func TestStaticTableDynamicParamsInSpec(t *testing.T) {
	config := func(dyn string) []byte {
		return []byte(fmt.Sprintf(`{path = "//p"; spec = %s; dynamic_spec = {computations = {read = {source_streams = {logs = {parameters = %s}}}}}}`,
			pipelineWith(`{tables_path = "//logs"}`), dyn))
	}
	_, err := spec.ParseConfig(config(`{max_rows_per_second = 100; min_event_timestamp = "2026-12-06T00:00:00Z"}`))
	require.NoError(t, err)
	_, err = spec.ParseConfig(config(`{max_rows_per_second = -1; max_speed = 1}`))
	require.Error(t, err)
	for _, want := range []string{
		"dynamic_spec/computations/read/source_streams/logs/parameters/max_rows_per_second: must be positive",
		"dynamic_spec/computations/read/source_streams/logs/parameters/max_speed: unknown key",
	} {
		assert.Contains(t, err.Error(), want)
	}
}
