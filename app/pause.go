package app

import (
	"context"

	"github.com/ytflow/yt-flow/ytstore"
)

func init() {
	register(&command{
		name:    "pause",
		summary: "pause a pipeline without draining (target state paused)",
		run: func(ctx context.Context, env *environ, args []string) int {
			return setTarget(ctx, env, "pause", ytstore.TargetPaused, args, ytstore.StatePaused, ytstore.StateStopped)
		},
	})
}
