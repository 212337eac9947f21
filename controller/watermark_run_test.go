package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yt/ythttp"

	"github.com/ytflow/yt-flow/ytstore"
)

// TestWatermarkPublishedAndDedupCollected runs a controller on ytlocal with
// workers simulated by status writes: one job reports that it holds a message
// with system timestamp held, the others hold nothing. The controller must
// publish exactly held as @system_watermark, delete the dedup rows below it
// (minus the margin) and keep the others, never lower the published value
// when a job later reports an older message, and advance it once nothing is
// held. Subtests: dedup tables with the watermark row merger (the controller sets
// their watermark) and without it, as created by earlier versions (the controller
// deletes the rows).
func TestWatermarkPublishedAndDedupCollected(t *testing.T) {
	t.Run("row_merger", func(t *testing.T) { testWatermarkPublishedAndDedupCollected(t, false) })
	t.Run("legacy_tables", func(t *testing.T) { testWatermarkPublishedAndDedupCollected(t, true) })
}

func testWatermarkPublishedAndDedupCollected(t *testing.T, legacy bool) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if legacy {
		yc, err := ythttp.NewClient(&yt.Config{Proxy: e.proxy})
		if err != nil {
			t.Fatal(err)
		}
		defer yc.Stop()
		for _, table := range []string{ytstore.TableInputMessages, ytstore.TableCompactInputMessages} {
			if err := yc.RemoveNode(ctx, ypath.Path(testPath).Child(table).Attr("row_merger_type"), nil); err != nil {
				t.Fatal(err)
			}
		}
		if merger, err := e.st.DedupMerger(ctx); err != nil || merger {
			t.Fatalf("DedupMerger of legacy tables = %v, %v; want false", merger, err)
		}
	} else if merger, err := e.st.DedupMerger(ctx); err != nil || !merger {
		t.Fatalf("DedupMerger of new tables = %v, %v; want true", merger, err)
	}
	const margin = 1000 // µs
	stopCtl := e.controllerWith("c1", func(c *Config) { c.DedupGCMargin = margin * time.Microsecond; c.DedupGCBatch = 7 })
	defer stopCtl()
	e.worker("w1")
	jobs := e.waitJobs()

	held := ytstore.Now() - 60_000_000 // a minute ago
	var keep, gone []ytstore.DedupKey
	var rows []ytstore.DedupRow
	for i := range 40 {
		k := ytstore.DedupKey{ComputationID: "agg", Key: []byte(fmt.Sprint(i)), KeyHash: uint64(i), MessageID: fmt.Sprintf("m%d", i), Compact: i%2 == 0}
		ts := held - margin - 20 + uint64(i) // 20 rows below held-margin, 20 at or above
		if ts < held-margin {
			gone = append(gone, k)
		} else {
			keep = append(keep, k)
		}
		rows = append(rows, ytstore.DedupRow{DedupKey: k, SystemTimestamp: ts})
	}
	token, err := e.st.GenerateTimestamp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.CommitEpoch(ctx, &ytstore.EpochWrite{PartitionID: jobs[0].PartitionID, Lease: jobs[0].LeaseID, Token: token, Dedup: rows}); err != nil {
		t.Fatal(err)
	}

	var holding atomic.Uint64 // the system timestamp job 0 reports; 0 = nothing
	holding.Store(held)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			for i, j := range jobs {
				st := ytstore.JobStatus{JobID: j.JobID, WorkerID: j.WorkerID, State: ytstore.JobRunning, Epoch: 1, UpdatedAt: ytstore.Now()}
				if h := holding.Load(); i == 0 && h != 0 {
					st.InFlight, st.SystemWatermark = 1, h
				}
				_ = e.st.PutJobStatus(ctx, st, j.LeaseID)
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	defer wg.Wait()
	defer cancel()

	e.waitFor("@system_watermark = held", func() bool { return e.attrs().SystemWatermark == held })
	exists := func(keys []ytstore.DedupKey) int {
		found, err := e.st.LookupDedup(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range found {
			if f {
				n++
			}
		}
		return n
	}
	e.waitFor("dedup rows below the watermark minus the margin deleted", func() bool { return exists(gone) == 0 })
	if n := exists(keep); n != len(keep) {
		t.Fatalf("%d of %d dedup rows at or above the watermark minus the margin survived", n, len(keep))
	}

	// A job reporting an older message does not move the watermark back: wait
	// until the statuses carry it and several observations have seen them.
	holding.Store(held - 5_000_000)
	statusOf := func(id string) ytstore.JobStatus {
		sts, err := e.st.JobStatuses(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range sts {
			if st.JobID == id {
				return st
			}
		}
		return ytstore.JobStatus{}
	}
	e.waitFor("the older message reported", func() bool { return statusOf(jobs[0].JobID).SystemWatermark == held-5_000_000 })
	since := statusOf(jobs[0].JobID).UpdatedAt
	e.waitFor("statuses a few cycles newer", func() bool { return statusOf(jobs[0].JobID).UpdatedAt > since+500_000 })
	if seen := e.attrs().SystemWatermark; seen != held {
		t.Fatalf("@system_watermark moved from %d to %d although a job holds a message at %d", held, seen, held-5_000_000)
	}
	// A new leader continues from the published value: it does not publish
	// the older message's timestamp either.
	stopCtl()
	e.controllerWith("c2", func(c *Config) { c.DedupGCMargin = margin * time.Microsecond })
	e.waitFor("c2 leads", func() bool { return e.attrs().LeaderControllerAddress == "c2" })
	since = statusOf(jobs[0].JobID).UpdatedAt
	e.waitFor("statuses a few cycles newer", func() bool { return statusOf(jobs[0].JobID).UpdatedAt > since+500_000 })
	if seen := e.attrs().SystemWatermark; seen != held {
		t.Fatalf("after a leader change @system_watermark is %d, want %d kept", seen, held)
	}
	// Nothing held: the watermark follows the status times.
	holding.Store(0)
	e.waitFor("@system_watermark past held", func() bool { return e.attrs().SystemWatermark > held+30_000_000 })
}

// controllerWith is controller with a changed Config.
func (e *env) controllerWith(address string, change func(*Config)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var runErr error
	cfg := Config{
		Proxy: e.proxy, Path: testPath, Address: address,
		Period: 50 * time.Millisecond, SessionTimeout: 2 * time.Second, LeaseTimeout: 10 * time.Second, RetryPeriod: 50 * time.Millisecond,
	}
	change(&cfg)
	wg.Add(1)
	go func() {
		defer wg.Done()
		runErr = Run(ctx, cfg)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			if runErr != nil {
				e.t.Errorf("controller %s: Run returned %v", address, runErr)
			}
		})
	}
	e.t.Cleanup(stop)
	return stop
}

func TestRunRejectsNegativeDedupGCSettings(t *testing.T) {
	for _, cfg := range []Config{
		{Proxy: "127.0.0.1:1", Path: "//p", DedupGCMargin: -time.Second},
		{Proxy: "127.0.0.1:1", Path: "//p", DedupGCBatch: -1},
		{Proxy: "127.0.0.1:1", Path: "//p", DedupGCPeriod: -time.Second},
	} {
		err := Run(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "dedup gc") {
			t.Errorf("Run(%+v) = %v, want an error naming the dedup gc settings", cfg, err)
		}
	}
}
