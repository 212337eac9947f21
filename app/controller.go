package app

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap/zapcore"
	"go.ytsaurus.tech/library/go/core/log"
	logzap "go.ytsaurus.tech/library/go/core/log/zap"

	"github.com/ytflow/yt-flow/controller"
	"github.com/ytflow/yt-flow/monitoring"
	"github.com/ytflow/yt-flow/ytstore"
)

// newStderrLogger returns a console logger writing to w at level.
func newStderrLogger(w io.Writer, level log.Level) log.Structured {
	enc := logzap.ConsoleConfig(level).EncoderConfig
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(w), logzap.ZapifyLevel(level))
	return logzap.NewWithCore(core)
}

func init() {
	register(&command{
		name:    "controller",
		summary: "run a pipeline controller (leader or standby) until interrupted",
		setup: func(fs *flag.FlagSet, env *environ) runFunc {
			var pf pipelineFlags
			pf.define(fs)
			address := fs.String("address", "", "address published in @leader_controller_address while leading (default host/pid)")
			period := fs.Duration("period", 500*time.Millisecond, "scheduling period")
			leaseTimeout := fs.Duration("lease-timeout", 30*time.Second, "timeout of job leases")
			sessionTimeout := fs.Duration("session-timeout", 5*time.Second, "timeout of the controller session holding the leader lock")
			gcMargin := fs.Duration("dedup-gc-margin", 5*time.Second, "dedup rows are kept this far below the SystemWatermark")
			gcBatch := fs.Int("dedup-gc-batch", 10000, "rows deleted from each dedup table per collection (dedup tables without the watermark row merger)")
			gcPeriod := fs.Duration("dedup-gc-period", 5*time.Second, "least time between two dedup watermark updates (or collections)")
			settle := fs.Duration("worker-settle", time.Second, "the first assignment of a pipeline waits this long for more workers after one appeared that the controller's first cycle did not see (at most 5 times as long; negative: no wait)")
			var mf monitoringFlags
			mf.define(fs)
			return func(ctx context.Context, s *settings) int {
				if code := pf.check(fs, true); code >= 0 {
					return code
				}
				if err := mf.check(); err != nil {
					fmt.Fprintf(env.stderr, "yt-flow controller: %v\n", err)
					return 2
				}
				token, err := s.token()
				if err != nil {
					return failf(env.stderr, "controller: %v", err)
				}
				logger := newStderrLogger(env.stderr, log.InfoLevel)
				metrics := monitoring.NewController(nil)
				if mf.enabled() {
					st, err := ytstore.Open(ctx, ytstore.Config{Proxy: pf.proxy, Token: token, Path: pf.path, Logger: logger})
					if err != nil {
						return failf(env.stderr, "controller: %v", err)
					}
					defer st.Close()
					reportBacklog(metrics, st)
				}
				mon, err := mf.start(ctx, metrics)
				if err != nil {
					return failf(env.stderr, "controller: %v", err)
				}
				defer mon.stop()
				if mon != nil {
					logger.Info("monitoring at "+mon.url(), log.String("address", mon.srv.Addr()))
				}
				err = controller.Run(ctx, controller.Config{
					Proxy:          pf.proxy,
					Token:          token,
					Path:           pf.path,
					Logger:         logger,
					Observe:        metrics.Observe,
					Address:        *address,
					Period:         *period,
					LeaseTimeout:   *leaseTimeout,
					SessionTimeout: *sessionTimeout,
					DedupGCMargin:  *gcMargin,
					DedupGCBatch:   *gcBatch,
					DedupGCPeriod:  *gcPeriod,
					WorkerSettle:   *settle,
				})
				if err != nil {
					return failf(env.stderr, "controller: %v", err)
				}
				return 0
			}
		},
	})
}
