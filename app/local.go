package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

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
	var a localAuth
	fs.BoolVar(&a.on, "auth", false, "require \"Authorization: OAuth <token>\" on every request and enforce the read/write ACLs of Cypress nodes that have @acl; tokens come from --users and from $YT_TOKEN / $YT_TOKEN_PATH / --token-path")
	fs.StringVar(&a.usersFile, "users", "", "with --auth: file of \"USER TOKEN\" lines (# comments), the tokens the proxy accepts")
	fs.StringVar(&a.user, "auth-user", "root", "with --auth: the user of the token of $YT_TOKEN / $YT_TOKEN_PATH / --token-path, unless --users names it (root is bound by no ACL)")
	fs.String("token-path", "", "with --auth: file holding a token accepted for --auth-user (default $YT_TOKEN_PATH; or the token in $YT_TOKEN)")
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "usage: yt-flow local [--port N] [--listen ADDR] [--data-dir DIR] [--verbose] [--auth [--users FILE] [--auth-user NAME]]")
		fs.PrintDefaults()
	}
	return func(ctx context.Context, s *settings) int {
		if a.on {
			tok, err := s.token()
			if err != nil {
				fmt.Fprintf(env.stderr, "yt-flow local: %v\n", err)
				return 2
			}
			a.token = tok
		}
		return runLocal(ctx, env, fs, *port, *listen, *dataDir, *verbose, a)
	}
}

// localAuth is the authentication of `yt-flow local --auth`.
type localAuth struct {
	on        bool
	usersFile string // --users
	user      string // --auth-user: the user of token
	token     string // from $YT_TOKEN, $YT_TOKEN_PATH or --token-path; never shown
}

// users returns the token → user map of the server; an error names no token.
func (a localAuth) users() (map[string]string, error) {
	out := map[string]string{}
	if a.usersFile != "" {
		data, err := os.ReadFile(a.usersFile)
		if err != nil {
			return nil, fmt.Errorf("--users: %w", err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			f := strings.Fields(line)
			if len(f) != 2 {
				return nil, fmt.Errorf("--users: %s line %d: want \"USER TOKEN\" (%d fields)", a.usersFile, i+1, len(f))
			}
			if prev, ok := out[f[1]]; ok && prev != f[0] {
				return nil, fmt.Errorf("--users: %s line %d: the token of %s is also %s's", a.usersFile, i+1, f[0], prev)
			}
			out[f[1]] = f[0]
		}
	}
	if _, ok := out[a.token]; a.token != "" && !ok {
		// A token of --users keeps the user the file gives it.
		out[a.token] = a.user
	}
	if len(out) == 0 {
		return nil, errors.New("--auth needs a token: --users FILE, $YT_TOKEN, $YT_TOKEN_PATH or --token-path")
	}
	return out, nil
}

func runLocal(ctx context.Context, env *environ, fs *flag.FlagSet, port int, listen, dataDir string, verbose bool, auth localAuth) int {
	if fs.NArg() > 0 {
		fmt.Fprintf(env.stderr, "yt-flow local: unexpected arguments %q\n", fs.Args())
		return 2
	}
	var users map[string]string
	if auth.on {
		var err error
		if users, err = auth.users(); err != nil {
			fmt.Fprintf(env.stderr, "yt-flow local: %v\n", err)
			return 2
		}
	} else if auth.usersFile != "" {
		fmt.Fprintln(env.stderr, "yt-flow local: --users needs --auth")
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

	s, err := ytlocal.Start(ctx, ytlocal.Config{Listen: addr, DataDir: dataDir, Logger: logger, Users: users})
	if err != nil {
		fmt.Fprintf(env.stderr, "yt-flow local: %v\n", err)
		return 1
	}
	logger.Info("ytlocal listening", log.String("proxy", s.Addr()), log.String("data_dir", dataDir))
	if auth.on {
		names := slices.Sorted(maps.Values(users))
		logger.Info("authentication on: requests need \"Authorization: OAuth <token>\"; ACLs bind every user but root",
			log.Strings("users", slices.Compact(names)))
	} else {
		logger.Info("authentication off: every request acts as root, whatever its token")
	}
	fmt.Fprintf(env.stdout, "YT_PROXY=%s\n", s.Addr())
	if err := s.Run(ctx); err != nil {
		logger.Error("ytlocal failed", log.Error(err))
		return 1
	}
	return 0
}
