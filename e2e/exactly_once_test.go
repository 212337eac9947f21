package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/ytstore"
)

// messages is the input size of the fault tests; E2E_MESSAGES overrides it.
func messages(def int) int {
	if v, err := strconv.Atoi(os.Getenv("E2E_MESSAGES")); err == nil && v > 0 {
		return v
	}
	return def
}

// seed returns the fault schedule seed (E2E_SEED, else random) and logs it so that a
// failing run can be repeated.
func seed(t *testing.T) uint64 {
	s := rand.Uint64() % 1000000
	if v, err := strconv.ParseUint(os.Getenv("E2E_SEED"), 10, 64); err == nil {
		s = v
	}
	t.Logf("fault schedule seed %d (repeat with E2E_SEED=%d)", s, s)
	return s
}

// TestExactlyOnceUnderFaults runs queue → keyed stateful count → table + queue over
// 100k messages while workers are killed, the worker running most count jobs is killed
// so that split must retransmit committed but unacknowledged words (asserted: count drops
// duplicates after it), a worker is frozen past its Lease and resumed, the leader controller
// is killed, and ytlocal itself is killed and restarted. The output must be exact: no loss,
// no duplicate.
func TestExactlyOnceUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e fault test")
	}
	sd := seed(t)
	rng := rand.New(rand.NewPCG(sd, 1))
	c := NewCluster(t)
	// 100 rows per epoch (not 1000) keep the pipeline running for the whole fault schedule:
	// with the defaults it can complete before the later faults find jobs to hit.
	wc := NewWordCount(t, c, "faults", WordCountOptions{Messages: messages(100000), Words: 1000, Tablets: 2, CountPartitions: 4, Seed: sd,
		MaxRowsPerBatch: 100})
	wc.StartPipeline(t)
	ctrl := []*Proc{wc.Controller(t, "controller-a"), wc.Controller(t, "controller-b")}
	workers := map[string]*Proc{}
	var all []*Proc // every worker started, killed ones included, for their logs
	next := 0
	addWorker := func() *Proc {
		name := fmt.Sprintf("worker-%d", next)
		next++
		// Every worker holds its push acknowledgements back for 300ms after commit (a slow
		// network; see job/failpoint.go), so that a receiver killed while words flow has
		// always committed messages its senders still hold.
		p := Start(t, name, "worker", "--proxy", wc.C.Proxy, "--path", wc.Path, "--id", name, "--test-ack-delay", "300ms")
		workers[name] = p
		all = append(all, p)
		return p
	}
	for range 3 {
		addWorker()
	}
	randomWorker := func() (string, *Proc) {
		names := make([]string, 0, len(workers))
		for n := range workers {
			names = append(names, n)
		}
		slices.Sort(names) // a reproducible choice under a seed
		n := names[rng.IntN(len(names))]
		return n, workers[n]
	}
	progress := func() int {
		n := 0
		for _, v := range wc.Counts(t) {
			n += int(v)
		}
		return n
	}
	// Workers exit when they lose their session (e.g. while YTsaurus restarts); like a
	// process supervisor, the test starts a fresh worker for every one that exited.
	var killedLeader *Proc
	supervise := func() {
		for i, p := range ctrl {
			if p.Exited() && p != killedLeader {
				t.Logf("%s exited; restarting it", p.Name)
				ctrl[i] = wc.Controller(t, p.Name+"r")
			}
		}
		for name, p := range workers {
			if p.Exited() {
				t.Logf("%s exited; starting a replacement", name)
				delete(workers, name)
				addWorker()
			}
		}
	}
	waitProgress := func(atLeast int) {
		Eventually(t, 3*time.Minute, func() (bool, string) {
			supervise()
			p := progress()
			return p >= atLeast || wc.State() == "completed", fmt.Sprintf("counted %d of %d", p, atLeast)
		})
	}
	total := messages(100000)

	// 1. Kill workers with SIGKILL at random points, several times.
	var killedWorkers []string // by kill -9 in step 1b, running committing jobs
	for i := range 3 {
		waitProgress(total * (i + 1) / 12)
		name, p := randomWorker()
		t.Logf("kill -9 %s (pid %d) at %d counted", name, p.Pid(), progress())
		p.Kill()
		delete(workers, name)
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		addWorker()
	}

	// 1b. Kill the live worker running most count jobs (the receivers of split's words) while words
	// flow: split must retransmit what the dead jobs had committed but not acknowledged, and
	// the new count jobs must drop it by dedup (at most three tries: a kill can land between
	// two pushes).
	waitProgress(total * 7 / 24)
	for try := 1; ; try++ {
		var victim string
		var killed map[string]string // partition → job id of the victim's count jobs
		Eventually(t, time.Minute, func() (bool, string) {
			supervise()
			victim, killed = busiestLiveWorker(t, wc, "count", workers)
			if victim == "" {
				return false, "no live worker runs a count job"
			}
			// Only jobs that are committing have committed words whose acknowledgements are
			// held back; a job that just took over a partition may have none yet.
			return jobsBusy(t, wc.Store, killed)
		})
		p := workers[victim]
		t.Logf("kill -9 %s (runs count jobs %v) at %d counted", victim, killed, progress())
		p.Kill()
		killedWorkers = append(killedWorkers, victim)
		delete(workers, victim)
		addWorker()
		// Only the jobs that take over the killed partitions count: they receive what split
		// retransmits to those partitions.
		grew := 0
		for deadline := time.Now().Add(time.Minute); grew == 0 && time.Now().Before(deadline) && wc.State() != "completed"; {
			supervise()
			grew = 0
			for _, p := range all {
				grew += duplicatesOfSuccessors(p.Log(), "count", killed)
			}
			time.Sleep(250 * time.Millisecond) // a poll of the logs with its own deadline
		}
		if grew > 0 {
			t.Logf("after the receiver restart split retransmitted, and the new jobs of the killed count partitions dropped %d duplicates", grew)
			break
		}
		if try == 3 || wc.State() == "completed" {
			t.Fatalf("count dropped no duplicate after %d restarts of its receivers (committed but unacknowledged words not retransmitted, or not deduplicated)", try)
		}
	}

	// 2. Freeze a worker past its Lease, then resume it: its late commit must be refused.
	waitProgress(total / 3)
	zname, zombie := randomWorker()
	t.Logf("SIGSTOP %s (pid %d)", zname, zombie.Pid())
	freezeUntilFenced(t, wc.Store, zname, zombie, func() {
		delete(workers, zname)
		addWorker()
	})
	t.Logf("SIGCONT %s", zname)
	if err := zombie.Resume(); err != nil {
		t.Fatal(err)
	}

	// 3. Kill the leader controller; the standby takes over.
	leader := leaderOf(t, wc, ctrl)
	t.Logf("kill -9 leader controller %s (pid %d)", leader.Name, leader.Pid())
	killedLeader = leader
	leader.Kill()
	Eventually(t, time.Minute, func() (bool, string) {
		l := leaderOf(t, wc, ctrl)
		return l != nil && l != leader, "no new leader yet"
	})

	// 4. Kill ytlocal with SIGKILL mid-run and restart it on its data folder.
	if !c.Real() && wc.State() != "completed" {
		t.Logf("kill -9 ytlocal at %d counted", progress())
		c.KillLocal()
		time.Sleep(time.Duration(500+rng.IntN(1000)) * time.Millisecond)
		c.RestartLocal()
	}

	Eventually(t, 8*time.Minute, func() (bool, string) {
		supervise()
		s := wc.State()
		return s == "completed", fmt.Sprintf("pipeline state %q, counted %d of %d", s, progress(), total)
	})
	wc.CheckExactlyOnce(t)

	// The zombie must have seen its commit refused because its Lease was gone.
	// With a small input the zombie may have had no epoch in progress when it was frozen
	// (then it only finds its session gone); with the full input it is always mid-epoch.
	if m := leaseLostRE.FindString(zombie.Log()); m == "" && messages(100000) >= 50000 {
		t.Errorf("the resumed zombie %s never reported a refused commit (lease lost); its log:\n%s", zname, tail(zombie.Log(), 3000))
	} else {
		t.Logf("zombie %s after SIGCONT: %s", zname, m)
	}
	// A killed worker's port refuses connections: the leader found each worker killed in
	// step 1b dead by its probes (controller/probe.go), not by its session timing out. Those
	// ran committing jobs, so the leader's probes had reached them before; a worker killed in
	// step 1 may have died before any probe reached it (the harness starts replacements and
	// kills at random), and such a worker is found by its session timeout.
	events, err := wc.Store.ControllerLogs(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range killedWorkers {
		found := false
		for _, e := range events {
			found = found || strings.HasPrefix(e.Data, "worker "+name+" refuses connections at ")
		}
		if !found {
			t.Errorf("no controller event of %d says the killed worker %s refuses connections", len(events), name)
		}
	}
	dups := 0
	for _, p := range all {
		dups += duplicatesDropped(p.Log())
	}
	t.Logf("duplicates dropped by dedup across workers: %d", dups)
}

