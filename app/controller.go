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
		name:     "controller",
		examples: []string{"yt-flow controller --proxy localhost:8000 --path //home/me/pipe --status-listen 127.0.0.1:0"},
		summary:  "run a pipeline controller (leader or standby) until interrupted",
		setup: func(fs *flag.FlagSet, env *environ) runFunc {
			var pf pipelineFlags
			pf.define(fs)
			address := fs.String("address", "", "address published in @leader_controller_address while leading (default: the status page URL with --status-listen, else host/pid)")
			period := fs.Duration("period", 500*time.Millisecond, "scheduling period")
			leaseTimeout := fs.Duration("lease-timeout", 30*time.Second, "timeout of job leases")
			sessionTimeout := fs.Duration("session-timeout", 5*time.Second, "timeout of the controller session holding the leader lock")
			gcMargin := fs.Duration("dedup-gc-margin", 5*time.Second, "dedup rows are kept this far below the SystemWatermark")
			gcBatch := fs.Int("dedup-gc-batch", 10000, "rows deleted from each dedup table per collection (dedup tables without the watermark row merger)")
			gcPeriod := fs.Duration("dedup-gc-period", 5*time.Second, "least time between two dedup watermark updates (or collections)")
			statusListen := addStatusListenFlag(fs)
			settle := fs.Duration("worker-settle", time.Second, "the first assignment of a pipeline waits this long for more workers after one appeared that the controller's first cycle did not see (at most 5 times as long; negative: no wait)")
			probePeriod := fs.Duration("probe-period", 100*time.Millisecond, "how often the leader connects to every worker's transport endpoint; a worker that refuses --probe-refusals attempts in a row (its process is gone) loses its session and its jobs at once (negative: off, only session timeouts)")
			probeRefusals := fs.Int("probe-refusals", controller.DefaultProbeRefusals, "refused connection attempts in a row that declare a worker dead")
			exitDone := fs.Bool("exit-when-completed", false, "exit (status 0) once the pipeline is completed, as the jobs of a deployed pipeline do (yt-flow deploy)")
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
				lg := newStderrLogger(env.stderr, log.InfoLevel)
				if *exitDone {
					run, stop, _, err := untilCompleted(ctx, ytstore.Config{Proxy: pf.proxy, Token: token, Path: pf.path}, time.Second, lg)
					if err != nil {
						return failf(env.stderr, "controller: %v", err)
					}
					defer stop()
					ctx = run
				}
				metrics := monitoring.NewController(nil)
				if mf.enabled() {
					st, err := ytstore.Open(ctx, ytstore.Config{Proxy: pf.proxy, Token: token, Path: pf.path, Logger: lg})
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
					lg.Info("monitoring at "+mon.url(), log.String("address", mon.srv.Addr()))
				}
				cfg := controller.Config{
					Proxy:           pf.proxy,
					Token:           token,
					Path:            pf.path,
					Logger:          lg,
					Observe:         metrics.Observe,
					Address:         *address,
					Period:          *period,
					LeaseTimeout:    *leaseTimeout,
					SessionTimeout:  *sessionTimeout,
					DedupGCMargin:   *gcMargin,
					DedupGCBatch:    *gcBatch,
					DedupGCPeriod:   *gcPeriod,
					WorkerSettle:    *settle,
					ProbePeriod:     *probePeriod,
					ProbeRefusals:   *probeRefusals,
					FlowCoreVersion: flowCoreVersion(lg),
				}
				if *statusListen == "" {
					err = controller.Run(ctx, cfg)
				} else {
					err = runWithStatusPage(ctx, env, *statusListen, &cfg)
				}
				if err != nil {
					return failf(env.stderr, "controller: %v", err)
				}
				return 0
			}
		},
	})
}

// runWithStatusPage runs the controller of cfg with its status page on listen: the page's
// URL becomes the address the leader publishes (unless cfg.Address is set, which is then
// the URL published). It returns when both have stopped; a page that fails to serve stops
// the controller.
func runWithStatusPage(ctx context.Context, env *environ, listen string, cfg *controller.Config) error {
	page, err := openStatusPage(ctx, listen, cfg.Proxy, cfg.Token, cfg.Path, cfg.Address, cfg.Logger)
	if err != nil {
		return err
	}
	cfg.Address = page.url
	fmt.Fprintf(env.stdout, "status page at %s\n", page.url)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pageErr := make(chan error, 1)
	go func() {
		err := page.Run(ctx)
		cancel()
		pageErr <- err
	}()
	err = controller.Run(ctx, *cfg)
	cancel()
	if perr := <-pageErr; perr != nil && err == nil {
		err = fmt.Errorf("status page: %w", perr)
	}
	return err
}
