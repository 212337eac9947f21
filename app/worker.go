package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.ytsaurus.tech/library/go/core/log"
	ytzap "go.ytsaurus.tech/library/go/core/log/zap"

	"github.com/ytflow/yt-flow/job"
)

func init() {
	register(&command{
		name:    "worker",
		summary: "run a worker: register in a pipeline, run the jobs the controller assigns",
		run:     runWorker,
	})
}

func runWorker(ctx context.Context, env *environ, args []string) int {
	fs := flag.NewFlagSet("yt-flow worker", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	proxy := fs.String("proxy", env.getenv("YT_PROXY"), "YTsaurus HTTP proxy (default $YT_PROXY)")
	path := fs.String("path", "", "pipeline node path, e.g. //home/me/pipe (required)")
	listen := fs.String("listen", "127.0.0.1:0", "address of the inter-job transport endpoint")
	id := fs.String("id", "", "worker id (default: a random id)")
	poll := fs.Duration("poll-period", 200*time.Millisecond, "how often the layout is read")
	verbose := fs.Bool("v", false, "debug logs")
	ackDelay := fs.Duration("test-ack-delay", 0, "TESTING AID for fault tests: hold every push reply that acknowledges messages this long after they commit (a slow network; never needed in production)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(env.stderr, "yt-flow worker: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *proxy == "" {
		fmt.Fprintln(env.stderr, "yt-flow worker: --proxy (or $YT_PROXY) is required")
		return 2
	}
	if *path == "" {
		fmt.Fprintln(env.stderr, "yt-flow worker: --path is required")
		return 2
	}
	level := zapcore.InfoLevel
	if *verbose {
		level = zapcore.DebugLevel
	}
	enc := zapcore.NewConsoleEncoder(zapcore.EncoderConfig{
		MessageKey: "msg", LevelKey: "level", TimeKey: "ts", NameKey: "name",
		EncodeLevel: zapcore.CapitalLevelEncoder, EncodeTime: zapcore.ISO8601TimeEncoder,
		EncodeDuration: zapcore.StringDurationEncoder,
	})
	logger := ytzap.NewWithCore(zapcore.NewCore(enc, zapcore.AddSync(env.stderr), zap.NewAtomicLevelAt(level)))
	w := job.NewWorker(job.Config{
		Proxy: *proxy, Token: env.getenv("YT_TOKEN"), Path: *path, Listen: *listen, WorkerID: *id,
		Logger: logger.Structured(), PollPeriod: *poll, TestAckDelay: *ackDelay,
	})
	if *ackDelay > 0 {
		logger.Warn("testing aid on: push acknowledgements are held back", log.Duration("test_ack_delay", *ackDelay))
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
