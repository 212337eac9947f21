package app

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/ytflow/yt-flow/status"
	"github.com/ytflow/yt-flow/ytstore"
)

// sourceProgress is how far a pipeline's sources are: rows committed past (read) and rows
// the sources still hold (unread), over the sources whose connector reports its ends (a
// queue's row counts); ok is false when none does.
type sourceProgress struct {
	read, unread int64
	ok           bool
}

// readSourceProgress reads the committed source positions and the sources' ends.
func readSourceProgress(ctx context.Context, st *ytstore.Store, attrs *ytstore.Attributes) sourceProgress {
	parts, err := st.Partitions(ctx)
	if err != nil {
		return sourceProgress{}
	}
	backlog := status.ReadBacklog(ctx, st, attrs, parts)
	var p sourceProgress
	for _, n := range backlog {
		p.unread += n
		p.ok = true
	}
	for _, pt := range parts {
		if _, known := backlog[pt.SourceID]; !known || pt.SourceID == "" {
			continue
		}
		states, err := st.LoadPartitionStates(ctx, pt.PartitionID)
		if err != nil {
			return sourceProgress{}
		}
		if b, ok := states[ytstore.SourceStatePrefix+pt.SourceID]; ok {
			if pos, err := ytstore.DecodeSourcePosition(b); err == nil {
				p.read += pos.NextSeq
			}
		}
	}
	return p
}

// progressRate keeps the previous reading to tell the read rate and the time left.
type progressRate struct {
	at   time.Time
	read int64
	rate float64 // rows per second, smoothed
}

// line renders p read at now: "read R rows, U unread, S rows/s, ETA T" (ETA once a rate is
// known and rows remain).
func (r *progressRate) line(p sourceProgress, now time.Time) string {
	if !p.ok {
		return ""
	}
	if !r.at.IsZero() && now.After(r.at) {
		inst := float64(p.read-r.read) / now.Sub(r.at).Seconds()
		if r.rate == 0 {
			r.rate = inst
		} else {
			r.rate = 0.7*r.rate + 0.3*inst
		}
	}
	r.at, r.read = now, p.read
	s := fmt.Sprintf("read %d rows, %d unread", p.read, p.unread)
	if r.rate > 0 {
		s += fmt.Sprintf(", %.0f rows/s", r.rate)
		if p.unread > 0 {
			s += ", ETA " + (time.Duration(float64(p.unread) / r.rate * float64(time.Second))).Round(time.Second).String()
		}
	}
	return s
}

// isTerminal tells whether w is a terminal: progress then rewrites one line instead of
// printing a line each period.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
