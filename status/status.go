// Package status reads a pipeline's status snapshot — attributes, workers, partitions, jobs,
// leases, job statuses, the controller log and the backlog of its queue sources — and folds it
// into the rows that `yt-flow status` prints and the status page (package statuspage) shows,
// so that both say the same. It also holds the rules of a target-state change that both offer
// (SetTarget).
package status

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// Snapshot is everything the status surfaces show, read at one time (Now).
type Snapshot struct {
	Attrs      *ytstore.Attributes
	Workers    []ytstore.Worker
	Alive      map[string]bool // worker id -> session alive
	Partitions []ytstore.Partition
	Jobs       []ytstore.Job
	Leases     map[string]bool // lease id -> alive
	Statuses   map[string]ytstore.JobStatus
	Logs       []ytstore.LogRecord
	// Now is when the snapshot was read (µs).
	Now uint64
	// Backlog is, per source stream of a queue source, the rows not yet read (committed
	// source offsets to the end of each tablet); a missing stream is unknown.
	Backlog map[string]int64
}

// Read reads a snapshot of the pipeline of st with the last logLines records of the
// controller log (0: none). A pipeline that does not exist gives ytstore.ErrNotFound.
func Read(ctx context.Context, st *ytstore.Store, logLines int) (*Snapshot, error) {
	s := &Snapshot{Alive: map[string]bool{}, Leases: map[string]bool{}, Statuses: map[string]ytstore.JobStatus{}, Now: ytstore.Now()}
	var err error
	if s.Attrs, err = st.Attributes(ctx); err != nil {
		return nil, err
	}
	if s.Workers, err = st.Workers(ctx); err != nil {
		return nil, err
	}
	for _, w := range s.Workers {
		if s.Alive[w.WorkerID], err = st.TxAlive(ctx, w.SessionTx); err != nil {
			return nil, err
		}
	}
	if s.Partitions, err = st.Partitions(ctx); err != nil {
		return nil, err
	}
	if s.Jobs, err = st.Jobs(ctx); err != nil {
		return nil, err
	}
	for _, j := range s.Jobs {
		if s.Leases[j.LeaseID], err = st.TxAlive(ctx, j.LeaseID); err != nil {
			return nil, err
		}
	}
	statuses, err := st.JobStatuses(ctx)
	if err != nil {
		return nil, err
	}
	for _, x := range statuses {
		s.Statuses[x.JobID] = x
	}
	if logLines > 0 {
		if s.Logs, err = st.ControllerLogs(ctx, logLines); err != nil {
			return nil, err
		}
	}
	s.Backlog = ReadBacklog(ctx, st, s.Attrs, s.Partitions)
	return s, nil
}

