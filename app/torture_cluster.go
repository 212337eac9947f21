package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ytflow/yt-flow/internal/torture"
	"github.com/ytflow/yt-flow/ytstore"
)

// tortureCluster is one run's processes, all of the same binary: an embedded YTsaurus
// server (`local`, durable in its data folder, so that it can be killed and restarted on
// the same port), controllers and workers. A supervisor (supervise) restarts controllers
// that exited and replaces workers that exited, as a process manager would.
type tortureCluster struct {
	bin, dir, path string
	proxy, port    string
	local          *torture.Proc
	st             *ytstore.Store
	ctrl           []*torture.Proc
	workers        map[string]*torture.Proc
	all            []*torture.Proc
	next           int
	say            func(format string, args ...any)
}

// startTortureCluster starts the server in dir/ytlocal and opens a store on the pipeline.
func startTortureCluster(ctx context.Context, bin, dir, path string, say func(string, ...any)) (*tortureCluster, error) {
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	c := &tortureCluster{bin: bin, dir: dir, path: path, workers: map[string]*torture.Proc{}, say: say}
	if err := c.startLocal(ctx, "127.0.0.1:0"); err != nil {
		return nil, err
	}
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: c.proxy, Path: path})
	if err != nil {
		c.stop()
		return nil, err
	}
	c.st = st
	return c, nil
}

func (c *tortureCluster) start(name string, args ...string) (*torture.Proc, error) {
	p, err := torture.Start(name, filepath.Join(c.dir, "logs", name+".log"), c.bin, args...)
	if err == nil {
		c.all = append(c.all, p)
	}
	return p, err
}

func (c *tortureCluster) startLocal(ctx context.Context, listen string) error {
	p, err := c.start(fmt.Sprintf("ytlocal-%d", len(c.all)), "local", "--listen", listen, "--data-dir", filepath.Join(c.dir, "ytlocal"))
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	addr, err := p.WaitAddr(wctx)
	if err != nil {
		p.Kill()
		return err
	}
	c.local, c.proxy = p, addr
	c.port = addr[strings.LastIndexByte(addr, ':')+1:]
	return nil
}

// restartLocal kills the server with SIGKILL, waits pause and starts it again on its port
// and data folder.
func (c *tortureCluster) restartLocal(ctx context.Context, pause time.Duration) error {
	c.local.Kill()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(pause):
	}
	return c.startLocal(ctx, "127.0.0.1:"+c.port)
}

// controllerArgs: short lease and session timeouts, so that a killed leader or a frozen
// worker is replaced within seconds.
func (c *tortureCluster) addController(name string) error {
	p, err := c.start(name, "controller", "--proxy", c.proxy, "--path", c.path, "--lease-timeout", "10s", "--session-timeout", "3s")
	if err == nil {
		c.ctrl = append(c.ctrl, p)
	}
	return err
}

func (c *tortureCluster) addWorker() (*torture.Proc, error) {
	name := fmt.Sprintf("worker-%d", c.next)
	c.next++
	p, err := c.start(name, "worker", "--proxy", c.proxy, "--path", c.path, "--id", name)
	if err == nil {
		c.workers[name] = p
	}
	return p, err
}

// supervise restarts controllers that exited and replaces workers that exited (a worker
// exits when it loses its session, e.g. while the server restarts).
func (c *tortureCluster) supervise() error {
	live := c.ctrl[:0]
	restart := 0
	for _, p := range c.ctrl {
		if p.Exited() {
			restart++
			continue
		}
		live = append(live, p)
	}
	c.ctrl = live
	for range restart {
		if err := c.addController(fmt.Sprintf("controller-%d", len(c.all))); err != nil {
			return err
		}
	}
	for name, p := range c.workers {
		if p.Exited() {
			delete(c.workers, name)
			if _, err := c.addWorker(); err != nil {
				return err
			}
		}
	}
	return nil
}

