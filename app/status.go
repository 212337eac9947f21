package app

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// pipelineStatus is everything "yt-flow status" shows.
type pipelineStatus struct {
	attrs      *ytstore.Attributes
	workers    []ytstore.Worker
	alive      map[string]bool // worker id -> session alive
	partitions []ytstore.Partition
	jobs       []ytstore.Job
	leases     map[string]bool // lease id -> alive
	statuses   map[string]ytstore.JobStatus
	logs       []ytstore.LogRecord
	now        uint64
	// backlog is, per source stream of a queue source, the rows not yet
	// read (committed source offsets to the end of each tablet); a missing
	// stream is unknown.
	backlog map[string]int64
}

func readStatus(ctx context.Context, st *ytstore.Store, logLines int) (*pipelineStatus, error) {
	s := &pipelineStatus{alive: map[string]bool{}, leases: map[string]bool{}, statuses: map[string]ytstore.JobStatus{}, now: ytstore.Now()}
	var err error
	if s.attrs, err = st.Attributes(ctx); err != nil {
		return nil, err
	}
	if s.workers, err = st.Workers(ctx); err != nil {
		return nil, err
	}
	for _, w := range s.workers {
		if s.alive[w.WorkerID], err = st.TxAlive(ctx, w.SessionTx); err != nil {
			return nil, err
		}
	}
	if s.partitions, err = st.Partitions(ctx); err != nil {
		return nil, err
	}
	if s.jobs, err = st.Jobs(ctx); err != nil {
		return nil, err
	}
	for _, j := range s.jobs {
		if s.leases[j.LeaseID], err = st.TxAlive(ctx, j.LeaseID); err != nil {
			return nil, err
		}
	}
	statuses, err := st.JobStatuses(ctx)
	if err != nil {
		return nil, err
	}
	for _, x := range statuses {
		s.statuses[x.JobID] = x
	}
	if logLines > 0 {
		if s.logs, err = st.ControllerLogs(ctx, logLines); err != nil {
			return nil, err
		}
	}
	s.backlog = readBacklog(ctx, st, s.attrs, s.partitions)
	return s, nil
}

