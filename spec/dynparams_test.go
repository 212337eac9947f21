package spec

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

type dynTestParams struct{ Timeout time.Duration }

func init() {
	registry.Register(registry.Class{
		Name: "dyn_test_sink", Role: registry.Sink, Guarantee: registry.AtLeastOnce, Kind: registry.AsyncSink, AtMostOnce: true,
		Parse: func(f *yson.Fields) any { return nil },
		ParseDynamic: func(f *yson.Fields, _ any) any {
			return &dynTestParams{Timeout: f.Duration("request_timeout", time.Second)}
		},
	})
}

func TestDynamicParams(t *testing.T) {
	c, ok := registry.Lookup(registry.Sink, "dyn_test_sink")
	require.True(t, ok)
	got, err := DynamicParams(c, nil, map[string]any{"request_timeout": int64(2500), "at_most_once_strategy": map[string]any{}}, "p")
	require.NoError(t, err)
	assert.Equal(t, &dynTestParams{Timeout: 2500 * time.Millisecond}, got)
	got, err = DynamicParams(c, nil, nil, "p")
	require.NoError(t, err)
	assert.Equal(t, &dynTestParams{Timeout: time.Second}, got, "defaults when nothing is set")

	_, err = DynamicParams(c, nil, map[string]any{"request_timout": int64(1)}, "p")
	require.EqualError(t, err, "p/request_timout: unknown key (did you mean \"request_timeout\"?)")

	// In a runner config the dynamic spec's parameters are checked against the static class.
	_, err = ParseConfig([]byte(`{path = "//p"; spec = {computations = {c = {
		computation_class_name = transform; processing_function = F;
		group_by_schema = [{name = h; type = uint64}]; input_stream_ids = [i]; output_stream_ids = [o];
		sinks = {s = {sink_class_name = dyn_test_sink; input_stream_ids = [o]}};
	}; src = {computation_class_name = passthrough; group_by_schema = [{name = h; type = uint64}]; input_stream_ids = [x]; output_stream_ids = [i]}};
	streams = {i = {schema = [{name = h; type = uint64}]}; o = {schema = [{name = h; type = uint64}]}; x = {schema = [{name = h; type = uint64}]}}};
	dynamic_spec = {computations = {c = {sinks = {s = {parameters = {request_timeout = "x"}}}}}}}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dynamic_spec/computations/c/sinks/s/parameters/request_timeout")
}
