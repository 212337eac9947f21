package ytlocal_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yt/ythttp"

	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
)

// benchClient starts a server (durable when durable is true) and a real SDK client.
func benchClient(b *testing.B, durable bool) yt.Client {
	b.Helper()
	cfg := ytlocal.Config{}
	if durable {
		cfg.DataDir = b.TempDir()
	}
	s := ytlocaltest.Start(b, cfg)
	yc, err := ythttp.NewClient(&yt.Config{Proxy: s.Addr()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(yc.Stop)
	return yc
}

func modes() []bool { return []bool{false, true} }

func modeName(durable bool) string {
	if durable {
		return "durable"
	}
	return "memory"
}

// BenchmarkCreateNode: one Cypress mutation per request.
func BenchmarkCreateNode(b *testing.B) {
	for _, durable := range modes() {
		b.Run(modeName(durable), func(b *testing.B) {
			yc := benchClient(b, durable)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := yc.CreateNode(ctx, ypath.Path(fmt.Sprintf("//tmp/n%d", i)), yt.NodeMap, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "mutations/s")
		})
	}
}

// BenchmarkMasterTx: start, one set inside, commit.
func BenchmarkMasterTx(b *testing.B) {
	for _, durable := range modes() {
		b.Run(modeName(durable), func(b *testing.B) {
			yc := benchClient(b, durable)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id, err := yc.StartTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				opts := &yt.SetNodeOptions{TransactionOptions: &yt.TransactionOptions{TransactionID: id}}
				if err := yc.SetNode(ctx, ypath.Path("//tmp/@counter"), i, opts); err != nil {
					b.Fatal(err)
				}
				if err := yc.CommitTx(ctx, id, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tx/s")
		})
	}
}

// BenchmarkWriteReadTable: append 1000-row batches, then read the table back.
func BenchmarkWriteReadTable(b *testing.B) {
	const batch = 1000
	for _, durable := range modes() {
		b.Run(modeName(durable), func(b *testing.B) {
			yc := benchClient(b, durable)
			ctx := context.Background()
			p := ypath.Path("//tmp/t")
			if _, err := yt.CreateTable(ctx, yc, p); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w, err := yc.WriteTable(ctx, ypath.NewRich(string(p)).SetAppend(), nil)
				if err != nil {
					b.Fatal(err)
				}
				for j := 0; j < batch; j++ {
					if err := w.Write(kv{Key: "some-key-of-moderate-length", Value: int64(j)}); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows_written/s")
			b.StopTimer()
			r, err := yc.ReadTable(ctx, p, nil)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for r.Next() {
				n++
			}
			if err := r.Err(); err != nil {
				b.Fatal(err)
			}
			_ = r.Close()
			if n != b.N*batch {
				b.Fatalf("read %d rows, wrote %d", n, b.N*batch)
			}
		})
	}
}

// BenchmarkCreateNodeParallel: concurrent clients; durable commits share fsyncs.
func BenchmarkCreateNodeParallel(b *testing.B) {
	for _, durable := range modes() {
		b.Run(modeName(durable), func(b *testing.B) {
			yc := benchClient(b, durable)
			ctx := context.Background()
			var n atomic.Int64
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p := ypath.Path(fmt.Sprintf("//tmp/n%d", n.Add(1)))
					if _, err := yc.CreateNode(ctx, p, yt.NodeMap, nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "mutations/s")
		})
	}
}
