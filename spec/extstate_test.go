package spec

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// extStatePipeline has two keyed computations whose external states are a and b.
func extStatePipeline(a, b string) string {
	comp := func(in, state string) string {
		return fmt.Sprintf(`{
            computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
            processing_function = "F";
            group_by_schema = [{name = "hash"; type = "uint64"; required = %%true; expression = "farm_hash(user)"}; {name = "user"; type = "string"; required = %%true}];
            input_stream_ids = [%q];
            external_state_managers = %s;
        }`, in, state)
	}
	return fmt.Sprintf(`{
    computations = {
        src = {computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
               source_streams = {s = {source_class_name = "NYT::NFlow::TRandomSource"; parameters = {finite = %%true}}};
               output_stream_ids = ["a"; "b"]};
        one = %s;
        two = %s;
    };
    streams = {a = {schema = [{name = user; type = string; required = %%true}]}; b = {schema = [{name = user; type = string; required = %%true}]}};
}`, comp("a", a), comp("b", b))
}

// TestExternalStateManagers: TSimpleExternalStateManager and TSimpleExternalStateJoiner
// entries parse into Computation.ExternalStates and run (no "not supported" note); a joiner
// may read a table a manager writes; a table claimed by two managers, a name that is both a
// manager and a joiner, an unknown class, a missing path and a bad name are errors with their
// paths.
func TestExternalStateManagers(t *testing.T) {
	state := func(name, class, path string) string {
		return fmt.Sprintf(`{%q = {external_state_manager_class_name = %q; parameters = {path = %q}}}`, name, class, path)
	}
	pl, err := ParsePipeline([]byte(extStatePipeline(state("/totals", "NYT::NFlow::TSimpleExternalStateManager", "//t1"), state("/x", "TSimpleExternalStateManager", "//t2"))))
	require.NoError(t, err)
	assert.Equal(t, map[string]*ExternalState{"/totals": {Name: "/totals", Path: "//t1"}}, pl.Computations["one"].ExternalStates)
	assert.Equal(t, "//t2", pl.Computations["two"].ExternalStates["/x"].Path)
	assert.Empty(t, pl.Notes.Unsupported)

	// A joiner reads a table another computation writes: no second writer.
	joiner := `{};
            external_state_joiners = {"/j" = {external_state_joiner_class_name = "NYT::NFlow::TSimpleExternalStateJoiner"; parameters = {path = "//t"}}}`
	pl, err = ParsePipeline([]byte(extStatePipeline(state("/w", "TSimpleExternalStateManager", "//t"), joiner)))
	require.NoError(t, err)
	assert.Equal(t, &ExternalState{Name: "/j", Path: "//t", Joiner: true}, pl.Computations["two"].ExternalStates["/j"])
	assert.Empty(t, pl.Notes.Unsupported)

	for _, c := range []struct{ a, b, want string }{
		{`{"/s" = {external_state_manager_class_name = "TSimpleExternalStateManager"; parameters = {path = "//t"}}};
            external_state_joiners = {"/s" = {external_state_joiner_class_name = "TSimpleExternalStateJoiner"; parameters = {path = "//u"}}}`, "{}",
			`computations/one/external_state_joiners//s: state "/s" is also an external state manager of this computation`},
		{`{}; external_state_joiners = {"/j" = {external_state_joiner_class_name = "TSimpleExternalStateManager"; parameters = {path = "//u"}}}`, "{}",
			`computations/one/external_state_joiners//j/external_state_joiner_class_name: "TSimpleExternalStateManager" is not a known class here (want NYT::NFlow::TSimpleExternalStateJoiner)`},
		{state("/s", "TSimpleExternalStateManager", "//t"), state("/s", "TSimpleExternalStateManager", "//t"),
			"computations/two/external_state_managers//s/parameters/path: State table //t is claimed for writing by both computations/one/external_state_managers//s and computations/two/external_state_managers//s"},
		{state("/s", "TFancyManager", "//t"), "{}", `computations/one/external_state_managers//s/external_state_manager_class_name: "TFancyManager" is not a known class here (want NYT::NFlow::TSimpleExternalStateManager)`},
		{`{"/s" = {external_state_manager_class_name = "TSimpleExternalStateManager"; parameters = {}}}`, "{}", "computations/one/external_state_managers//s/parameters/path: required"},
		{state("s", "TSimpleExternalStateManager", "//t"), "{}", `computations/one/external_state_managers/s: state name "s" must start with /`},
	} {
		_, err := ParsePipeline([]byte(extStatePipeline(c.a, c.b)))
		if assert.Error(t, err) {
			assert.Contains(t, err.Error(), c.want)
		}
	}
}
