// Package all registers every connector class of this build: import it (blank) in a program
// that parses specs or runs pipelines. Adding a connector package means adding its import
// here.
package all

import (
	_ "github.com/ytflow/yt-flow/connectors/arrivalorder"
	_ "github.com/ytflow/yt-flow/connectors/clickhouse"
	_ "github.com/ytflow/yt-flow/connectors/httpsink"
	_ "github.com/ytflow/yt-flow/connectors/kafka"
	_ "github.com/ytflow/yt-flow/connectors/queue"
	_ "github.com/ytflow/yt-flow/connectors/random"
	_ "github.com/ytflow/yt-flow/connectors/servicelog"
	_ "github.com/ytflow/yt-flow/connectors/sortedtable"
	_ "github.com/ytflow/yt-flow/connectors/statictable"
)
