package app

// The tests run the examples' pipelines, as the yt-flow binary does: link their functions.
import (
	_ "github.com/ytflow/yt-flow/examples/kafka_count"
	_ "github.com/ytflow/yt-flow/examples/sessions"
	_ "github.com/ytflow/yt-flow/examples/word_count"
)
