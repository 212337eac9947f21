package app

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ytflow/yt-flow/status"
	"github.com/ytflow/yt-flow/ytstore"
)

// pipelineStatus is everything "yt-flow status" shows: a status.Snapshot.
type pipelineStatus struct {
	*status.Snapshot
	// deployment describes the vanilla operation the pipeline is deployed as ("" if none).
	deployment string
}

func readStatus(ctx context.Context, st *ytstore.Store, logLines int) (*pipelineStatus, error) {
	s, err := status.Read(ctx, st, logLines)
	if err != nil {
		return nil, err
	}
	return &pipelineStatus{Snapshot: s}, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (s *pipelineStatus) age(us uint64) string { return s.Age(us) }

func (s *pipelineStatus) lagOf(ts uint64) string { return s.Lag(ts) }

// write prints the status as aligned text.
func (s *pipelineStatus) write(w io.Writer, path string) error {
	a := s.Attrs
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "pipeline\t%s\n", path)
	fmt.Fprintf(tw, "state\t%s (target %s)\n", orDash(a.PipelineState), orDash(a.TargetState))
	fmt.Fprintf(tw, "leader\t%s\n", orDash(a.LeaderControllerAddress))
	if isURL(a.LeaderControllerAddress) {
		fmt.Fprintf(tw, "status page\t%s\n", a.LeaderControllerAddress)
	}
	fmt.Fprintf(tw, "spec\tversion %d, dynamic spec version %d\n", a.SpecVersion, a.DynamicSpecVersion)
	if s.deployment != "" {
		fmt.Fprintf(tw, "operation\t%s\n", s.deployment)
	}
	for _, l := range coreTargetLines(a) {
		fmt.Fprintf(tw, "flow core\t%s\n", l)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if err := s.writeFlow(w); err != nil {
		return err
	}

	jobsOf := s.JobsPerWorker()
	fmt.Fprintf(w, "\nworkers (%d)\n", len(s.Workers))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  WORKER\tADDRESS\tALIVE\tJOBS\tSTARTED\tHEARTBEAT")
	for _, wk := range s.Workers {
		fmt.Fprintf(tw, "  %s\t%s\t%v\t%d\t%s\t%s\n", wk.WorkerID, orDash(wk.Address), s.Alive[wk.WorkerID], jobsOf[wk.WorkerID], s.age(wk.StartTime), s.age(wk.HeartbeatTime))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, wk := range s.Workers {
		if t := a.FlowCoreTarget; t != "" && wk.FlowCoreVersion != t && s.Alive[wk.WorkerID] {
			fmt.Fprintf(w, "  worker %s runs version %s, not the flow core target %s: it gets no jobs\n", wk.WorkerID, orDash(wk.FlowCoreVersion), t)
		}
	}

	rows := s.PartitionRows()
	fmt.Fprintf(w, "\npartitions (%d), jobs (%d)\n", len(s.Partitions), len(s.Jobs))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  PARTITION\tCOMPUTATION\tKEYS/SOURCE\tSTATE\tJOB\tWORKER\tLEASE\tJOB STATE\tEPOCH\tLAG\tIN FLIGHT\tUPDATED")
	for _, r := range rows {
		if r.Job == nil {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\n", r.PartitionID, r.ComputationID, r.Keys, r.State)
			continue
		}
		lease := "dead"
		if r.LeaseAlive {
			lease = "alive"
		}
		epoch, lag, inFlight, updated := "-", "-", "-", "-"
		if jst := r.Status; jst != nil {
			epoch, lag, inFlight, updated = fmt.Sprint(jst.Epoch), fmt.Sprint(jst.InputLag), fmt.Sprint(jst.InFlight), s.age(jst.UpdatedAt)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.PartitionID, r.ComputationID, r.Keys, r.State, r.Job.JobID, r.Job.WorkerID, lease, r.JobState(), epoch, lag, inFlight, updated)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var failed []string
	for _, j := range s.Jobs {
		if st, ok := s.Statuses[j.JobID]; ok && st.Error != "" {
			failed = append(failed, fmt.Sprintf("  %s: %s", j.JobID, strings.ReplaceAll(st.Error, "\n", "\n    ")))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "\njob errors\n%s\n", strings.Join(failed, "\n"))
	}
	if len(s.Logs) > 0 {
		fmt.Fprintf(w, "\ncontroller log (last %d)\n", len(s.Logs))
		for _, r := range s.Logs {
			fmt.Fprintf(w, "  %s  %s  %s\n", time.UnixMicro(int64(r.Time)).UTC().Format("15:04:05.000"), r.Host, r.Data)
		}
	}
	return nil
}

// isURL reports whether a published leader address is the URL of its status page.
func isURL(addr string) bool {
	return strings.HasPrefix(addr, "http://") || strings.HasPrefix(addr, "https://")
}

func init() {
	register(&command{
		name:     "status",
		examples: []string{"yt-flow status --proxy localhost:8000 --path //home/me/pipe"},
		summary:  "show a pipeline's state, workers, partitions, jobs, leases and lag",
		setup: func(fs *flag.FlagSet, env *environ) runFunc {
			var pf pipelineFlags
			pf.define(fs)
			logLines := fs.Int("log", 10, "how many controller log lines to show (0 = none)")
			watermarks := fs.Bool("watermarks", false, "show only the event watermark of every stream and alignment group: its lag and the partition holding it back, with the reason")
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
				s.deployment = deploymentLine(ctx, st)
				write := s.write
				if *watermarks {
					write = s.writeWatermarks
				}
				if err := write(env.stdout, pf.path); err != nil {
					return failf(env.stderr, "status: %v", err)
				}
				return 0
			}
		},
	})
}

// writeFlow prints the SystemWatermark and the lag per computation and per
// stream. A computation's lag is the age of the oldest message its jobs hold
// unpersisted (their smallest system_watermark); a stream's lag is the lag of
// the computation producing it (its outputs wait in that computation's
// outbox until acknowledged), its in-flight count that computation's held
// messages minus its buffered input. For a queue source stream, in flight is
// the number of rows not yet read.
func (s *pipelineStatus) writeFlow(w io.Writer) error {
	fmt.Fprintf(w, "\nsystem watermark  %s\n", s.SystemWatermark())
	if ew := s.EventWatermark(); ew != "" {
		fmt.Fprintf(w, "event watermark   %s\n", ew)
	}

	comps := s.Computations()
	if len(comps) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\ncomputations (%d)\n", len(comps))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  COMPUTATION\tPARTITIONS\tJOBS\tINPUT LAG\tIN FLIGHT\tLAG\tLAST COMMIT")
	for _, a := range comps {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%s\t%s\n", a.ID, a.PartitionSummary(), a.JobSummary(), a.InputLag, a.InFlight, s.lagOf(a.Watermark), s.age(a.LastCommit))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := s.writePartitioning(w); err != nil {
		return err
	}
	streams := s.Streams()
	if streams == nil {
		return nil
	}
	fmt.Fprintf(w, "\nstreams (%d)\n", len(streams))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  STREAM\tFROM\tTO\tIN FLIGHT\tLAG")
	for _, r := range streams {
		from, to, inFlight, lag := s.StreamRow(r)
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", r.ID, from, to, inFlight, lag)
	}
	return tw.Flush()
}

// writeWatermarks prints, per stream and alignment group, the published EventWatermark, its
// lag behind wall time, and which partition holds it back and why (status.Watermarks).
func (s *pipelineStatus) writeWatermarks(w io.Writer, path string) error {
	fmt.Fprintf(w, "pipeline         %s\n", path)
	if ew := s.EventWatermark(); ew != "" {
		fmt.Fprintf(w, "event watermark  %s\n", ew)
	}
	rows := s.Watermarks()
	if rows == nil {
		fmt.Fprintln(w, "\nno event watermarks: the spec does not parse")
		return nil
	}
	if s.Attrs.EventWatermarks == nil {
		fmt.Fprintln(w, "\nno per-stream watermarks published yet (PUBLISHED is -)")
	}
	fmt.Fprintf(w, "\nevent watermarks (%d)\n", len(rows))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  KIND\tNAME\tPUBLISHED\tLAG\tNOW\tHELD BY\tWHY")
	for _, r := range rows {
		holder := "-"
		if r.Partition != "" {
			holder = r.Partition
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Kind, r.ID, status.WatermarkTime(r.Published), s.WatermarkLag(r.Published),
			status.WatermarkTime(r.Current), holder, r.Why())
	}
	return tw.Flush()
}

func sortedKeysOf[V any](m map[string]V) []string { return status.SortedKeys(m) }

// writePartitioning prints, per keyed computation, its partition count and why, as the leader
// published them in @partitioning.
func (s *pipelineStatus) writePartitioning(w io.Writer) error {
	pcs := s.Attrs.Partitioning
	if len(pcs) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\npartitioning (%d)\n", len(pcs))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  COMPUTATION\tPARTITIONS\tOPTIMAL\tBY\tMSG/S\tBYTES/S\tCPU\tTIMERS\tREASON")
	for _, id := range status.SortedKeys(pcs) {
		pc := pcs[id]
		by := "desired_partition_count"
		if pc.ByLoad {
			by = orDash(pc.Driver)
		}
		reason := pc.Reason
		if len(pc.HeavyHitters) > 0 {
			reason += fmt.Sprintf("; heavy hitters (key hashes no partition count spreads): %v", pc.HeavyHitters)
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\t%.1f\t%.0f\t%.2f\t%.0f\t%s\n", id, pc.Current, pc.Optimal, by,
			pc.MessagesPerSecond, pc.BytesPerSecond, pc.CPULoad, pc.Timers, reason)
	}
	return tw.Flush()
}

// coreTargetLines describe the pipeline's flow core target for status: none when it has
// none; else the target, and a line when the leading controller runs another version.
func coreTargetLines(a *ytstore.Attributes) []string {
	if a.FlowCoreTarget == "" {
		return nil
	}
	lines := []string{fmt.Sprintf("target %s (version %d)", a.FlowCoreTarget, a.FlowCoreTargetVersion)}
	if a.LeaderControllerAddress != "" && a.LeaderFlowCoreVersion != a.FlowCoreTarget {
		lines = append(lines, fmt.Sprintf("binary mismatch: the leading controller runs version %s, not %s: the pipeline pauses until a controller of that version leads",
			orDash(a.LeaderFlowCoreVersion), a.FlowCoreTarget))
	}
	return lines
}
