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
