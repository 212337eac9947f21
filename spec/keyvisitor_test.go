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
