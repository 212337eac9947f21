package app

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/status"
	"github.com/ytflow/yt-flow/ytstore"
)

// show-logs, describe-pipeline, describe-workers, get-worker-backtraces and get-flow-view
// (flow-docs §6.2): read-only views of a running pipeline, built from its attributes and
// internal tables (controller_logs, partitions, jobs, job_status, workers, partition_states,
// states).

// BacktracePath is what get-worker-backtraces requests from each worker's registered
// address: the goroutine dump of net/http/pprof.
const BacktracePath = "/debug/pprof/goroutine?debug=2"

func micros(us uint64) any {
	if us == 0 {
		return nil
	}
	return time.UnixMicro(int64(us)).UTC().Format("2006-01-02T15:04:05.000000Z")
}

func init() {
	register(&command{
		name:    "show-logs",
		summary: "print the controller's public log (controller_logs), the last --count records or from --offset",
		setup: func(fs *flag.FlagSet, env *environ) runFunc {
			var c flowCmd
			c.define(fs, "show-logs", "Prints records {row_index; time; host; data} of the controller's public log, oldest first.",
				"yt-flow show-logs --proxy localhost:8000 --count 20 //home/me/pipe",
				"yt-flow show-logs --proxy localhost:8000 --offset 100 --count 50 --format json //home/me/pipe")
			count := fs.Int("count", 100, "at most this many records (0: all)")
			offset := fs.Int64("offset", -1, "the row index to start at (-1: the last --count records)")
			return func(ctx context.Context, s *settings) int {
				if code := c.check(fs, s); code >= 0 {
					return code
				}
				if *count < 0 || *offset < -1 {
					return c.usagef(env, "--count must not be negative, --offset must be a row index or -1")
				}
				st, _, err := c.open(ctx, s)
				if err != nil {
					return c.failf(env, "%v", err)
				}
				defer st.Close()
				from := *offset
				if from == -1 {
					from = -int64(*count)
				}
				recs, err := st.ControllerLogRange(ctx, from, *count)
				if err != nil {
					return c.failf(env, "%v", err)
				}
				out := make([]any, 0, len(recs))
				for _, r := range recs {
					out = append(out, map[string]any{"row_index": r.Index, "time": micros(r.Time), "host": r.Host, "data": r.Data})
				}
				if err := c.emit(env.stdout, out); err != nil {
					return c.failf(env, "%v", err)
				}
				return 0
			}
		},
	})
	register(&command{
		name:    "describe-pipeline",
		summary: "print a pipeline's state and, per computation, partition counts and messages (job errors)",
		setup: func(fs *flag.FlagSet, env *environ) runFunc {
			var c flowCmd
			c.define(fs, "describe-pipeline", "Prints the pipeline state and versions and, per computation, total_partition_count, partition counts by\nstate, job counts and messages: the errors its jobs report (\"Job failed (JobFinishReason: Failed): …\").",
				"yt-flow describe-pipeline --proxy localhost:8000 //home/me/pipe")
			return func(ctx context.Context, s *settings) int {
				if code := c.check(fs, s); code >= 0 {
					return code
				}
				return c.view(ctx, env, s, func(ctx context.Context, st *ytstore.Store, attrs *ytstore.Attributes) (any, error) {
					return describePipeline(ctx, st, attrs)
				})
			}
		},
	})
	register(&command{
		name:    "describe-workers",
		summary: "print a pipeline's registered workers: address, liveness, heartbeat and jobs",
		setup: func(fs *flag.FlagSet, env *environ) runFunc {
			var c flowCmd
			c.define(fs, "describe-workers", "Prints each registered worker {worker_id; address; alive; start_time; heartbeat_time; flow_core_version; job_count; jobs}.",
				"yt-flow describe-workers --proxy localhost:8000 --format json //home/me/pipe")
			return func(ctx context.Context, s *settings) int {
				if code := c.check(fs, s); code >= 0 {
					return code
				}
				return c.view(ctx, env, s, func(ctx context.Context, st *ytstore.Store, _ *ytstore.Attributes) (any, error) {
					return describeWorkers(ctx, st)
				})
			}
		},
	})
	register(&command{
		name:    "get-worker-backtraces",
		summary: "print the goroutine dumps of a pipeline's live workers (GET " + BacktracePath + " on each)",
		setup: func(fs *flag.FlagSet, env *environ) runFunc {
			c := flowCmd{text: true}
			c.define(fs, "get-worker-backtraces", "Requests "+BacktracePath+" from the registered address of each live worker (or of --worker)\nand prints {workers = {ID = {address; backtraces}}; errors = {ID = message}}; --format text prints the dumps\nthemselves. Exit 1 if a worker gave none.",
				"yt-flow get-worker-backtraces --proxy localhost:8000 --format text //home/me/pipe",
				"yt-flow get-worker-backtraces --proxy localhost:8000 --worker w-1 //home/me/pipe")
			worker := fs.String("worker", "", "only this worker (default: every live worker)")
			timeout := fs.Duration("timeout", 10*time.Second, "how long to wait for each worker")
			return func(ctx context.Context, s *settings) int {
				if code := c.check(fs, s); code >= 0 {
					return code
				}
				st, _, err := c.open(ctx, s)
				if err != nil {
					return c.failf(env, "%v", err)
				}
				defer st.Close()
				return c.backtraces(ctx, env, st, *worker, *timeout)
			}
		},
	})
	register(&command{
		name:    "get-flow-view",
		summary: "print a YSON view of a pipeline: state, specs, computations with partitions, states and jobs, workers",
		setup: func(fs *flag.FlagSet, env *environ) runFunc {
			var c flowCmd
			c.define(fs, "get-flow-view", "Prints the pipeline as one document (the part at --view-path):\n  pipeline      state, target state, leader, versions, watermarks\n  spec, dynamic_spec\n  computations  {ID = {key_state_count; partitions = {ID = {state; keys; job_id; worker_id; states}}}}\n  jobs          {ID = {computation_id; partition_id; worker_id; lease_id; draining; retiring; status}}\n  workers       {ID = {address; alive; heartbeat_time}}",
				"yt-flow get-flow-view --proxy localhost:8000 //home/me/pipe",
				"yt-flow get-flow-view --proxy localhost:8000 --view-path /computations/count/partitions //home/me/pipe")
			viewPath := fs.String("view-path", "", "print only this part of the view, e.g. /pipeline/state or /jobs")
			return func(ctx context.Context, s *settings) int {
				if code := c.check(fs, s); code >= 0 {
					return code
				}
				parts, err := splitSpecPath(*viewPath)
				if err != nil {
					return c.usagef(env, "--view-path: %v", err)
				}
				return c.view(ctx, env, s, func(ctx context.Context, st *ytstore.Store, attrs *ytstore.Attributes) (any, error) {
					view, err := flowView(ctx, st, attrs)
					if err != nil {
						return nil, err
					}
					v, err := specAt(view, parts)
					if err != nil {
						return nil, fmt.Errorf("view %s: %w", *viewPath, err)
					}
					return v, nil
				})
			}
		},
	})
}