// ReadBacklog computes the unread rows of every queue source stream: the tablets'
// total_row_count minus the offsets the source partitions committed (partition_states
// source/<stream>). It is best effort: a stream whose queue or offsets cannot be read is left
// out (shown as unknown).
func ReadBacklog(ctx context.Context, st *ytstore.Store, attrs *ytstore.Attributes, partitions []ytstore.Partition) map[string]int64 {
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

// Spec returns the parsed static spec, nil when there is none or it does not parse (the
// surfaces still show the computations of the layout then).
func (s *Snapshot) Spec() *spec.Pipeline {
	if len(s.Attrs.Spec) == 0 {
		return nil
	}
	p, err := spec.ParsePipeline(s.Attrs.Spec)
	if err != nil {
		return nil
	}
	return p
}

// Computation is one computation's line: its partitions, jobs and the statuses of its jobs
// folded together.
type Computation struct {
	ID string
	// Partitions counts its partitions; Retiring and Completed those draining and completed.
	Partitions, Retiring, Completed int
	// Jobs counts its jobs; Reporting those with a status.
	Jobs, Reporting int
	// InputLag is the input its jobs hold buffered, InFlight the messages they hold
	// unpersisted or unacknowledged (input included).
	InputLag, InFlight int64
	// Watermark is the smallest system_watermark its jobs report (µs, 0 = none held): the age
	// of the oldest message it holds is its lag.
	Watermark uint64
	// LastCommit is the latest commit of its jobs (µs, 0 = none).
	LastCommit uint64
	// Messages are the errors its jobs report (JobMessage), by job id.
	Messages []string
}

// Computations folds partitions, jobs and statuses per computation, sorted by id; a
// computation of the spec without partitions has a zero line.
func (s *Snapshot) Computations() []Computation {
	aggs := map[string]*Computation{}
	get := func(id string) *Computation {
		if aggs[id] == nil {
			aggs[id] = &Computation{ID: id}
		}
		return aggs[id]
	}
	for _, p := range s.Partitions {
		a := get(p.ComputationID)
		a.Partitions++
		switch p.State {
		case ytstore.PartitionDraining:
			a.Retiring++
		case ytstore.PartitionCompleted:
			a.Completed++
		}
	}
	jobs := append([]ytstore.Job(nil), s.Jobs...)
	sort.Slice(jobs, func(i, k int) bool { return jobs[i].JobID < jobs[k].JobID })
	for _, j := range jobs {
		a := get(j.ComputationID)
		a.Jobs++
		st, ok := s.Statuses[j.JobID]
		if !ok {
			continue
		}
		a.Reporting++
		a.InputLag += st.InputLag
		a.InFlight += st.InFlight
		if st.SystemWatermark != 0 && (a.Watermark == 0 || st.SystemWatermark < a.Watermark) {
			a.Watermark = st.SystemWatermark
		}
		a.LastCommit = max(a.LastCommit, st.LastCommitTS)
		if m := JobMessage(j, st); m != "" {
			a.Messages = append(a.Messages, m)
		}
	}
	if p := s.Spec(); p != nil {
		for id := range p.Computations {
			get(id)
		}
	}
	out := make([]Computation, 0, len(aggs))
	for _, id := range SortedKeys(aggs) {
		out = append(out, *aggs[id])
	}
	return out
}

// PartitionSummary is the partition count with the retiring and completed ones:
// "3 (1 retiring, 2 completed)".
func (c Computation) PartitionSummary() string {
	var notes []string
	if c.Retiring > 0 {
		notes = append(notes, fmt.Sprintf("%d retiring", c.Retiring))
	}
	if c.Completed > 0 {
		notes = append(notes, fmt.Sprintf("%d completed", c.Completed))
	}
	parts := fmt.Sprint(c.Partitions)
	if len(notes) > 0 {
		parts += " (" + strings.Join(notes, ", ") + ")"
	}
	return parts
}

// JobSummary is the job count with how many report a status, when not all do:
// "2 (1 reporting)".
func (c Computation) JobSummary() string {
	if c.Reporting != c.Jobs {
		return fmt.Sprintf("%d (%d reporting)", c.Jobs, c.Reporting)
	}
	return fmt.Sprint(c.Jobs)
}

// Lag is Now - ts in human form ("1m5s"), "-" for 0 (nothing held).
func (s *Snapshot) Lag(ts uint64) string {
	if ts == 0 {
		return "-"
	}
	if ts >= s.Now {
		return "0s"
	}
	return (time.Duration(s.Now-ts) * time.Microsecond).Round(100 * time.Millisecond).String()
}

// Age is how long before Now a time was ("3.2s ago"), "-" for 0 (never).
func (s *Snapshot) Age(us uint64) string {
	if us == 0 {
		return "-"
	}
	return s.Lag(us) + " ago"
}

// JobMessage is what the surfaces say about a job's status, "" for nothing: a failed job, or
// an error a running job reports (Flow's "Messages" of a computation).
func JobMessage(j ytstore.Job, st ytstore.JobStatus) string {
	where := fmt.Sprintf("(JobId: %s, PartitionId: %s, WorkerId: %s)", j.JobID, j.PartitionID, st.WorkerID)
	switch {
	case st.State == ytstore.JobFailed:
		e := st.Error
		if e == "" {
			e = "-"
		}
		return fmt.Sprintf("Job failed (JobFinishReason: Failed): %s %s", e, where)
	case st.Error != "":
		return fmt.Sprintf("Job error: %s %s", st.Error, where)
	}
	return ""
}

// Stream is one stream of the spec: a source stream (From is "", Source describes the
// source) or the output stream of computation From, with the computations reading it and
// the sinks (of From) writing it out.
type Stream struct {
	ID     string
	From   string
	Source string
	To     []string
	Sinks  []string
	// InFlight is, for a source stream, the rows not yet read (Known false: unknown); for an
	// output stream the messages its producer holds minus its buffered input.
	InFlight int64
	Known    bool
	// Watermark is the producer's smallest system watermark (0: none held, or a source
	// stream): the stream's lag is its age.
	Watermark uint64
}

// Streams returns the streams of the spec sorted by id, nil without a spec.
func (s *Snapshot) Streams() []Stream {
	p := s.Spec()
	if p == nil {
		return nil
	}
	aggs := map[string]Computation{}
	for _, c := range s.Computations() {
		aggs[c.ID] = c
	}
	consumers := map[string][]string{}
	for _, cid := range SortedKeys(p.Computations) {
		for _, sid := range p.Computations[cid].InputStreamIDs {
			consumers[sid] = append(consumers[sid], cid)
		}
	}
	var rows []Stream
	for _, cid := range SortedKeys(p.Computations) {
		c := p.Computations[cid]
		a := aggs[cid]
		for _, sid := range SortedKeys(c.Sources) {
			from := "source"
			if d, ok := c.Sources[sid].Params.(fmt.Stringer); ok {
				from = d.String()
			}
			n, ok := s.Backlog[sid]
			rows = append(rows, Stream{ID: sid, Source: from, To: []string{cid}, InFlight: n, Known: ok})
		}
		for _, sid := range c.OutputStreamIDs {
			var sinks []string
			for _, kid := range SortedKeys(c.Sinks) {
				for _, in := range c.Sinks[kid].InputStreamIDs {
					if in == sid {
						sinks = append(sinks, kid)
					}
				}
			}
			rows = append(rows, Stream{ID: sid, From: cid, To: consumers[sid], Sinks: sinks,
				InFlight: max(a.InFlight-a.InputLag, 0), Known: true, Watermark: a.Watermark})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
	return rows
}

// StreamRow is a stream's columns as the surfaces print them: its producer (the source for
// a source stream), its readers and sinks ("count, sink out"; "-" for none), the in-flight
// count ("-" unknown) and the lag ("-" for a source stream).
func (s *Snapshot) StreamRow(r Stream) (from, to, inFlight, lag string) {
	from = r.From
	if from == "" {
		from = r.Source
	}
	tos := append([]string(nil), r.To...)
	for _, k := range r.Sinks {
		tos = append(tos, "sink "+k)
	}
	to = strings.Join(tos, ", ")
	if to == "" {
		to = "-"
	}
	inFlight, lag = "-", "-"
	if r.Known {
		inFlight = fmt.Sprint(r.InFlight)
	}
	if r.From != "" {
		lag = s.Lag(r.Watermark)
	}
	return from, to, inFlight, lag
}

// SystemWatermark is the published SystemWatermark with its lag, "-" for none.
func (s *Snapshot) SystemWatermark() string {
	a := s.Attrs.SystemWatermark
	if a == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (lag %s)", time.UnixMicro(int64(a)).UTC().Format("2006-01-02 15:04:05.000 MST"), s.Lag(a))
}

// EventWatermark is the published EventWatermark with its lag, "" when none was ever
// published.
func (s *Snapshot) EventWatermark() string {
	e := s.Attrs.EventWatermark
	switch {
	case e == nil:
		return ""
	case *e == math.MaxUint64:
		return "end of time (every source exhausted, nothing in flight)"
	case *e > 1:
		return fmt.Sprintf("%s (lag %s)", time.UnixMicro(int64(*e)).UTC().Format("2006-01-02 15:04:05.000 MST"), s.Lag(*e))
	}
	return "- (no source has read anything yet)"
}

// Partition is one partition with its job, or a job whose partition is missing (State
// "missing").
type Partition struct {
	PartitionID, ComputationID string
	// Keys is the key range "[lower, upper)" or the source partition "stream#N" ("-" for a
	// missing partition).
	Keys  string
	State string
	// Job is the partition's job, nil for none; LeaseAlive whether its lease is.
	Job        *ytstore.Job
	LeaseAlive bool
	// Status is the job's last status, nil before the first.
	Status *ytstore.JobStatus
}

// JobState is the state the partition's job reports with its draining or retiring note:
// "starting" before its first status, "" without a job.
func (p Partition) JobState() string {
	if p.Job == nil {
		return ""
	}
	if p.Status == nil {
		return "starting"
	}
	state := p.Status.State
	if p.Job.Draining || p.Job.Retiring {
		what := "draining"
		if p.Job.Retiring {
			what = "retiring"
		}
		if !p.Status.Draining {
			state += " (" + what + " requested)"
		} else {
			state += " (" + what + ")"
		}
	}
	return state
}

// PartitionRows returns the partitions sorted by id, each with its job, then the jobs whose
// partition is not in the layout.
func (s *Snapshot) PartitionRows() []Partition {
	jobOf := map[string]ytstore.Job{}
	for _, j := range s.Jobs {
		jobOf[j.PartitionID] = j
	}
	parts := append([]ytstore.Partition(nil), s.Partitions...)
	sort.Slice(parts, func(i, j int) bool { return parts[i].PartitionID < parts[j].PartitionID })
	seen := map[string]bool{}
	var out []Partition
	add := func(r Partition, j ytstore.Job, hasJob bool) {
		if hasJob {
			seen[j.JobID] = true
			r.Job, r.LeaseAlive = &j, s.Leases[j.LeaseID]
			if st, ok := s.Statuses[j.JobID]; ok {
				r.Status = &st
			}
		}
		out = append(out, r)
	}
	for _, p := range parts {
		keys := KeyRange(p.LowerKey, p.UpperKey)
		if p.SourceID != "" {
			keys = fmt.Sprintf("%s#%d", p.SourceID, p.SourcePartition)
		}
		j, ok := jobOf[p.PartitionID]
		add(Partition{PartitionID: p.PartitionID, ComputationID: p.ComputationID, Keys: keys, State: p.State}, j, ok)
	}
	for _, j := range s.Jobs {
		if !seen[j.JobID] {
			add(Partition{PartitionID: j.PartitionID, ComputationID: j.ComputationID, Keys: "-", State: "missing"}, j, true)
		}
	}
	return out
}

// JobsPerWorker counts the jobs assigned to each worker.
func (s *Snapshot) JobsPerWorker() map[string]int {
	n := map[string]int{}
	for _, j := range s.Jobs {
		n[j.WorkerID]++
	}
	return n
}

// KeyRange prints a partition's key range.
func KeyRange(lower, upper uint64) string {
	u := fmt.Sprintf("%#016x", upper)
	if upper == 0 {
		u = "2^64"
	}
	return fmt.Sprintf("[%#016x, %s)", lower, u)
}

// SortedKeys returns the keys of m in order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Refusal is the error of a target-state change the pipeline's state does not allow (it is
// completed, it has no spec to start); SetTarget's other errors are failures to read or
// write.
type Refusal struct{ Reason string }

func (r *Refusal) Error() string { return r.Reason }

// SetTarget sets the target state of the pipeline of st (ytstore.Target*) behind the checks
// `yt-flow start`, `pause` and `stop` make (CheckTarget). It returns the attributes read
// before the change. A pipeline that does not exist gives ytstore.ErrNotFound.
func SetTarget(ctx context.Context, st *ytstore.Store, target string) (*ytstore.Attributes, error) {
	attrs, err := st.Attributes(ctx)
	if err != nil {
		return nil, err
	}
	if err := CheckTarget(st.Path(), attrs, target); err != nil {
		return attrs, err
	}
	if err := st.SetTargetState(ctx, target); err != nil {
		return attrs, err
	}
	return attrs, nil
}

// CheckTarget says whether the pipeline at path with attrs may take target: nil, or a
// *Refusal. A completed pipeline is terminal and takes no target; one without a spec cannot
// start (`yt-flow start --spec` stores one).
func CheckTarget(path string, attrs *ytstore.Attributes, target string) error {
	verb := map[string]string{ytstore.TargetWorking: "start", ytstore.TargetPaused: "pause", ytstore.TargetStopped: "stop"}[target]
	if verb == "" {
		return &Refusal{fmt.Sprintf("unknown target state %q", target)}
	}
	if attrs.PipelineState == ytstore.StateCompleted {
		return &Refusal{fmt.Sprintf("pipeline %s is completed (terminal); nothing to %s", path, verb)}
	}
	if target == ytstore.TargetWorking && len(attrs.Spec) == 0 {
		return &Refusal{fmt.Sprintf("pipeline %s has no spec to start (yt-flow start --spec FILE stores one)", path)}
	}
	return nil
}
