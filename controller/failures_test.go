package controller

import (
	"reflect"
	"testing"

	"github.com/ytflow/yt-flow/ytstore"
)

// TestFailureReports: a job's failing process function is reported once when it starts
// failing, not again at the next attempts, again when another message fails, and forgotten
// once the job's status no longer reports it (a later failure is reported anew).
func TestFailureReports(t *testing.T) {
	fail := func(job, msg string, attempt int) ytstore.JobStatus {
		return ytstore.JobStatus{JobID: job, State: ytstore.JobRunning,
			Error: "job " + job + " (computation count, partition p0): process function failed on key [1 w], message \"" + msg + "\" (1 messages), attempt " + string(rune('0'+attempt)) + ": bad"}
	}
	ok := ytstore.JobStatus{JobID: "j2", State: ytstore.JobRunning}
	other := ytstore.JobStatus{JobID: "j3", State: ytstore.JobRunning, Error: "read source q: timeout"}
	steps := []struct {
		statuses []ytstore.JobStatus
		want     []string
	}{
		{[]ytstore.JobStatus{fail("j1", "m1", 1), ok, other}, []string{fail("j1", "m1", 1).Error}},
		{[]ytstore.JobStatus{fail("j1", "m1", 2), ok}, nil},
		{[]ytstore.JobStatus{fail("j1", "m1", 5)}, nil},
		{[]ytstore.JobStatus{fail("j1", "m2", 1), fail("j2", "m9", 1)}, []string{fail("j1", "m2", 1).Error, fail("j2", "m9", 1).Error}},
		{[]ytstore.JobStatus{ok}, nil},
		{[]ytstore.JobStatus{fail("j1", "m2", 3)}, []string{fail("j1", "m2", 3).Error}},
		{[]ytstore.JobStatus{{JobID: "j1", State: ytstore.JobFailed, Error: fail("j1", "m2", 3).Error}}, nil},
	}
	var prev map[string]string
	for i, s := range steps {
		var got []string
		got, prev = FailureReports(prev, s.statuses)
		if !reflect.DeepEqual(got, s.want) {
			t.Errorf("step %d: got %q, want %q", i, got, s.want)
		}
	}
}
