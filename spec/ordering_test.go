package spec

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// orderingPipeline: two swift sources write the streams clicks and views (or, with oneWriter,
// one source writes both), which the transform merge reads with input_ordering ordering.
func orderingPipeline(ordering string, oneWriter bool) string {
	src := func(id, outs string) string {
		return fmt.Sprintf(`{computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
               source_streams = {%s = {source_class_name = "NYT::NFlow::TRandomSource"; parameters = {finite = %%true}}};
               output_stream_ids = %s}`, id, outs)
	}
	a, b := src("sa", `["clicks"]`), src("sb", `["views"; "other"]`)
	if oneWriter {
		a, b = src("sa", `["clicks"; "views"]`), src("sb", `["other"]`)
	}
	return fmt.Sprintf(`{
    computations = {
        a = %s;
        b = %s;
        merge = {
            computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
            processing_function = "F";
            group_by_schema = [{name = "hash"; type = "uint64"; required = %%true; expression = "farm_hash(user)"}; {name = "user"; type = "string"; required = %%true}];
            input_stream_ids = ["clicks"; "views"];
            input_ordering = %s;
        };
    };
    streams = {clicks = {schema = [{name = user; type = string; required = %%true}]}; views = {schema = [{name = user; type = string; required = %%true}]};
               other = {schema = [{name = user; type = string; required = %%true}]}};
}`, a, b, ordering)
}

// TestInputOrdering: input_ordering parses with Flow's keys (time_type = event_time, the default
// and only value; stream_delays by input stream) and runs (no "not supported" note); a delay
// of a stream that is not an input, a negative delay, another time_type and an unknown key are
// errors with their YSON paths; streams of one writer are refused as not supported yet.
func TestInputOrdering(t *testing.T) {
	pl, err := ParsePipeline([]byte(orderingPipeline(`{time_type = "event_time"; stream_delays = {views = "5s"}}`, false)))
	require.NoError(t, err)
	assert.Equal(t, &InputOrdering{TimeType: "event_time", StreamDelays: map[string]time.Duration{"views": 5 * time.Second}}, pl.Computations["merge"].InputOrdering)
	assert.Empty(t, pl.Notes.Unsupported)
	pl, err = ParsePipeline([]byte(orderingPipeline(`{}`, false)))
	require.NoError(t, err)
	assert.Equal(t, &InputOrdering{TimeType: "event_time"}, pl.Computations["merge"].InputOrdering)

	_, err = ParsePipeline([]byte(orderingPipeline(`{time_type = "system_time"; stream_delays = {nope = 1000; views = -5}; order = 1}`, false)))
	require.Error(t, err)
	for _, want := range []string{
		`computations/merge/input_ordering/time_type`,
		`computations/merge/input_ordering/stream_delays/nope: stream "nope" is not an input stream of this computation`,
		`computations/merge/input_ordering/stream_delays/views: duration -5: bad value: negative`,
		`computations/merge/input_ordering/order`,
	} {
		assert.Contains(t, err.Error(), want)
	}

	pl, err = ParsePipeline([]byte(orderingPipeline(`{}`, true)))
	require.NoError(t, err)
	require.Len(t, pl.Notes.Unsupported, 1)
	assert.Equal(t, "computations/merge/input_ordering", pl.Notes.Unsupported[0].Path)
	assert.Contains(t, pl.Notes.Unsupported[0].Message, "a writes clicks and views")
}
