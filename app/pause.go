package app

import (
	"github.com/ytflow/yt-flow/ytstore"
)

func init() {
	register(&command{
		name:     "pause",
		examples: []string{"yt-flow pause --proxy localhost:8000 --path //home/me/pipe"},
		summary:  "pause a pipeline without draining (target state paused)",
		setup:    setTarget("pause", ytstore.TargetPaused, ytstore.StatePaused, ytstore.StateStopped),
	})
}