func describePipeline(ctx context.Context, st *ytstore.Store, attrs *ytstore.Attributes) (map[string]any, error) {
	parts, err := st.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	jobs, err := st.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	statuses, err := st.JobStatuses(ctx)
	if err != nil {
		return nil, err
	}
	statusOf := map[string]ytstore.JobStatus{}
	for _, s := range statuses {
		statusOf[s.JobID] = s
	}
	messages := []any{}
	comps := map[string]map[string]any{}
	get := func(id string) map[string]any {
		if comps[id] == nil {
			comps[id] = map[string]any{"total_partition_count": 0, "partition_counts": map[string]any{}, "job_count": 0, "running_job_count": 0, "messages": []any{}}
		}
		return comps[id]
	}
	if len(attrs.Spec) == 0 {
		messages = append(messages, "The pipeline has no spec")
	} else if p, err := spec.ParsePipeline(attrs.Spec); err != nil {
		messages = append(messages, fmt.Sprintf("The stored spec (version %d) does not parse: %v", attrs.SpecVersion, err))
	} else {
		for id := range p.Computations {
			get(id)
		}
	}
	for _, p := range parts {
		c := get(p.ComputationID)
		c["total_partition_count"] = c["total_partition_count"].(int) + 1
		counts := c["partition_counts"].(map[string]any)
		n, _ := counts[p.State].(int)
		counts[p.State] = n + 1
	}
	sort.Slice(jobs, func(i, k int) bool { return jobs[i].JobID < jobs[k].JobID })
	for _, j := range jobs {
		c := get(j.ComputationID)
		c["job_count"] = c["job_count"].(int) + 1
		s, ok := statusOf[j.JobID]
		if ok && s.State == ytstore.JobRunning {
			c["running_job_count"] = c["running_job_count"].(int) + 1
		}
		if m := status.JobMessage(j, s); ok && m != "" {
			c["messages"] = append(c["messages"].([]any), m)
		}
	}
	out := map[string]any{}
	for id, c := range comps {
		out[id] = c
	}
	return map[string]any{
		"state": stateOf(attrs), "target_state": orNil(attrs.TargetState), "leader_controller_address": orNil(attrs.LeaderControllerAddress),
		"spec_version": attrs.SpecVersion, "dynamic_spec_version": attrs.DynamicSpecVersion,
		"messages": messages, "computations": out,
	}, nil
}

