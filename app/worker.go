package app

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.ytsaurus.tech/library/go/core/log"
	ytzap "go.ytsaurus.tech/library/go/core/log/zap"

	"github.com/ytflow/yt-flow/job"
	"github.com/ytflow/yt-flow/monitoring"
	"github.com/ytflow/yt-flow/ytstore"
)

func init() {
	register(&command{
		name:     "worker",
		examples: []string{"yt-flow worker --proxy localhost:8000 --path //home/me/pipe"},
		summary:  "run a worker: register in a pipeline, run the jobs the controller assigns",
		setup:    setupWorker,
	})
}

func setupWorker(fs *flag.FlagSet, env *environ) runFunc {
	proxy := new(string)
	addConnFlags(fs, proxy, "YTsaurus HTTP proxy (default $YT_PROXY)")
	path := fs.String("path", "", "pipeline node path, e.g. //home/me/pipe (required)")
	listen := fs.String("listen", "127.0.0.1:0", "address of the inter-job transport endpoint")
	advHost := fs.String("advertise-host", "", "host published with the endpoint's port, as other hosts reach this one (for --listen on a wildcard address; default: the listener's address)")
	advHostname := fs.Bool("advertise-hostname", false, "publish this host's name (as the OS reports it) with the endpoint's port, like --advertise-host")
	id := fs.String("id", "", "worker id (default: a random id)")
	poll := fs.Duration("poll-period", 200*time.Millisecond, "how often the layout is read")
	verbose := fs.Bool("v", false, "debug logs")
	exitDone := fs.Bool("exit-when-completed", false, "exit (status 0) once the pipeline is completed, as the jobs of a deployed pipeline do (yt-flow deploy)")
	ackDelay := fs.Duration("test-ack-delay", 0, "TESTING AID for fault tests: hold every push reply that acknowledges messages this long after they commit (a slow network; never needed in production)")
	var mf monitoringFlags
	mf.define(fs)
	return func(ctx context.Context, s *settings) int {
		return runWorker(ctx, env, s, fs, workerFlags{*proxy, *path, *listen, *id, *poll, *verbose, *ackDelay, mf, *exitDone, *advHost, *advHostname})
	}
}

// workerFlags are the flags of `yt-flow worker`.
type workerFlags struct {
	proxy, path, listen, id string
	poll                    time.Duration
	verbose                 bool
	ackDelay                time.Duration
	monitoring              monitoringFlags
	exitWhenCompleted       bool
	advertiseHost           string
	advertiseHostname       bool
}

func runWorker(ctx context.Context, env *environ, s *settings, fs *flag.FlagSet, f workerFlags) int {
	if fs.NArg() != 0 {
		fmt.Fprintf(env.stderr, "yt-flow worker: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if f.proxy == "" {
		fmt.Fprintln(env.stderr, "yt-flow worker: --proxy (or $YT_PROXY) is required")
		return 2
	}
	if f.path == "" {
		fmt.Fprintln(env.stderr, "yt-flow worker: --path is required")
		return 2
	}
	if err := f.monitoring.check(); err != nil {
		fmt.Fprintf(env.stderr, "yt-flow worker: %v\n", err)
		return 2
	}
	level := zapcore.InfoLevel
	if f.verbose {
		level = zapcore.DebugLevel
	}
	enc := zapcore.NewConsoleEncoder(zapcore.EncoderConfig{
		MessageKey: "msg", LevelKey: "level", TimeKey: "ts", NameKey: "name",
		EncodeLevel: zapcore.CapitalLevelEncoder, EncodeTime: zapcore.ISO8601TimeEncoder,
		EncodeDuration: zapcore.StringDurationEncoder,
	})
	logger := ytzap.NewWithCore(zapcore.NewCore(enc, zapcore.AddSync(env.stderr), zap.NewAtomicLevelAt(level)))
	token, err := s.token()
	if err != nil {
		fmt.Fprintf(env.stderr, "yt-flow worker: %v\n", err)
		return 1
	}
	if f.exitWhenCompleted {
		run, stop, _, err := untilCompleted(ctx, ytstore.Config{Proxy: f.proxy, Token: token, Path: f.path}, time.Second, logger.Structured())
		if err != nil {
			fmt.Fprintf(env.stderr, "yt-flow worker: %v\n", err)
			return 1
		}
		defer stop()
		ctx = run
	}
	if f.advertiseHostname {
		if f.advertiseHost != "" {
			fmt.Fprintln(env.stderr, "yt-flow worker: --advertise-host and --advertise-hostname exclude each other")
			return 2
		}
		if f.advertiseHost, err = os.Hostname(); err != nil {
			fmt.Fprintf(env.stderr, "yt-flow worker: --advertise-hostname: %v\n", err)
			return 1
		}
	}
	w := job.NewWorker(job.Config{
		Proxy: f.proxy, Token: token, Path: f.path, Listen: f.listen, AdvertiseHost: f.advertiseHost, WorkerID: f.id,
		Logger: logger.Structured(), PollPeriod: f.poll, FaultAckDelay: f.ackDelay,
	})
	mon, err := f.monitoring.start(ctx, monitoring.NewWorker(nil, w))
	if err != nil {
		fmt.Fprintf(env.stderr, "yt-flow worker: %v\n", err)
		return 1
	}
	defer mon.stop()
	if mon != nil {
		logger.Info("monitoring at "+mon.url(), log.String("address", mon.srv.Addr()))
	}
	if f.ackDelay > 0 {
		logger.Warn("testing aid on: push acknowledgements are held back", log.Duration("test_ack_delay", f.ackDelay))
	}
	go func() {
		select {
		case <-w.Ready():
			logger.Info("worker serving", log.String("worker", w.ID()), log.String("address", w.Addr()))
		case <-ctx.Done():
		}
	}()
	if err := w.Run(ctx); err != nil {
		fmt.Fprintf(env.stderr, "yt-flow worker: %v\n", err)
		return 1
	}
	return 0
}