// leaseLostRE matches a write of the zombie refused because its Lease or session was gone:
// an epoch commit ("lease lost: job stops", job/runner.go), a fenced status/heartbeat write
// (ytstore maps the prerequisite failure, code 1000, to "lease lost"), or the server's
// refusal itself as the client logs it ("prerequisite check failed: transaction … is
// missing") — when the worker stops the job at the same moment (it found its session gone),
// the runner drops the failed commit's error with the cancelled job and logs nothing more.
var leaseLostRE = regexp.MustCompile(`[^\n]*(lease lost|prerequisite check failed)[^\n]*`)

var dupRE = regexp.MustCompile(`duplicates dropped.*"count":\s*([0-9]+)`)

func duplicatesDropped(log string) int {
	n := 0
	for _, m := range dupRE.FindAllStringSubmatch(log, -1) {
		v, _ := strconv.Atoi(m[1])
		n += v
	}
	return n
}

// busiestLiveWorker returns the live worker (of workers) running most jobs of computation,
// preferring one that runs no job of another computation (so that the senders survive), with
// its jobs of computation (partition → job id); "" when no live worker runs one.
func busiestLiveWorker(t *testing.T, wc *WordCount, computation string, workers map[string]*Proc) (string, map[string]string) {
	jobs, err := wc.Store.Jobs(t.Context())
	if err != nil {
		return "", nil
	}
	n, other := map[string]int{}, map[string]bool{}
	for _, j := range jobs {
		if p := workers[j.WorkerID]; p == nil || p.Exited() {
			continue
		}
		if j.ComputationID == computation {
			n[j.WorkerID]++
		} else {
			other[j.WorkerID] = true
		}
	}
	best := ""
	better := func(a, b string) bool { // a before b
		if other[a] != other[b] {
			return !other[a]
		}
		if n[a] != n[b] {
			return n[a] > n[b]
		}
		return a < b
	}
	for w := range n {
		if best == "" || better(w, best) {
			best = w
		}
	}
	mine := map[string]string{}
	for _, j := range jobs {
		if j.WorkerID == best && best != "" && j.ComputationID == computation {
			mine[j.PartitionID] = j.JobID
		}
	}
	return best, mine
}