func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func describeWorkers(ctx context.Context, st *ytstore.Store) ([]any, error) {
	workers, err := st.Workers(ctx)
	if err != nil {
		return nil, err
	}
	jobs, err := st.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	jobsOf := map[string][]any{}
	sort.Slice(jobs, func(i, k int) bool { return jobs[i].JobID < jobs[k].JobID })
	for _, j := range jobs {
		jobsOf[j.WorkerID] = append(jobsOf[j.WorkerID], map[string]any{"job_id": j.JobID, "computation_id": j.ComputationID, "partition_id": j.PartitionID})
	}
	out := []any{}
	for _, w := range workers {
		alive, err := st.TxAlive(ctx, w.SessionTx)
		if err != nil {
			return nil, err
		}
		js := jobsOf[w.WorkerID]
		if js == nil {
			js = []any{}
		}
		out = append(out, map[string]any{
			"worker_id": w.WorkerID, "address": w.Address, "alive": alive,
			"start_time": micros(w.StartTime), "heartbeat_time": micros(w.HeartbeatTime),
			"flow_core_version": w.FlowCoreVersion, "job_count": len(js), "jobs": js,
		})
	}
	return out, nil
}

// backtraces fetches the goroutine dumps of the live workers (or of the one named).
func (c *flowCmd) backtraces(ctx context.Context, env *environ, st *ytstore.Store, only string, timeout time.Duration) int {
	workers, err := st.Workers(ctx)
	if err != nil {
		return c.failf(env, "%v", err)
	}
	var chosen []ytstore.Worker
	for _, w := range workers {
		if only != "" && w.WorkerID != only {
			continue
		}
		if only == "" {
			alive, err := st.TxAlive(ctx, w.SessionTx)
			if err != nil {
				return c.failf(env, "%v", err)
			}
			if !alive {
				continue
			}
		}
		chosen = append(chosen, w)
	}
	if only != "" && len(chosen) == 0 {
		return c.failf(env, "pipeline %s has no worker %q", c.pf.path, only)
	}
	if len(chosen) == 0 {
		return c.failf(env, "pipeline %s has no live worker", c.pf.path)
	}
	client := &http.Client{Timeout: timeout}
	dumps, errs := map[string]any{}, map[string]any{}
	var firstErr string
	for _, w := range chosen {
		text, err := fetchBacktraces(ctx, client, w.Address)
		if err != nil {
			errs[w.WorkerID] = err.Error()
			if firstErr == "" {
				firstErr = fmt.Sprintf("worker %s: %v", w.WorkerID, err)
			}
			continue
		}
		dumps[w.WorkerID] = map[string]any{"address": w.Address, "backtraces": text}
	}
	if c.format == "text" {
		for _, w := range chosen {
			if d, ok := dumps[w.WorkerID].(map[string]any); ok {
				fmt.Fprintf(env.stdout, "== worker %s (%s)\n%s\n", w.WorkerID, w.Address, strings.TrimRight(d["backtraces"].(string), "\n"))
			}
		}
	} else if err := c.emit(env.stdout, map[string]any{"workers": dumps, "errors": errs}); err != nil {
		return c.failf(env, "%v", err)
	}
	if len(errs) > 0 {
		return c.failf(env, "%d of %d workers gave no backtraces; %s", len(errs), len(chosen), firstErr)
	}
	return 0
}

func fetchBacktraces(ctx context.Context, client *http.Client, addr string) (string, error) {
	if addr == "" {
		return "", fmt.Errorf("no registered address")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+BacktracePath, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET http://%s%s: %s (the worker must serve net/http/pprof's goroutine handler there)", addr, BacktracePath, resp.Status)
	}
	return string(body), nil
}

