package main

// The binary ships the example process functions so that the examples run with
// `yt-flow run` as they are. A user's own binary imports its own packages instead.
import (
	_ "github.com/ytflow/yt-flow/examples/sessions"
	_ "github.com/ytflow/yt-flow/examples/word_count"
)
