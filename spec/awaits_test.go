package spec

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAwaitsWatermarks: a pipeline awaits watermarks with an event_time or system_time timer
// stream, input_ordering or watermark_alignment, and not with current_time timers alone or
// none of them.
func TestAwaitsWatermarks(t *testing.T) {
	withStage := func(stage, srcExtra string) string {
		return fmt.Sprintf(`{
    computations = {
        a = {computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
             source_streams = {sa = {source_class_name = "NYT::NFlow::TRandomSource"; parameters = {finite = %%true}}};
             output_stream_ids = ["clicks"]; %s};
        merge = {
            computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
            processing_function = "F";
            group_by_schema = [{name = "hash"; type = "uint64"; required = %%true; expression = "farm_hash(user)"}; {name = "user"; type = "string"; required = %%true}];
            input_stream_ids = ["clicks"];
            %s
        };
    };
    streams = {clicks = {schema = [{name = user; type = string; required = %%true}]}};
}`, srcExtra, stage)
	}
	for _, tc := range []struct {
		name, stage, src string
		want             bool
	}{
		{"none", "", "", false},
		{"current_time timers", `timer_streams = {tick = {time_type = "current_time"}};`, "", false},
		{"event_time timers", `timer_streams = {close = {time_type = "event_time"}};`, "", true},
		{"default timers", `timer_streams = {close = {}};`, "", true},
		{"system_time timers", `timer_streams = {tick = {time_type = "current_time"}; gc = {time_type = "system_time"}};`, "", true},
		{"input_ordering", `input_ordering = {time_type = "event_time"};`, "", true},
		{"alignment", "", `watermark_strategy = {watermark_alignment = {drift_bound = "1m"}};`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePipeline([]byte(withStage(tc.stage, tc.src)))
			require.NoError(t, err)
			assert.Equal(t, tc.want, p.AwaitsWatermarks())
		})
	}
	var none *Pipeline
	assert.False(t, none.AwaitsWatermarks())
}
