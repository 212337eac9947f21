package job

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/connectors/registry"
	_ "github.com/ytflow/yt-flow/connectors/servicelog"
	_ "github.com/ytflow/yt-flow/connectors/statictable"
	"github.com/ytflow/yt-flow/spec"
)

// TestSourceUnavailableThreshold: with the injected clock, reads failing for less than the
// source's unavailable_threshold are transient failures; from the threshold on the source is
// reported unavailable, with how long and the threshold; a successful read ends the run, and
// a threshold of 0 never reports it. The static table and service log sources' dynamic
// unavailable_threshold reaches the runtime (connector.Unavailability).
func TestSourceUnavailableThreshold(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	s := &sourceState{id: "logs"}
	for _, c := range []struct {
		at       time.Duration
		want     string
		unavail  bool
		succeeds bool
	}{
		{0, "read source logs", false, false},
		{time.Minute, "read source logs", false, false},
		{5 * time.Minute, "source logs unavailable: reads failing for 5m0s (unavailable_threshold 5m0s)", true, false},
		{6 * time.Minute, "source logs unavailable: reads failing for 6m0s (unavailable_threshold 5m0s)", true, true},
		{7 * time.Minute, "read source logs", false, false}, // a new run after the success
		{11 * time.Minute, "read source logs", false, false},
		{12 * time.Minute, "source logs unavailable: reads failing for 5m0s (unavailable_threshold 5m0s)", true, false},
	} {
		what, unavailable := s.readFailure(t0.Add(c.at), 5*time.Minute)
		assert.Equal(t, c.want, what, "at %v", c.at)
		assert.Equal(t, c.unavail, unavailable, "at %v", c.at)
		if c.succeeds {
			s.readSucceeded()
		}
	}
	never := &sourceState{id: "q"}
	never.readFailure(t0, 0)
	_, unavailable := never.readFailure(t0.Add(24*time.Hour), 0)
	assert.False(t, unavailable, "no threshold")

	for _, class := range []string{"NYT::NFlow::NStaticTableConnector::TSource", "NYT::NFlow::TServiceLogSource"} {
		c, ok := registry.Lookup(registry.Source, class)
		require.True(t, ok, class)
		dyn, err := spec.DynamicParams(c, nil, map[string]any{"unavailable_threshold": int64(90000)}, "d")
		require.NoError(t, err, class)
		u, ok := dyn.(connector.Unavailability)
		require.True(t, ok, class)
		assert.Equal(t, 90*time.Second, u.UnavailableAfter(), class)
		r := &runner{dynEntities: []*dynEntity{{id: "s", current: dyn}}}
		assert.Equal(t, 90*time.Second, r.unavailableAfter("s"), class)
		assert.Zero(t, r.unavailableAfter("other"))
	}
}
