package spec

// The spec's tests parse specs that name every connector class, and the example connector's.
import (
	_ "github.com/ytflow/yt-flow/connectors/all"
	_ "github.com/ytflow/yt-flow/examples/sequence"
)
