// A change of the job row's flags wakes the job's loop.

package job

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ytflow/yt-flow/ytstore"
)

// TestSetFlagsWakesTheJob: a change of the job row's flags wakes the job's idle loop (it
// applies them in its next epoch, and completion and draining wait for every job to apply
// them); an unchanged row does not.
func TestSetFlagsWakesTheJob(t *testing.T) {
	r := eventRunner(nil)
	woken := func() bool {
		select {
		case <-r.inbox.notify:
			return true
		default:
			return false
		}
	}
	r.setFlags(ytstore.Job{JobID: "j"})
	assert.False(t, woken(), "no change")
	r.setFlags(ytstore.Job{JobID: "j", Draining: true})
	assert.True(t, woken(), "draining set")
	assert.True(t, r.draining.Load())
	r.setFlags(ytstore.Job{JobID: "j", Draining: true})
	assert.False(t, woken(), "no change")
	r.setFlags(ytstore.Job{JobID: "j", Draining: true, Retiring: true})
	assert.True(t, woken(), "retiring set")
	assert.True(t, r.retiring.Load())
}
