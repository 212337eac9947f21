package spec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFailurePolicyParse: failure_policy (a yt-flow extension) defaults to retry; its mode and
// max_attempts are checked strictly, every error named by its YSON path and all reported at
// once; dead_letter and skip are parsed with their max_attempts.
func TestFailurePolicyParse(t *testing.T) {
	d, err := ParseDynamic([]byte(`{computations = {c = {}}}`))
	require.NoError(t, err)
	assert.Equal(t, FailurePolicy{}, d.Computations["c"].FailurePolicy, "absent: retry for ever")

	d, err = ParseDynamic([]byte(`{computations = {c = {failure_policy = {mode = retry}}}}`))
	require.NoError(t, err)
	assert.Equal(t, FailurePolicy{Mode: FailureRetry}, d.Computations["c"].FailurePolicy)

	d, err = ParseDynamic([]byte(`{computations = {c = {failure_policy = {mode = dead_letter; max_attempts = 5}}; s = {failure_policy = {mode = skip}}}}`))
	require.NoError(t, err)
	assert.Equal(t, FailurePolicy{Mode: FailureDeadLetter, MaxAttempts: 5}, d.Computations["c"].FailurePolicy)
	assert.Equal(t, FailurePolicy{Mode: FailureSkip, MaxAttempts: 3}, d.Computations["s"].FailurePolicy, "max_attempts defaults to 3")
	assert.Empty(t, d.Notes.Unsupported)

	_, err = ParseDynamic([]byte(`{computations = {
		a = {failure_policy = {mode = dead_leter}};
		b = {failure_policy = {mode = retry; max_attempts = 2}};
		c = {failure_policy = {mode = skip; max_attempts = 0}};
		d = {failure_policy = {mode = skip; attempts = 2}};
	}}`))
	require.Error(t, err)
	for _, path := range []string{
		"computations/a/failure_policy/mode", "computations/b/failure_policy/max_attempts",
		"computations/c/failure_policy/max_attempts", "computations/d/failure_policy/attempts",
	} {
		assert.Contains(t, err.Error(), path)
	}
}

// TestFailurePolicySwift: dead_letter runs on a swift map (a failing parent is set aside with
// its children) and is noted as unsupported on a swift source, by its path.
func TestFailurePolicySwift(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{
		path = "//p";
		spec = {
			computations = {
				src = {computation_class_name = "NYT::NFlow::TSwiftOrderedSourceComputation"; processing_function = "F";
					source_streams = {r = {source_class_name = "queue"; parameters = {queue_path = "//q"; consumer_path = "//c"}}};
					output_stream_ids = ["x"]};
				relay = {computation_class_name = "NYT::NFlow::TProcessFunctionSwiftMapComputation"; processing_function = "G";
					group_by_schema = [{name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(k)"}; {name = "k"; type = "string"; required = %true}];
					input_stream_ids = ["x"]; output_stream_ids = ["y"]};
			};
			streams = {x = {schema = [{name = "k"; type = "string"; required = %true}]}; y = {schema = [{name = "k"; type = "string"; required = %true}]}};
		};
		dynamic_spec = {computations = {src = {failure_policy = {mode = dead_letter}}; relay = {failure_policy = {mode = dead_letter}}}};
	}`))
	require.NoError(t, err)
	require.Len(t, cfg.Notes.Unsupported, 1, "%v", cfg.Notes.Unsupported)
	assert.Equal(t, "dynamic_spec/computations/src/failure_policy/mode", cfg.Notes.Unsupported[0].Path)
	assert.Equal(t, FailurePolicy{Mode: FailureDeadLetter, MaxAttempts: 3}, cfg.Dynamic.Computations["relay"].FailurePolicy)
}
