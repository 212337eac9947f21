package controller_test

import (
	"testing"
	"time"

	"github.com/ytflow/yt-flow/job"
)

// TestWorkersNotifiedOfLayoutChanges runs a worker that never polls the layout on its own
// (PollPeriod of an hour, longer than the test may run): its jobs start and process input
// only because the controller tells it, after writing the layout, to read it now.
func TestWorkersNotifiedOfLayoutChanges(t *testing.T) {
	e := startEventTimeEnv(t, eventTimeSpec, 1, func(c *job.Config) { c.PollPeriod = time.Hour })
	e.write("a", t0, 0)
	e.waitFor("the worker started its jobs and processed the row", func() bool {
		_, ok := e.rows("//tmp/et/seen")["a"]
		return ok
	})
}