// readBacklog computes the unread rows of every queue source stream: the
// tablets' total_row_count minus the offsets the source partitions committed
// (partition_states source/<stream>). It is best effort: a stream whose
// queue or offsets cannot be read is left out (shown as unknown).
func readBacklog(ctx context.Context, st *ytstore.Store, attrs *ytstore.Attributes, partitions []ytstore.Partition) map[string]int64 {
	out := map[string]int64{}
	if len(attrs.Spec) == 0 {
		return out
	}
	p, err := spec.ParsePipeline(attrs.Spec)
	if err != nil {
		return out
	}
	ends := map[string]map[int64]int64{} // source stream -> partition -> end offset
	for _, c := range p.Computations {
		for sid, src := range c.Sources {
			if src.Class == nil {
				continue
			}
			ctors, ok := connector.SourceOf(src.Class.Name)
			if !ok || ctors.Ends == nil {
				continue
			}
			if m, err := ctors.Ends(ctx, connector.Env{Store: st, SourceID: sid, SourcePartition: -1}, src.Params); err == nil {
				ends[sid] = m
			}
		}
	}
	unknown := map[string]bool{}
	for _, pt := range partitions {
		m, ok := ends[pt.SourceID]
		if !ok || pt.SourceID == "" {
			continue
		}
		total, ok := m[pt.SourcePartition]
		if !ok {
			unknown[pt.SourceID] = true
			continue
		}
		var offset int64
		states, err := st.LoadPartitionStates(ctx, pt.PartitionID)
		if err != nil {
			unknown[pt.SourceID] = true
			continue
		}
		if b, ok := states[ytstore.SourceStatePrefix+pt.SourceID]; ok {
			p, err := ytstore.DecodeSourcePosition(b)
			if err != nil {
				unknown[pt.SourceID] = true
				continue
			}
			offset = p.NextSeq
		}
		out[pt.SourceID] += max(total-offset, 0)
	}
	for sid := range unknown {
		delete(out, sid)
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (s *pipelineStatus) age(us uint64) string {
	if us == 0 {
		return "-"
	}
	if us >= s.now {
		return "0s ago"
	}
	return (time.Duration(s.now-us) * time.Microsecond).Round(100*time.Millisecond).String() + " ago"
}

func keyRange(lower, upper uint64) string {
	u := fmt.Sprintf("%#016x", upper)
	if upper == 0 {
		u = "2^64"
	}
	return fmt.Sprintf("[%#016x, %s)", lower, u)
}

// write prints the status as aligned text.
func (s *pipelineStatus) write(w io.Writer, path string) error {
	a := s.attrs
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "pipeline\t%s\n", path)
	fmt.Fprintf(tw, "state\t%s (target %s)\n", orDash(a.PipelineState), orDash(a.TargetState))
	fmt.Fprintf(tw, "leader\t%s\n", orDash(a.LeaderControllerAddress))
	fmt.Fprintf(tw, "spec\tversion %d, dynamic spec version %d\n", a.SpecVersion, a.DynamicSpecVersion)
	if err := tw.Flush(); err != nil {
		return err
	}

	if err := s.writeFlow(w); err != nil {
		return err
	}

	jobsOf := map[string]int{}
	for _, j := range s.jobs {
		jobsOf[j.WorkerID]++
	}
	fmt.Fprintf(w, "\nworkers (%d)\n", len(s.workers))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  WORKER\tADDRESS\tALIVE\tJOBS\tSTARTED\tHEARTBEAT")
	for _, wk := range s.workers {
		fmt.Fprintf(tw, "  %s\t%s\t%v\t%d\t%s\t%s\n", wk.WorkerID, orDash(wk.Address), s.alive[wk.WorkerID], jobsOf[wk.WorkerID], s.age(wk.StartTime), s.age(wk.HeartbeatTime))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	jobOf := map[string]ytstore.Job{}
	for _, j := range s.jobs {
		jobOf[j.PartitionID] = j
	}
	parts := append([]ytstore.Partition(nil), s.partitions...)
	sort.Slice(parts, func(i, j int) bool { return parts[i].PartitionID < parts[j].PartitionID })
	fmt.Fprintf(w, "\npartitions (%d), jobs (%d)\n", len(parts), len(s.jobs))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  PARTITION\tCOMPUTATION\tKEYS/SOURCE\tSTATE\tJOB\tWORKER\tLEASE\tJOB STATE\tEPOCH\tLAG\tIN FLIGHT\tUPDATED")
	seen := map[string]bool{}
	row := func(pid, comp, keys, pstate string, j ytstore.Job, hasJob bool) {
		if !hasJob {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\n", pid, comp, keys, pstate)
			return
		}
		seen[j.JobID] = true
		lease := "dead"
		if s.leases[j.LeaseID] {
			lease = "alive"
		}
		jst, ok := s.statuses[j.JobID]
		state, epoch, lag, inFlight, updated := "starting", "-", "-", "-", "-"
		if ok {
			state = jst.State
			if j.Draining || j.Retiring {
				state += flagNote(j, jst)
			}
			epoch, lag, inFlight, updated = fmt.Sprint(jst.Epoch), fmt.Sprint(jst.InputLag), fmt.Sprint(jst.InFlight), s.age(jst.UpdatedAt)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", pid, comp, keys, pstate, j.JobID, j.WorkerID, lease, state, epoch, lag, inFlight, updated)
	}
	for _, p := range parts {
		keys := keyRange(p.LowerKey, p.UpperKey)
		if p.SourceID != "" {
			keys = fmt.Sprintf("%s#%d", p.SourceID, p.SourcePartition)
		}
		j, ok := jobOf[p.PartitionID]
		row(p.PartitionID, p.ComputationID, keys, p.State, j, ok)
	}
	for _, j := range s.jobs {
		if !seen[j.JobID] {
			row(j.PartitionID, j.ComputationID, "-", "missing", j, true)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var failed []string
	for _, j := range s.jobs {
		if st, ok := s.statuses[j.JobID]; ok && st.Error != "" {
			failed = append(failed, fmt.Sprintf("  %s: %s", j.JobID, strings.ReplaceAll(st.Error, "\n", "\n    ")))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "\njob errors\n%s\n", strings.Join(failed, "\n"))
	}
	if len(s.logs) > 0 {
		fmt.Fprintf(w, "\ncontroller log (last %d)\n", len(s.logs))
		for _, r := range s.logs {
			fmt.Fprintf(w, "  %s  %s  %s\n", time.UnixMicro(int64(r.Time)).UTC().Format("15:04:05.000"), r.Host, r.Data)
		}
	}
	return nil
}

func flagNote(j ytstore.Job, st ytstore.JobStatus) string {
	what := "draining"
	if j.Retiring {
		what = "retiring"
	}
	if !st.Draining {
		return " (" + what + " requested)"
	}
	return " (" + what + ")"
}

func init() {
	register(&command{
		name:    "status",
		summary: "show a pipeline's state, workers, partitions, jobs, leases and lag",
		setup: func(fs *flag.FlagSet, env *environ) runFunc {
			var pf pipelineFlags
			pf.define(fs)
			logLines := fs.Int("log", 10, "how many controller log lines to show (0 = none)")
			return func(ctx context.Context, cfg *settings) int {
				if code := pf.check(fs, true); code >= 0 {
					return code
				}
				st, err := openPipelineStore(ctx, cfg, pf.proxy, pf.path)
				if err != nil {
					return failf(env.stderr, "status: %v", err)
				}
				defer st.Close()
				s, err := readStatus(ctx, st, *logLines)
				if err != nil {
					return failf(env.stderr, "status: %v", explain(err, pf.path))
				}
				if err := s.write(env.stdout, pf.path); err != nil {
					return failf(env.stderr, "status: %v", err)
				}
				return 0
			}
		},
	})
}

// lagOf is "now - ts" in human form, "-" for 0 (nothing held).
func (s *pipelineStatus) lagOf(ts uint64) string {
	if ts == 0 {
		return "-"
	}
	if ts >= s.now {
		return "0s"
	}
	return (time.Duration(s.now-ts) * time.Microsecond).Round(100 * time.Millisecond).String()
}

// flowAgg aggregates the statuses of the jobs of one computation.
type flowAgg struct {
	partitions, retiring, completed, jobs, reporting int
	inbox, inFlight                                  int64
	// watermark is the smallest reported system_watermark (0 = none held).
	watermark  uint64
	lastCommit uint64
}

func (a *flowAgg) add(st ytstore.JobStatus) {
	a.reporting++
	a.inbox += st.InputLag
	a.inFlight += st.InFlight
	if st.SystemWatermark != 0 && (a.watermark == 0 || st.SystemWatermark < a.watermark) {
		a.watermark = st.SystemWatermark
	}
	a.lastCommit = max(a.lastCommit, st.LastCommitTS)
}

// aggregate folds partitions, jobs and statuses per computation.
func (s *pipelineStatus) aggregate() map[string]*flowAgg {
	aggs := map[string]*flowAgg{}
	get := func(id string) *flowAgg {
		if aggs[id] == nil {
			aggs[id] = &flowAgg{}
		}
		return aggs[id]
	}
	for _, p := range s.partitions {
		a := get(p.ComputationID)
		a.partitions++
		switch p.State {
		case ytstore.PartitionDraining:
			a.retiring++
		case ytstore.PartitionCompleted:
			a.completed++
		}
	}
	for _, j := range s.jobs {
		a := get(j.ComputationID)
		a.jobs++
		if st, ok := s.statuses[j.JobID]; ok {
			a.add(st)
		}
	}
	return aggs
}

// writeFlow prints the SystemWatermark and the lag per computation and per
// stream. A computation's lag is the age of the oldest message its jobs hold
// unpersisted (their smallest system_watermark); a stream's lag is the lag of
// the computation producing it (its outputs wait in that computation's
// outbox until acknowledged), its in-flight count that computation's held
// messages minus its buffered input. For a queue source stream, in flight is
// the number of rows not yet read.
func (s *pipelineStatus) writeFlow(w io.Writer) error {
	wm := "-"
	if a := s.attrs.SystemWatermark; a != 0 {
		wm = fmt.Sprintf("%s (lag %s)", time.UnixMicro(int64(a)).UTC().Format("2006-01-02 15:04:05.000 MST"), s.lagOf(a))
	}
	fmt.Fprintf(w, "\nsystem watermark  %s\n", wm)
	if e := s.attrs.EventWatermark; e != nil {
		ew := "- (no source has read anything yet)"
		switch {
		case *e == math.MaxUint64:
			ew = "end of time (every source exhausted, nothing in flight)"
		case *e > 1:
			ew = fmt.Sprintf("%s (lag %s)", time.UnixMicro(int64(*e)).UTC().Format("2006-01-02 15:04:05.000 MST"), s.lagOf(*e))
		}
		fmt.Fprintf(w, "event watermark   %s\n", ew)
	}

	aggs := s.aggregate()
	var p *spec.Pipeline
	if len(s.attrs.Spec) > 0 {
		p, _ = spec.ParsePipeline(s.attrs.Spec) // a broken spec still shows computations from the layout
	}
	ids := make([]string, 0, len(aggs))
	for id := range aggs {
		ids = append(ids, id)
	}
	if p != nil {
		for id := range p.Computations {
			if aggs[id] == nil {
				aggs[id] = &flowAgg{}
				ids = append(ids, id)
			}
		}
	}
	sort.Strings(ids)
	if len(ids) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\ncomputations (%d)\n", len(ids))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  COMPUTATION\tPARTITIONS\tJOBS\tINPUT LAG\tIN FLIGHT\tLAG\tLAST COMMIT")
	for _, id := range ids {
		a := aggs[id]
		var notes []string
		if a.retiring > 0 {
			notes = append(notes, fmt.Sprintf("%d retiring", a.retiring))
		}
		if a.completed > 0 {
			notes = append(notes, fmt.Sprintf("%d completed", a.completed))
		}
		parts := fmt.Sprint(a.partitions)
		if len(notes) > 0 {
			parts += " (" + strings.Join(notes, ", ") + ")"
		}
		jobs := fmt.Sprint(a.jobs)
		if a.reporting != a.jobs {
			jobs = fmt.Sprintf("%d (%d reporting)", a.jobs, a.reporting)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%s\t%s\n", id, parts, jobs, a.inbox, a.inFlight, s.lagOf(a.watermark), s.age(a.lastCommit))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p == nil {
		return nil
	}
	type streamRow struct{ id, from, to, inFlight, lag string }
	var rows []streamRow
	consumers := map[string][]string{}
	for _, cid := range sortedKeysOf(p.Computations) {
		for _, sid := range p.Computations[cid].InputStreamIDs {
			consumers[sid] = append(consumers[sid], cid)
		}
	}
	for _, cid := range sortedKeysOf(p.Computations) {
		c := p.Computations[cid]
		a := aggs[cid]
		for _, sid := range sortedKeysOf(c.Sources) {
			from := "source"
			if d, ok := c.Sources[sid].Params.(fmt.Stringer); ok {
				from = d.String()
			}
			unread := "-"
			if n, ok := s.backlog[sid]; ok {
				unread = fmt.Sprint(n)
			}
			rows = append(rows, streamRow{sid, from, cid, unread, "-"})
		}
		for _, sid := range c.OutputStreamIDs {
			to := consumers[sid]
			for _, kid := range sortedKeysOf(c.Sinks) {
				for _, in := range c.Sinks[kid].InputStreamIDs {
					if in == sid {
						to = append(to, "sink "+kid)
					}
				}
			}
			rows = append(rows, streamRow{sid, cid, orDash(strings.Join(to, ", ")), fmt.Sprint(max(a.inFlight-a.inbox, 0)), s.lagOf(a.watermark)})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].id < rows[j].id })
	fmt.Fprintf(w, "\nstreams (%d)\n", len(rows))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  STREAM\tFROM\tTO\tIN FLIGHT\tLAG")
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", r.id, r.from, r.to, r.inFlight, r.lag)
	}
	return tw.Flush()
}

func sortedKeysOf[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