// jobsBusy reports whether every job of jobs (partition → job id) has run at least 3 epochs
// by its status, and if not, which has not.
func jobsBusy(t *testing.T, st *ytstore.Store, jobs map[string]string) (bool, string) {
	sts, err := st.JobStatuses(t.Context())
	if err != nil {
		return false, err.Error()
	}
	epochs := map[string]int64{}
	for _, s := range sts {
		epochs[s.JobID] = s.Epoch
	}
	for _, id := range jobs {
		if epochs[id] < 3 {
			return false, "job " + id + " has run fewer than 3 epochs"
		}
	}
	return true, ""
}

var jobFieldsRE = regexp.MustCompile(`"partition":\s*"([^"]+)".*"job":\s*"([^"]+)"`)

// duplicatesOfSuccessors sums the "duplicates dropped" counts that jobs of computation logged
// in log for the partitions of killed (partition → job id), by jobs other than those.
func duplicatesOfSuccessors(log, computation string, killed map[string]string) int {
	n := 0
	tag := fmt.Sprintf(`"computation": %q`, computation)
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, tag) {
			continue
		}
		m := jobFieldsRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if old, ok := killed[m[1]]; ok && old != m[2] {
			n += duplicatesDropped(line)
		}
	}
	return n
}

// duplicatesOf sums the "duplicates dropped" counts that jobs of computation logged in log.
func duplicatesOf(log, computation string) int {
	n := 0
	tag := fmt.Sprintf(`"computation": %q`, computation)
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, tag) {
			n += duplicatesDropped(line)
		}
	}
	return n
}

// leaderOf returns the controller process whose pid is in @leader_controller_address.
func leaderOf(t *testing.T, wc *WordCount, ctrl []*Proc) *Proc {
	a, err := wc.Store.Attributes(t.Context())
	if err != nil {
		return nil
	}
	for _, p := range ctrl {
		if !p.Exited() && strings.HasSuffix(a.LeaderControllerAddress, fmt.Sprintf("pid:%d", p.Pid())) {
			return p
		}
	}
	return nil
}

// freezeUntilFenced freezes the worker process p (SIGSTOP), calls replace (start a
// replacement worker) and returns once the frozen worker is fenced: the session it held is
// gone and no job is assigned to it. The jobs alone do not tell: during a repartition a live
// worker may hold no job for a moment, and resuming it then would not make a zombie.
func freezeUntilFenced(t *testing.T, st *ytstore.Store, name string, p *Proc, replace func()) {
	t.Helper()
	// A worker started a moment ago may not have registered yet: wait for its session, so
	// that the freeze makes a zombie of a worker that held one.
	var session string
	Eventually(t, time.Minute, func() (bool, string) {
		workers, err := st.Workers(t.Context())
		if err != nil {
			return false, err.Error()
		}
		for _, w := range workers {
			if w.WorkerID == name {
				session = w.SessionTx
			}
		}
		return session != "", "worker " + name + " is not registered"
	})
	if err := p.Freeze(); err != nil {
		t.Fatal(err)
	}
	replace()
	Eventually(t, 2*time.Minute, func() (bool, string) {
		alive, err := st.TxAlive(t.Context(), session)
		if err != nil {
			return false, err.Error()
		}
		if alive {
			return false, "the frozen worker's session " + session + " is alive"
		}
		jobs, err := st.Jobs(t.Context())
		if err != nil {
			return false, err.Error()
		}
		for _, j := range jobs {
			if j.WorkerID == name {
				return false, "job " + j.JobID + " still on the frozen worker"
			}
		}
		return true, ""
	})
}
