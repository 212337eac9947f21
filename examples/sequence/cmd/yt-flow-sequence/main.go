// Command yt-flow-sequence is the yt-flow command line with the example connector of
// docs/connectors.md linked in:
//
//	go run ./examples/sequence/cmd/yt-flow-sequence run --spec examples/sequence/pipeline.yson
package main

import (
	"github.com/ytflow/yt-flow/app"
	_ "github.com/ytflow/yt-flow/examples/sequence"
)

func main() { app.Main() }
