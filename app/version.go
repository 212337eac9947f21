package app

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the yt-flow release; overridden at build time with -ldflags "-X github.com/ytflow/yt-flow/app.Version=…".
var Version = "0.1.0-dev"

func init() {
	register(&command{
		name:     "version",
		examples: []string{"yt-flow version"},
		summary:  "print the yt-flow version",
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
			return 0
		},
	})
}
