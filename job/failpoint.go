// This file holds the worker's fault-injection knobs: testing aids that widen race windows of
// the protocol without changing it, so that fault tests can hit those windows on purpose
// instead of by timing luck. Every knob is off in the zero Config.

package job

import (
	"context"
	"time"
)

// holdAck is the knob Config.FaultAckDelay sets. acceptPush calls it right before it answers a push (over
// /push or from a job of this worker): when
// the reply acknowledges at least one message (so those messages are committed, or known
// duplicates) and Config.FaultAckDelay is positive, it waits that long, or until the request is
// abandoned, before the reply goes out. The sender meanwhile keeps the messages as
// unacknowledged, exactly as over a slow network: if the receiver or the sender dies in the
// window, the messages are retransmitted and the receiver's dedup index drops them. No delay
// may change what is applied, only how often duplicates arrive.
func (w *Worker) holdAck(ctx context.Context, acked int) {
	d := w.cfg.FaultAckDelay
	if d <= 0 || acked == 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
