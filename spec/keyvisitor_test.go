package spec

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKeyVisitorStreams: the dynamic parameters of a key visitor stream carry Flow's defaults
// (period 1d, buffer_row_limit 5K, max_scan_rows_per_iteration 10K, background_fill_period
// 500ms, catchup_lag_threshold 1m, catchup_speedup_multiplier 1.2); set ones are read
// strictly, every error named by its YSON path and all reported at once.
func TestKeyVisitorStreams(t *testing.T) {
	d, err := ParseDynamic([]byte(`{computations = {c = {key_visitor_streams = {v = {}; w = {parameters = {period = 4000; buffer_row_limit = 100; max_scan_rows_per_iteration = 200}}}}}}`))
	require.NoError(t, err)
	assert.Equal(t, DefaultDynamicKeyVisitor(), *d.Computations["c"].KeyVisitorStreams["v"])
	assert.Equal(t, DynamicKeyVisitor{Period: 4 * time.Second, BufferRowLimit: 100, MaxScanRowsPerIteration: 200,
		BackgroundFillPeriod: 500 * time.Millisecond, CatchupLagThreshold: time.Minute, CatchupSpeedupMultiplier: 1.2}, *d.Computations["c"].KeyVisitorStreams["w"])
	assert.Equal(t, DynamicKeyVisitor{Period: 24 * time.Hour, BufferRowLimit: 5000, MaxScanRowsPerIteration: 10000,
		BackgroundFillPeriod: 500 * time.Millisecond, CatchupLagThreshold: time.Minute, CatchupSpeedupMultiplier: 1.2}, DefaultDynamicKeyVisitor())

	_, err = ParseDynamic([]byte(`{computations = {c = {key_visitor_streams = {
		a = {parameters = {period = 0}};
		b = {parameters = {buffer_row_limit = 0; catchup_speedup_multiplier = 0.5}};
		c = {parametrs = {}};
	}}}}`))
	require.Error(t, err)
	for _, path := range []string{
		"computations/c/key_visitor_streams/a/parameters/period", "computations/c/key_visitor_streams/b/parameters/buffer_row_limit",
		"computations/c/key_visitor_streams/b/parameters/catchup_speedup_multiplier", "computations/c/key_visitor_streams/c/parametrs",
	} {
		assert.Contains(t, err.Error(), path)
	}
}

// TestVisitOnlyKeyVisitors: a transform computation without input streams but with key visitor
// streams (visit-only) parses with nothing noted as unsupported, also when its visitor names
// external states (external_names); an external name that is not an external state of the
// computation, or a first group_by_schema column that is not the uint64 hash, is an error at
// that name's path.
func TestVisitOnlyKeyVisitors(t *testing.T) {
	doc := func(names, firstType string) string {
		return `{path = "//p"; spec = {computations = {visitor = {
			computation_class_name = "NYT::NFlow::TProcessFunctionComputation"; processing_function = "f";
			group_by_schema = [{name = "hash"; type = "` + firstType + `"; required = %true}; {name = "user"; type = "string"; required = %true}];
			key_visitor_streams = {v = {names = ["count"]; external_names = ` + names + `}};
			external_state_managers = {"/totals" = {external_state_manager_class_name = "NYT::NFlow::TSimpleExternalStateManager"; parameters = {path = "//t"}}};
			parameters = {internal_states = ["count"]};
		}}}}`
	}
	cfg, err := ParseConfig([]byte(doc(`["/totals"]`, "uint64")))
	require.NoError(t, err)
	assert.Empty(t, cfg.Notes.Unsupported)
	assert.Equal(t, []string{"/totals"}, cfg.Spec.Computations["visitor"].KeyVisitors["v"].ExternalNames)
	assert.Empty(t, cfg.Spec.Computations["visitor"].InputStreamIDs)

	_, err = ParseConfig([]byte(doc(`["/totals"; "/nope"]`, "uint64")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `spec/computations/visitor/key_visitor_streams/v/external_names/1: "/nope" is not an external state`)
	assert.NotContains(t, err.Error(), "external_names/0")

	_, err = ParseConfig([]byte(doc(`["/totals"]`, "string")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec/computations/visitor/key_visitor_streams/v/external_names/0: visits of external state keys need a uint64 first group_by_schema column")
}
