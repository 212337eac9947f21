package ytlocal

import (
	"strings"
	"sync"
	"sync/atomic"

	"go.ytsaurus.tech/yt/go/yson"
)

// formatName returns the format name of a format header value such as
// `<format=text>yson`: "yson", "yson-text", "json" ... A client sends the same few values
// with every request: the names of short ones are kept (formatNames).
func formatName(h string) string {
	if name, ok := formatNames.Load(h); ok {
		return name.(string)
	}
	name := parseFormatName(h)
	if len(h) <= maxFormatNameKey && formatNamesKept.Add(1) <= maxFormatNames {
		formatNames.Store(h, name)
	}
	return name
}

// formatNames caches formatName: header value -> name, at most maxFormatNames values of at
// most maxFormatNameKey bytes (formatNamesKept counts the stores).
var (
	formatNames     sync.Map
	formatNamesKept atomic.Int64
)

const (
	maxFormatNames   = 256
	maxFormatNameKey = 256
)

// parseFormatName is formatName without the cache.
func parseFormatName(h string) string {
	h = strings.TrimSpace(h)
	if h == "" {
		return "yson"
	}
	var v any
	if err := yson.Unmarshal([]byte(h), &v); err != nil {
		return h
	}
	name, _ := yson.ValueOf(v).(string)
	if name == "yson" {
		if f, _ := yson.AttrsOf(v)["format"].(string); f == "text" || f == "pretty" {
			return "yson-text"
		}
	}
	return name
}
