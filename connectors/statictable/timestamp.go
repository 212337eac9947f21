package statictable

import (
	"fmt"
	"strings"
	"time"
)

// iso8601Layouts are the forms an iso8601 table name or attribute may take; a time without
// a zone is UTC.
var iso8601Layouts = []string{
	time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04Z07:00", "2006-01-02T15:04",
	"2006-01-02T15Z07:00", "2006-01-02T15", "2006-01-02", "2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05Z07:00",
}

func parseISO8601(s string) (time.Time, error) {
	for _, l := range iso8601Layouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an iso8601 time", s)
}

// strftime maps the strftime directives a format may use to Go layout elements.
var strftime = map[byte]string{
	'Y': "2006", 'm': "01", 'd': "02", 'H': "15", 'M': "04", 'S': "05", 'z': "-0700", 'Z': "MST",
	'y': "06", 'b': "Jan", 'j': "002", '%': "%",
}

// layoutOf returns the Go time layout of a locator format: "" for iso8601, else the
// translation of a strftime pattern. Unknown directives are an error.
func layoutOf(format string) (string, error) {
	if format == "" || format == "iso8601" {
		return "", nil
	}
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		if i+1 == len(format) {
			return "", fmt.Errorf("format %q ends in %%", format)
		}
		i++
		el, ok := strftime[format[i]]
		if !ok {
			return "", fmt.Errorf("format %q: unsupported directive %%%c (want iso8601 or %%Y %%m %%d %%H %%M %%S %%z %%Z %%y %%b %%j)", format, format[i])
		}
		b.WriteString(el)
	}
	return b.String(), nil
}

// parseTimestamp reads a located value: a string by format, an integer as unix seconds.
func parseTimestamp(v any, format string) (time.Time, error) {
	switch x := v.(type) {
	case string:
		layout, err := layoutOf(format)
		if err != nil {
			return time.Time{}, err
		}
		if layout == "" {
			return parseISO8601(x)
		}
		t, err := time.Parse(layout, x)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q does not match format %q", x, format)
		}
		return t.UTC(), nil
	case int64:
		return time.Unix(x, 0).UTC(), nil
	case uint64:
		return time.Unix(int64(x), 0).UTC(), nil
	case nil:
		return time.Time{}, fmt.Errorf("no value")
	}
	return time.Time{}, fmt.Errorf("value %v (%T) is neither a string nor an integer", v, v)
}
