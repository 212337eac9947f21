package bench

import (
	"context"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/ytstore"
)

func TestTmpTimeline(t *testing.T) {
	pr := loadParams()
	words, want := inputWords(pr.messages, pr.words, 1)
	srv := startServer(t, true)
	p := newPipeline(t, srv.Addr(), "tl", Options{Tablets: 2, CountPartitions: 2, Finite: true})
	ctx := context.Background()
	if err := p.Load(ctx, words); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cpu0 := cpuTime()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	rt := StartRuntime(srv.Addr(), p.Path, 2)
	defer rt.Stop()
	var exact, working time.Duration
	for {
		s := p.State(ctx)
		if working == 0 && s == ytstore.StateWorking {
			working = time.Since(start)
		}
		if exact == 0 && sumOK(ctx, p, len(words)) && p.CheckExact(ctx, want) == nil {
			exact = time.Since(start)
			t.Logf("exact at %v cpu %v", exact, cpuTime()-cpu0)
		}
		if s == ytstore.StateCompleted {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("working %v exact %v completed %v cpu %v", working, exact, time.Since(start), cpuTime()-cpu0)
}

func sumOK(ctx context.Context, p *Pipeline, n int) bool {
	got, err := p.Totals(ctx)
	if err != nil {
		return false
	}
	var s int64
	for _, v := range got {
		s += v
	}
	return s == int64(n)
}
