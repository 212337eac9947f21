package httpsink

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/yson"
)

// dynamicOf parses a dynamic parameters map as the spec does: the class's parser, then Close
// for unknown keys.
func dynamicOf(t *testing.T, text string) (*Dynamic, []string) {
	t.Helper()
	n, err := yson.Decode([]byte(text))
	require.NoError(t, err)
	var w yson.Walker
	f := w.Fields(n, "parameters")
	d := parseDynamic(f, &Params{}).(*Dynamic)
	f.Close()
	var problems []string
	for _, p := range w.Problems() {
		problems = append(problems, p.String())
	}
	return d, problems
}

// TestParseDynamic: every dynamic parameter of Flow's HTTP sink, with its default; bad
// values and unknown keys are reported with their paths.
func TestParseDynamic(t *testing.T) {
	d, problems := dynamicOf(t, `{}`)
	assert.Empty(t, problems)
	assert.Equal(t, DefaultDynamic(), *d)
	assert.Equal(t, Dynamic{
		RequestTimeout: time.Minute, AttemptTimeout: 10 * time.Second,
		RetryInitialDelay: time.Second, RetryMinimumDelay: 100 * time.Millisecond, RetryMaximumDelay: 30 * time.Second,
		RetryMultiplier: 2, RetryJitterRatio: 0.2, MaxAttemptCount: 5,
	}, *d)

	d, problems = dynamicOf(t, `{request_timeout = "2m"; attempt_timeout = 1500; retry_initial_delay = "200ms";
		retry_minimum_delay = "10ms"; retry_maximum_delay = "5s"; retry_multiplier = 3; retry_jitter_ratio = 0.5;
		max_attempt_count = 100}`)
	assert.Empty(t, problems)
	assert.Equal(t, Dynamic{
		RequestTimeout: 2 * time.Minute, AttemptTimeout: 1500 * time.Millisecond,
		RetryInitialDelay: 200 * time.Millisecond, RetryMinimumDelay: 10 * time.Millisecond, RetryMaximumDelay: 5 * time.Second,
		RetryMultiplier: 3, RetryJitterRatio: 0.5, MaxAttemptCount: 100,
	}, *d)

	_, problems = dynamicOf(t, `{request_timeout = 0; attempt_timeout = "x"; retry_minimum_delay = "1m";
		retry_multiplier = 0.5; retry_jitter_ratio = 1.5; max_attempt_count = 0; retries = 3}`)
	assert.Equal(t, []string{
		`parameters/attempt_timeout: duration "x": bad value: want milliseconds or a string like "100ms", "1s", "5m"`,
		"parameters/max_attempt_count: 0 is out of range [1, 100]",
		"parameters/request_timeout: must be positive, got 0s",
		"parameters/retries: unknown key",
		"parameters/retry_jitter_ratio: must lie in [0, 1], got 1.5",
		"parameters/retry_minimum_delay: 1m0s is above retry_maximum_delay 30s",
		"parameters/retry_multiplier: must be a finite number ≥ 1, got 0.5",
	}, problems)
}

// TestRetryDelay: the delays grow by the multiplier from the initial delay, stay within the
// minimum and the maximum, and the jitter moves them by at most the ratio.
func TestRetryDelay(t *testing.T) {
	d := DefaultDynamic()
	for _, c := range []struct {
		retry int
		u     float64
		want  time.Duration
	}{
		{1, 0.5, time.Second},
		{2, 0.5, 2 * time.Second},
		{3, 0.5, 4 * time.Second},
		{5, 0.5, 16 * time.Second},
		{6, 0.5, 30 * time.Second}, // 32s, capped
		{40, 0.5, 30 * time.Second},
		{1, 0, 800 * time.Millisecond}, // -20%
		{1, 1, 1200 * time.Millisecond},
		{6, 1, 30 * time.Second}, // the jitter does not pass the maximum
		{6, 0, 24 * time.Second},
	} {
		assert.Equal(t, c.want, d.RetryDelay(c.retry, c.u), "retry %d, u %v", c.retry, c.u)
	}
	d.RetryInitialDelay = 10 * time.Millisecond
	assert.Equal(t, 100*time.Millisecond, d.RetryDelay(1, 0), "raised to the minimum")
	d.RetryJitterRatio = 0
	d.RetryMultiplier = 1
	assert.Equal(t, 100*time.Millisecond, d.RetryDelay(30, 0.9))
}
