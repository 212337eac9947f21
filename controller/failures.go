// Failing process functions in the controller log: the job statuses that name one.

package controller

import (
	"regexp"
	"sort"
	"strings"

	"github.com/ytflow/yt-flow/ytstore"
)

// attemptRE matches the attempt count of a process failure in a job status error.
var attemptRE = regexp.MustCompile(`attempt [0-9]+`)

// FailureReports returns the controller log lines for the job statuses that report a failing
// process function (ytstore.ProcessFailureMark: the error names computation, partition, key,
// message id, attempt and error) not reported before, and the reports to remember: a job's
// failure is logged when it starts and again when another message or error fails, not at
// every retried attempt. prev maps job id to the failure last reported (attempt left out).
// Pure: the cycle driver logs the lines.
func FailureReports(prev map[string]string, statuses []ytstore.JobStatus) (lines []string, next map[string]string) {
	next = map[string]string{}
	for _, st := range statuses {
		if st.State != ytstore.JobRunning || !strings.Contains(st.Error, ytstore.ProcessFailureMark) {
			continue
		}
		key := attemptRE.ReplaceAllString(st.Error, "attempt")
		next[st.JobID] = key
		if prev[st.JobID] != key {
			lines = append(lines, st.Error)
		}
	}
	sort.Strings(lines)
	return lines, next
}
