package app

import (
	"context"
	"flag"
	"fmt"
	"net"
	"strconv"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.ytsaurus.tech/library/go/core/log"
	ytzap "go.ytsaurus.tech/library/go/core/log/zap"

	"github.com/ytflow/yt-flow/ytlocal"
)

func init() {
	register(&command{
		name:     "local",
		examples: []string{"yt-flow local --port 8000 --data-dir ./ytlocal-data"},
		summary:  "run ytlocal, a local YTsaurus-compatible server (HTTP proxy API)",
		setup:    setupLocal,
	})
}

func setupLocal(fs *flag.FlagSet, env *environ) runFunc {
	port := fs.Int("port", 0, "TCP port on 127.0.0.1 (0: random); ignored with --listen")
	listen := fs.String("listen", "", "listen address host:port (default 127.0.0.1:<port>)")
	dataDir := fs.String("data-dir", "", "directory for the write-ahead log and snapshots (empty: memory only)")
	verbose := fs.Bool("verbose", false, "debug logging")
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "usage: yt-flow local [--port N] [--listen ADDR] [--data-dir DIR] [--verbose]")
		fs.PrintDefaults()
	}
	return func(ctx context.Context, _ *settings) int {
		return runLocal(ctx, env, fs, *port, *listen, *dataDir, *verbose)
	}
}

func runLocal(ctx context.Context, env *environ, fs *flag.FlagSet, port int, listen, dataDir string, verbose bool) int {
	if fs.NArg() > 0 {
		fmt.Fprintf(env.stderr, "yt-flow local: unexpected arguments %q\n", fs.Args())
		return 2
	}
	addr := listen
	if addr == "" {
		if port < 0 || port > 65535 {
			fmt.Fprintf(env.stderr, "yt-flow local: --port %d out of range\n", port)
			return 2
		}
		addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	level := zapcore.InfoLevel
	if verbose {
		level = zapcore.DebugLevel
	}
	enc := zapcore.NewConsoleEncoder(zapcore.EncoderConfig{
		MessageKey: "msg", LevelKey: "level", TimeKey: "ts",
		EncodeLevel: zapcore.CapitalLevelEncoder, EncodeTime: zapcore.ISO8601TimeEncoder,
		EncodeDuration: zapcore.StringDurationEncoder,
	})
	logger := ytzap.NewWithCore(zapcore.NewCore(enc, zapcore.AddSync(env.stderr), zap.NewAtomicLevelAt(level)))

	s, err := ytlocal.Start(ctx, ytlocal.Config{Listen: addr, DataDir: dataDir, Logger: logger})
	if err != nil {
		fmt.Fprintf(env.stderr, "yt-flow local: %v\n", err)
		return 1
	}
	logger.Info("ytlocal listening", log.String("proxy", s.Addr()), log.String("data_dir", dataDir))
	fmt.Fprintf(env.stdout, "YT_PROXY=%s\n", s.Addr())
	if err := s.Run(ctx); err != nil {
		logger.Error("ytlocal failed", log.Error(err))
		return 1
	}
	return 0
}
