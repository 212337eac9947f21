//go:build integration

// Workers together with the real controller on ytlocal (build tag integration).

package job

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/controller"
	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestWorkersWithController runs the real controller with three workers on ytlocal (word count,
// 1 source and 3 count partitions), kills two workers and adds one between rounds of input, and
// checks that every word is counted exactly once. Run with -tags integration: it depends on
// package controller.
func TestWorkersWithController(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: every controller and worker goroutine has returned
	defer cancel()
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	defer func() { _ = srv.Close() }()
	const path = "//tmp/wc/pipeline"
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: path})
	require.NoError(t, err)
	require.NoError(t, st.CreatePipeline(ctx))
	dynamic := `{computations = {split = {parameters = {desired_partition_count = 1}}; count = {parameters = {desired_partition_count = 3}}}}`
	require.NoError(t, st.SetSpecs(ctx, ytstore.SpecUpdate{Spec: yson.RawValue(wordCountSpec), SpecVersion: 1, DynamicSpec: yson.RawValue(dynamic), DynamicSpecVersion: 1, TargetState: ytstore.TargetWorking}))
	for _, ut := range []ytstore.UserTable{
		{Path: "//tmp/wc/input", Kind: ytstore.UserQueue, Schema: schema.Schema{Columns: []schema.Column{{Name: "text", Type: schema.TypeString}}}},
		{Path: "//tmp/wc/consumer", Kind: ytstore.UserConsumer, Queue: "//tmp/wc/input"},
		{Path: "//tmp/wc/counts", Kind: ytstore.UserSortedTable, Schema: schema.Schema{UniqueKeys: true, Columns: []schema.Column{
			{Name: "hash", Type: schema.TypeUint64, SortOrder: schema.SortAscending},
			{Name: "word", Type: schema.TypeString, SortOrder: schema.SortAscending},
			{Name: "count", Type: schema.TypeInt64},
		}}},
	} {
		require.NoError(t, st.EnsureUserTable(ctx, ut))
	}
	go func() {
		_ = controller.Run(ctx, controller.Config{Proxy: srv.Addr(), Path: path, Period: 100 * time.Millisecond})
	}()
	var cancels []context.CancelFunc
	var workers []*Worker
	for i := 0; i < 3; i++ {
		w := NewWorker(Config{Proxy: srv.Addr(), Path: path, EmptyBatchBackoff: 20 * time.Millisecond, PollPeriod: 50 * time.Millisecond, SessionTimeout: 2 * time.Second})
		wctx, wc := context.WithCancel(ctx)
		cancels = append(cancels, wc)
		workers = append(workers, w)
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(wctx) }()
	}
	want := map[string]int64{}
	for round := 0; round < 4; round++ {
		var lines []map[string]any
		for i := 0; i < 500; i++ {
			w := fmt.Sprintf("w%d", i%17)
			lines = append(lines, map[string]any{"text": w + " x"})
			want[w]++
			want["x"]++
		}
		require.NoError(t, st.InsertRows(ctx, "//tmp/wc/input", lines))
		if round == 1 {
			cancels[0]()
		}
		if round == 2 {
			cancels[1]()
			w := NewWorker(Config{Proxy: srv.Addr(), Path: path, EmptyBatchBackoff: 20 * time.Millisecond, PollPeriod: 50 * time.Millisecond})
			go func() { _ = w.Run(ctx) }()
			workers = append(workers, w)
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			rows, err := st.SelectRows(ctx, "word, count from [//tmp/wc/counts]")
			require.NoError(t, err)
			got := map[string]int64{}
			for _, r := range rows {
				got[r["word"].(string)] = r["count"].(int64)
			}
			if fmt.Sprint(got) == fmt.Sprint(want) {
				break
			}
			if time.Now().After(deadline) {
				jobs, _ := st.Jobs(ctx)
				sts, _ := st.JobStatuses(ctx)
				t.Fatalf("got %v want %v\njobs %+v\nstatuses %+v", got, want, jobs, sts)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("round %d ok", round)
	}
	for _, w := range workers {
		t.Logf("%s: %+v", w.ID(), w.Stats())
	}
	jobs, _ := st.Jobs(ctx)
	t.Logf("jobs: %d", len(jobs))
}
