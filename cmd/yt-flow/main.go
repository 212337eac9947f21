// Command yt-flow runs, validates and inspects yt-flow pipelines: the command line of
// package app, linked with the process functions of the examples so that
// `yt-flow run --spec examples/…/pipeline.yson` runs them as they are. A binary running
// its own functions imports its own packages instead and calls app.Main the same way.
package main

import (
	"github.com/ytflow/yt-flow/app"
	_ "github.com/ytflow/yt-flow/examples/clickhouse_events"
	_ "github.com/ytflow/yt-flow/examples/kafka_count"
	_ "github.com/ytflow/yt-flow/examples/sessions"
	_ "github.com/ytflow/yt-flow/examples/static_count"
	_ "github.com/ytflow/yt-flow/examples/totals"
	_ "github.com/ytflow/yt-flow/examples/word_count"
)

func main() { app.Main() }