// flowView is get-flow-view's document.
func flowView(ctx context.Context, st *ytstore.Store, attrs *ytstore.Attributes) (map[string]any, error) {
	s, err := readStatus(ctx, st, 0)
	if err != nil {
		return nil, err
	}
	counts, err := st.StateCounts(ctx)
	if err != nil {
		return nil, err
	}
	pstates, err := st.ReadPartitionStates(ctx, "", "", 0)
	if err != nil {
		return nil, err
	}
	statesOf := map[string]map[string]any{}
	var errs []any
	for _, r := range pstates {
		if statesOf[r.PartitionID] == nil {
			statesOf[r.PartitionID] = map[string]any{}
		}
		statesOf[r.PartitionID][r.Name] = decodeState(r.State, &errs, "partition "+r.PartitionID+" state "+r.Name)
	}
	jobOf := map[string]ytstore.Job{}
	jobs := map[string]any{}
	for _, j := range s.Jobs {
		jobOf[j.PartitionID] = j
		job := map[string]any{
			"computation_id": j.ComputationID, "partition_id": j.PartitionID, "worker_id": j.WorkerID,
			"lease_id": j.LeaseID, "lease_alive": s.Leases[j.LeaseID], "draining": j.Draining, "retiring": j.Retiring,
			"created_at": micros(j.CreatedAt),
		}
		if x, ok := s.Statuses[j.JobID]; ok {
			job["status"] = map[string]any{
				"state": x.State, "error": orNil(x.Error), "epoch": x.Epoch, "last_commit_time": micros(x.LastCommitTS),
				"input_lag": x.InputLag, "in_flight": x.InFlight, "draining": x.Draining,
				"system_watermark": micros(x.SystemWatermark), "updated_at": micros(x.UpdatedAt),
			}
		}
		jobs[j.JobID] = job
	}
	comps := map[string]any{}
	get := func(id string) map[string]any {
		if comps[id] == nil {
			comps[id] = map[string]any{"key_state_count": counts[id], "partitions": map[string]any{}}
		}
		return comps[id].(map[string]any)
	}
	if len(attrs.Spec) > 0 {
		if p, err := spec.ParsePipeline(attrs.Spec); err == nil {
			for id := range p.Computations {
				get(id)
			}
		}
	}
	for id := range counts {
		get(id)
	}
	for _, p := range s.Partitions {
		part := map[string]any{"state": p.State, "states": statesOf[p.PartitionID]}
		if p.SourceID != "" {
			part["source_id"], part["source_partition"] = p.SourceID, p.SourcePartition
		} else {
			part["lower_key"], part["upper_key"] = p.LowerKey, p.UpperKey
		}
		if j, ok := jobOf[p.PartitionID]; ok {
			part["job_id"], part["worker_id"] = j.JobID, j.WorkerID
		}
		if part["states"] == nil {
			part["states"] = map[string]any{}
		}
		get(p.ComputationID)["partitions"].(map[string]any)[p.PartitionID] = part
	}
	workers := map[string]any{}
	for _, w := range s.Workers {
		workers[w.WorkerID] = map[string]any{"address": w.Address, "alive": s.Alive[w.WorkerID], "start_time": micros(w.StartTime), "heartbeat_time": micros(w.HeartbeatTime),
			"flow_core_version": w.FlowCoreVersion}
	}
	pipeline := map[string]any{
		"path":                      st.Path(),
		"state":                     stateOf(attrs),
		"target_state":              orNil(attrs.TargetState),
		"leader_controller_address": orNil(attrs.LeaderControllerAddress),
		"spec_version":              attrs.SpecVersion,
		"dynamic_spec_version":      attrs.DynamicSpecVersion,
		"system_watermark":          micros(attrs.SystemWatermark),
		"flow_core_target":          attrs.FlowCoreTarget,
	}
	if attrs.EventWatermark != nil {
		pipeline["event_watermark"] = *attrs.EventWatermark
	}
	if errs == nil {
		errs = []any{}
	}
	return map[string]any{
		"pipeline": pipeline, "spec": decodeYSON(attrs.Spec), "dynamic_spec": decodeYSON(attrs.DynamicSpec),
		"computations": comps, "jobs": jobs, "workers": workers, "errors": errs,
	}, nil
}