// liveWorkers returns the names of the running workers, sorted (a seeded pick is then
// reproducible).
func (c *tortureCluster) liveWorkers() []string {
	var names []string
	for n, p := range c.workers {
		if !p.Exited() {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// leader returns the controller whose pid @leader_controller_address names, or nil.
func (c *tortureCluster) leader(ctx context.Context) *torture.Proc {
	a, err := c.st.Attributes(ctx)
	if err != nil {
		return nil
	}
	for _, p := range c.ctrl {
		if !p.Exited() && strings.HasSuffix(a.LeaderControllerAddress, fmt.Sprintf("pid:%d", p.Pid())) {
			return p
		}
	}
	return nil
}

// stop kills every process of the run (by pid) and closes the store.
func (c *tortureCluster) stop() {
	for _, p := range c.all {
		_ = p.Resume() // a frozen process dies of SIGKILL as well; be sure it runs again
		p.Kill()
	}
	if c.st != nil {
		c.st.Close()
	}
}

// readOutputs reads every sink output: a table's rows, a queue's rows in order
// ($tablet_index, $row_index).
func (c *tortureCluster) readOutputs(ctx context.Context, sinks []tortureSink) (map[string][]torture.Row, error) {
	out := map[string][]torture.Row{}
	for _, s := range sinks {
		cols := make([]string, len(s.columns))
		for i, col := range s.columns {
			cols[i] = "[" + col + "]"
		}
		q := fmt.Sprintf("%s FROM [%s]", strings.Join(cols, ", "), s.path)
		if s.kind == "queue" {
			q = fmt.Sprintf("[$tablet_index], [$row_index], %s FROM [%s]", strings.Join(cols, ", "), s.path)
		}
		rows, err := c.st.SelectRows(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("sink %s: read %s %s: %w", s.name, s.kind, s.path, err)
		}
		if s.kind == "queue" {
			slices.SortStableFunc(rows, func(a, b map[string]any) int {
				if d := toInt64(a["$tablet_index"]) - toInt64(b["$tablet_index"]); d != 0 {
					return int(max(min(d, 1), -1))
				}
				return int(max(min(toInt64(a["$row_index"])-toInt64(b["$row_index"]), 1), -1))
			})
			for _, r := range rows {
				delete(r, "$tablet_index")
				delete(r, "$row_index")
			}
		}
		out[s.name] = rows
	}
	return out, nil
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case uint64:
		return int64(x)
	case int:
		return int64(x)
	}
	return 0
}

// feeder inserts the generated rows into the input queues, idempotently: before inserting
// it reads each tablet's row count and inserts only the rows the tablet lacks, so that an
// insert retried after the server restarted never doubles the input.
type feeder struct {
	rows map[string][]map[string]any
	// fed is how many rows of each queue are known to be in it.
	fed   map[string]int
	total int
}

func newFeeder(rows map[string][]map[string]any) *feeder {
	f := &feeder{rows: rows, fed: map[string]int{}}
	for _, r := range rows {
		f.total += len(r)
	}
	return f
}

// fedRows is the number of rows known to be fed, over all queues.
func (f *feeder) fedRows() int {
	n := 0
	for _, v := range f.fed {
		n += v
	}
	return n
}

// feed makes the first upTo rows of every queue present in it.
func (f *feeder) feed(ctx context.Context, st *ytstore.Store, upTo int) error {
	for _, path := range sortedKeysOf(f.rows) {
		rows := f.rows[path]
		want := min(upTo, len(rows))
		if f.fed[path] >= want {
			continue
		}
		var tablets []struct {
			Total *int64 `yson:"total_row_count"`
		}
		if err := st.GetAttribute(ctx, path, "tablets", &tablets); err != nil {
			return fmt.Errorf("queue %s: @tablets: %w", path, err)
		}
		have := make([]int64, len(tablets))
		for i, tb := range tablets {
			if tb.Total != nil {
				have[i] = *tb.Total
			}
		}
		var batch []map[string]any
		seen := make([]int64, len(tablets))
		for _, r := range rows[:want] {
			t := toInt64(r["$tablet_index"])
			if t >= int64(len(seen)) {
				return fmt.Errorf("queue %s: row for tablet %d of %d", path, t, len(seen))
			}
			seen[t]++
			if seen[t] > have[t] {
				batch = append(batch, r)
			}
		}
		for i := range have {
			if have[i] > seen[i] && want == len(rows) {
				return fmt.Errorf("queue %s tablet %d holds %d rows, more than the %d generated: rows not written by torture", path, i, have[i], seen[i])
			}
		}
		for len(batch) > 0 {
			n := min(len(batch), 1000)
			if err := st.InsertRows(ctx, path, batch[:n]); err != nil {
				return fmt.Errorf("queue %s: insert: %w", path, err)
			}
			batch = batch[n:]
		}
		f.fed[path] = want
	}
	return nil
}
