package app

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/internal/corever"
)

// Version is the yt-flow release; overridden at build time with -ldflags "-X github.com/ytflow/yt-flow/app.Version=…".
var Version = "0.1.0-dev"

func init() {
	register(&command{
		name:     "version",
		examples: []string{"yt-flow version"},
		summary:  "print the yt-flow version and the flow core version of this binary (its VCS commit, else its SHA-256)",
		run: func(_ context.Context, env *environ, args []string) int {
			if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
				fmt.Fprintln(env.stderr, "usage: yt-flow version")
				return 0
			}
			if len(args) != 0 {
				fmt.Fprintln(env.stderr, "usage: yt-flow version")
				return 2
			}
			sdk := "unknown"
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, d := range bi.Deps {
					if d.Path == "go.ytsaurus.tech/yt/go" {
						sdk = d.Version
					}
				}
			}
			fmt.Fprintf(env.stdout, "yt-flow %s (%s, YTsaurus Go SDK %s)\n", Version, runtime.Version(), sdk)
			v, err := corever.Self()
			if err != nil {
				return failf(env.stderr, "version: %v", err)
			}
			fmt.Fprintf(env.stdout, "flow core version %s\n", v)
			return 0
		},
	})
}

// flowCoreVersion is this binary's FlowCoreVersion for the controller and workers it runs;
// "" (with a warning) when it cannot be derived: the process then runs no jobs of a pipeline
// whose flow core target is set.
func flowCoreVersion(lg log.Structured) string {
	v, err := corever.Self()
	if err != nil {
		lg.Warn("no flow core version: this process takes no part in a pipeline with a flow core target", log.Error(err))
	}
	return v
}
