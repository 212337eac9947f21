package ytlocal

import (
	"errors"
	"fmt"
	"go.ytsaurus.tech/yt/go/guid"
	"time"
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

func errorf(format string, args ...any) error {
	if len(args) == 0 {
		return errors.New(format)
	}
	return fmt.Errorf(format, args...)
}

// fmtTime formats t the way YTsaurus prints instants.
func fmtTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000Z")
}

// zeroGUID reports whether g is the null id.
func zeroGUID(g guid.GUID) bool { return g == guid.GUID{} }
