package httpsink

import (
	"math"
	"time"

	"github.com/ytflow/yt-flow/yson"
)

// Dynamic are the dynamic parameters of TAsyncHttpSink (names and defaults of Flow's HTTP
// extension). The zero value is not usable: take DefaultDynamic or what parseDynamic returns.
type Dynamic struct {
	// RequestTimeout bounds the delivery of one message, all attempts and the delays between
	// them included (request_timeout, default 1m, > 0).
	RequestTimeout time.Duration
	// AttemptTimeout bounds one attempt: connecting, redirects, sending the body and reading
	// the response (attempt_timeout, default 10s, > 0).
	AttemptTimeout time.Duration
	// RetryInitialDelay is the delay before the first retry (retry_initial_delay, default 1s);
	// each further retry waits RetryMultiplier times longer (retry_multiplier, default 2.0,
	// ≥ 1), within [RetryMinimumDelay, RetryMaximumDelay] (retry_minimum_delay, default
	// 100ms; retry_maximum_delay, default 30s).
	RetryInitialDelay, RetryMinimumDelay, RetryMaximumDelay time.Duration
	RetryMultiplier                                         float64
	// RetryJitterRatio spreads each delay uniformly over ±ratio of it (retry_jitter_ratio,
	// default 0.2, in [0, 1]).
	RetryJitterRatio float64
	// MaxAttemptCount is how many attempts one message gets (max_attempt_count, default 5,
	// 1–100).
	MaxAttemptCount int64
}

// DefaultDynamic returns the dynamic parameters a sink without a dynamic spec runs with.
func DefaultDynamic() Dynamic {
	return Dynamic{
		RequestTimeout:    time.Minute,
		AttemptTimeout:    10 * time.Second,
		RetryInitialDelay: time.Second,
		RetryMinimumDelay: 100 * time.Millisecond,
		RetryMaximumDelay: 30 * time.Second,
		RetryMultiplier:   2,
		RetryJitterRatio:  0.2,
		MaxAttemptCount:   5,
	}
}

// parseDynamic reads the dynamic parameters map: every key Flow defines, with its default.
func parseDynamic(f *yson.Fields, _ any) any {
	def := DefaultDynamic()
	d := &Dynamic{
		RequestTimeout:    f.Duration("request_timeout", def.RequestTimeout),
		AttemptTimeout:    f.Duration("attempt_timeout", def.AttemptTimeout),
		RetryInitialDelay: f.Duration("retry_initial_delay", def.RetryInitialDelay),
		RetryMinimumDelay: f.Duration("retry_minimum_delay", def.RetryMinimumDelay),
		RetryMaximumDelay: f.Duration("retry_maximum_delay", def.RetryMaximumDelay),
		RetryMultiplier:   f.Float("retry_multiplier", def.RetryMultiplier),
		RetryJitterRatio:  f.Float("retry_jitter_ratio", def.RetryJitterRatio),
		MaxAttemptCount:   f.Int("max_attempt_count", def.MaxAttemptCount, 1, 100),
	}
	positive := func(key string, v *time.Duration, def time.Duration) {
		if *v <= 0 {
			f.Errorf(key, "must be positive, got %v", *v)
			*v = def
		}
	}
	positive("request_timeout", &d.RequestTimeout, def.RequestTimeout)
	positive("attempt_timeout", &d.AttemptTimeout, def.AttemptTimeout)
	for _, k := range []struct {
		key string
		v   *time.Duration
	}{{"retry_initial_delay", &d.RetryInitialDelay}, {"retry_minimum_delay", &d.RetryMinimumDelay}, {"retry_maximum_delay", &d.RetryMaximumDelay}} {
		if *k.v < 0 {
			f.Errorf(k.key, "must not be negative, got %v", *k.v)
			*k.v = 0
		}
	}
	if d.RetryMinimumDelay > d.RetryMaximumDelay {
		f.Errorf("retry_minimum_delay", "%v is above retry_maximum_delay %v", d.RetryMinimumDelay, d.RetryMaximumDelay)
	}
	if math.IsNaN(d.RetryMultiplier) || d.RetryMultiplier < 1 || math.IsInf(d.RetryMultiplier, 0) {
		f.Errorf("retry_multiplier", "must be a finite number ≥ 1, got %v", d.RetryMultiplier)
		d.RetryMultiplier = def.RetryMultiplier
	}
	if math.IsNaN(d.RetryJitterRatio) || d.RetryJitterRatio < 0 || d.RetryJitterRatio > 1 {
		f.Errorf("retry_jitter_ratio", "must lie in [0, 1], got %v", d.RetryJitterRatio)
		d.RetryJitterRatio = def.RetryJitterRatio
	}
	return d
}

// RetryDelay is the wait before retry number retry (1: after the first failed attempt):
// RetryInitialDelay·RetryMultiplier^(retry-1) within [RetryMinimumDelay, RetryMaximumDelay],
// moved by the jitter — u, uniform in [0, 1), picks the point in ±RetryJitterRatio of it —
// and kept within the bounds. Pure: the caller draws u.
func (d *Dynamic) RetryDelay(retry int, u float64) time.Duration {
	lo, hi := float64(d.RetryMinimumDelay), float64(d.RetryMaximumDelay)
	clamp := func(v float64) float64 { return max(lo, min(hi, v)) }
	base := clamp(float64(d.RetryInitialDelay) * math.Pow(d.RetryMultiplier, float64(max(retry-1, 0))))
	return time.Duration(clamp(base * (1 + d.RetryJitterRatio*(2*u-1))))
}
