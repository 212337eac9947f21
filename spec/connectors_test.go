package spec

// The spec's tests parse specs that name every connector class.
import _ "github.com/ytflow/yt-flow/connectors/all"
