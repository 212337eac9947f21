package app

import (
	"github.com/ytflow/yt-flow/ytstore"
)

func init() {
	register(&command{
		name:    "pause",
		summary: "pause a pipeline without draining (target state paused)",
		setup:   setTarget("pause", ytstore.TargetPaused, ytstore.StatePaused, ytstore.StateStopped),
	})
}
