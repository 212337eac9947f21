package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/ytflow/yt-flow/ytstore"
)

// addConnFlags defines the flags of a command that talks to a cluster: --proxy, and
// --token-path (the token itself has no flag: see config.go).
func addConnFlags(fs *flag.FlagSet, proxy *string, proxyHelp string) {
	fs.StringVar(proxy, "proxy", "", proxyHelp)
	fs.String("token-path", "", "file holding the YTsaurus token (default $YT_TOKEN_PATH; or the token in $YT_TOKEN)")
}

// pipelineFlags are the flags shared by the commands that address one pipeline
// (create, stop, pause, status, controller).
type pipelineFlags struct {
	proxy string
	path  string
}

// define adds --proxy, --token-path and --path to fs.
func (pf *pipelineFlags) define(fs *flag.FlagSet) {
	addConnFlags(fs, &pf.proxy, "YTsaurus HTTP proxy (default $YT_PROXY)")
	fs.StringVar(&pf.path, "path", "", "pipeline node path, e.g. //home/me/pipe (required)")
}

// check checks the parsed --proxy and --path and that there are no positional
// arguments. It returns the exit code to use, or -1 to go on.
func (pf *pipelineFlags) check(fs *flag.FlagSet, needPath bool) int {
	if fs.NArg() != 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected arguments %q\n", fs.Name(), fs.Args())
		fs.Usage()
		return 2
	}
	if pf.proxy == "" {
		fmt.Fprintf(fs.Output(), "%s: --proxy (or $YT_PROXY) is required\n", fs.Name())
		return 2
	}
	if needPath && pf.path == "" {
		fmt.Fprintf(fs.Output(), "%s: --path is required\n", fs.Name())
		return 2
	}
	return -1
}

// openPipelineStore opens a store for the pipeline with the token of s.
func openPipelineStore(ctx context.Context, s *settings, proxy, path string) (*ytstore.Store, error) {
	token, err := s.token()
	if err != nil {
		return nil, err
	}
	return ytstore.Open(ctx, ytstore.Config{Proxy: proxy, Path: path, Token: token})
}

// explain adds a hint to errors a user can act on.
func explain(err error, path string) error {
	if errors.Is(err, ytstore.ErrNotFound) {
		return fmt.Errorf("pipeline %s does not exist (yt-flow start --spec FILE creates it): %w", path, err)
	}
	return err
}

func failf(w io.Writer, format string, args ...any) int {
	fmt.Fprintf(w, "yt-flow: "+format+"\n", args...)
	return 1
}

func init() {
	register(&command{
		name:     "create",
		examples: []string{"yt-flow create --proxy localhost:8000 --path //home/me/pipe"},
		summary:  "create a pipeline node with its internal tables (idempotent)",
		setup: func(fs *flag.FlagSet, env *environ) runFunc {
			var pf pipelineFlags
			pf.define(fs)
			return func(ctx context.Context, s *settings) int {
				if code := pf.check(fs, true); code >= 0 {
					return code
				}
				st, err := openPipelineStore(ctx, s, pf.proxy, pf.path)
				if err != nil {
					return failf(env.stderr, "create: %v", err)
				}
				defer st.Close()
				if err := st.CreatePipeline(ctx); err != nil {
					return failf(env.stderr, "create: %v", err)
				}
				fmt.Fprintf(env.stdout, "pipeline %s is ready\n", pf.path)
				return 0
			}
		},
	})
}
