package spec

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stateJoinPipeline: computation one (keyed by [hash, user]) keeps internal state; two,
// keyed like one, joins with the state_joiners block joiners; dyn is two's dynamic block.
func stateJoinPipeline(joiners, dyn string) string {
	return fmt.Sprintf(`{
    path = "//p";
    spec = {
    computations = {
        src = {computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
               source_streams = {s = {source_class_name = "NYT::NFlow::TRandomSource"; parameters = {finite = %%true}}};
               output_stream_ids = ["a"; "b"]};
        one = {computation_class_name = "NYT::NFlow::TProcessFunctionComputation"; processing_function = "F";
               group_by_schema = [{name = "hash"; type = "uint64"; required = %%true; expression = "farm_hash(user)"}; {name = "user"; type = "string"; required = %%true}];
               input_stream_ids = ["a"]};
        two = {computation_class_name = "NYT::NFlow::TProcessFunctionComputation"; processing_function = "F";
               group_by_schema = [{name = "hash"; type = "uint64"; required = %%true; expression = "farm_hash(user)"}; {name = "user"; type = "string"; required = %%true}];
               input_stream_ids = ["b"];
               state_joiners = %s};
    };
    streams = {a = {schema = [{name = user; type = string; required = %%true}]}; b = {schema = [{name = user; type = string; required = %%true}]}};
    };
    dynamic_spec = {computations = {two = %s}};
}`, joiners, dyn)
}

// TestStateJoiners: state_joiners parse into Computation.StateJoinerSpecs with Flow's keys and
// defaults and run (no "not supported" note); their dynamic cache{ttl} (and that of
// external_state_joiners' parameters) parses; a missing or unkeyed target, the computation
// itself, a key schema unlike the target's group_by_schema, a key provider stream that is not
// an input, and a negative ttl are errors with their paths; auto_preload = %false is refused.
func TestStateJoiners(t *testing.T) {
	cfg, err := ParseConfig([]byte(stateJoinPipeline(`{"/seen" = {computation_id = one; state_name = count; join_on = {key_provider_streams = [b]}};
            "/o" = {computation_id = one; state_name = count; join_on = {key_schema_override = [{name = "hash"; type = "uint64"; expression = "farm_hash(user)"}; {name = "user"; type = "string"}]}}}`,
		`{state_joiners = {"/seen" = {cache = {ttl = 60000}}}; external_state_joiners = {"/x" = {parameters = {cache = {ttl = "5s"}}}}}`)))
	require.NoError(t, err)
	two := cfg.Spec.Computations["two"]
	seen := two.StateJoinerSpecs["/seen"]
	require.NotNil(t, seen)
	assert.Equal(t, "one", seen.ComputationID)
	assert.Equal(t, "count", seen.StateName)
	assert.Equal(t, []string{"b"}, seen.KeyProviderStreams)
	assert.True(t, seen.AutoPreload)
	assert.False(t, seen.Override())
	assert.True(t, two.StateJoinerSpecs["/o"].Override())
	assert.Empty(t, cfg.Notes.Unsupported)
	dyn := cfg.Dynamic.Computations["two"]
	assert.Equal(t, time.Minute, dyn.StateJoiners["/seen"].TTL)
	assert.Equal(t, 5*time.Second, dyn.ExternalStateJoiners["/x"].TTL)

	cfg, err = ParseConfig([]byte(stateJoinPipeline(`{"/s" = {computation_id = one; state_name = count; auto_preload = %false}}`, "{}")))
	require.NoError(t, err)
	require.Len(t, cfg.Notes.Unsupported, 1)
	assert.Equal(t, "spec/computations/two/state_joiners//s/auto_preload", cfg.Notes.Unsupported[0].Path)

	for _, c := range []struct{ joiners, dyn, want string }{
		{`{"/s" = {computation_id = nobody; state_name = count}}`, "{}", `spec/computations/two/state_joiners//s/computation_id: computation "nobody" does not exist`},
		{`{"/s" = {computation_id = two; state_name = count}}`, "{}", `spec/computations/two/state_joiners//s/computation_id: a state joiner reads another computation's state; "two" is this computation`},
		{`{"/s" = {computation_id = src; state_name = count}}`, "{}", `spec/computations/two/state_joiners//s/computation_id: computation "src" is not a keyed transform computation`},
		{`{"/s" = {state_name = count}}`, "{}", `spec/computations/two/state_joiners//s/computation_id: required`},
		{`{"/s" = {computation_id = one; state_name = count; join_on = {key_schema_override = [{name = "user"; type = "string"}]}}}`, "{}",
			`spec/computations/two/state_joiners//s/join_on/key_schema_override: [user:string] must equal the group_by_schema of computation "one" ([hash:uint64=farm_hash(user), user:string])`},
		{`{"/s" = {computation_id = one; state_name = count; join_on = {key_provider_streams = [a]}}}`, "{}",
			`spec/computations/two/state_joiners//s/join_on/key_provider_streams/0: stream "a" is not an input or timer stream of this computation`},
		{`{"/s" = {computation_id = one; state_name = count; extra = 1}}`, "{}", `spec/computations/two/state_joiners//s/extra`},
		{`{"/s" = {computation_id = one; state_name = count}}`, `{state_joiners = {"/s" = {cache = {ttl = -5}}}}`, `dynamic_spec/computations/two/state_joiners//s/cache/ttl`},
	} {
		_, err := ParseConfig([]byte(stateJoinPipeline(c.joiners, c.dyn)))
		if assert.Error(t, err, c.want) {
			assert.Contains(t, err.Error(), c.want)
		}
	}
}
