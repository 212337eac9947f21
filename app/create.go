package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/ytflow/yt-flow/ytstore"
)

// pipelineFlags are the flags shared by the commands that address one pipeline
// (create, stop, pause, status, controller).
type pipelineFlags struct {
	proxy string
	path  string
}

// newPipelineFlagSet returns a flag set named name with --proxy and --path
// bound to pf. Errors are printed to env.stderr.
func newPipelineFlagSet(name string, env *environ, pf *pipelineFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("yt-flow "+name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.StringVar(&pf.proxy, "proxy", env.getenv("YT_PROXY"), "YTsaurus HTTP proxy (default $YT_PROXY)")
	fs.StringVar(&pf.path, "path", "", "pipeline node path, e.g. //home/me/pipe (required)")
	return fs
}

// parsePipelineFlags parses args into fs and checks --proxy and --path. It
// returns the exit code to use, or -1 to go on.
func parsePipelineFlags(fs *flag.FlagSet, pf *pipelineFlags, args []string, needPath bool) int {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
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

// openPipelineStore opens a store for the pipeline; the token comes from
// $YT_TOKEN only.
func openPipelineStore(ctx context.Context, env *environ, proxy, path string) (*ytstore.Store, error) {
	return ytstore.Open(ctx, ytstore.Config{Proxy: proxy, Path: path, Token: env.getenv("YT_TOKEN")})
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
		name:    "create",
		summary: "create a pipeline node with its internal tables (idempotent)",
		run: func(ctx context.Context, env *environ, args []string) int {
			var pf pipelineFlags
			fs := newPipelineFlagSet("create", env, &pf)
			if code := parsePipelineFlags(fs, &pf, args, true); code >= 0 {
				return code
			}
			st, err := openPipelineStore(ctx, env, pf.proxy, pf.path)
			if err != nil {
				return failf(env.stderr, "create: %v", err)
			}
			defer st.Close()
			if err := st.CreatePipeline(ctx); err != nil {
				return failf(env.stderr, "create: %v", err)
			}
			fmt.Fprintf(env.stdout, "pipeline %s is ready\n", pf.path)
			return 0
		},
	})
}
