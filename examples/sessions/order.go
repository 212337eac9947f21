package sessions

import (
	"fmt"

	"github.com/ytflow/yt-flow/flow"
)

func init() {
	flow.Register("EventOrder", flow.PerMessage(LogEventOrder))
}

// OrderParams are EventOrder's processing_function_parameters.
type OrderParams struct {
	// Output is the stream of the order rows (required).
	Output string `yson:"output"`
}

// LogEventOrder (EventOrder) records the order in which its computation sees each user's
// events, over all its input streams: it numbers a user's events in state "seen" and emits
// {user; seq; stream; ts} per event (seq from 0, ts the event timestamp in µs) to the output
// stream. Under input_ordering the rows of a user come out by event time (plus each stream's
// delay), whatever order the streams' sources read them in.
func LogEventOrder(ctx *flow.Context, msg *flow.Message) error {
	p, err := flow.ParamsOf[OrderParams](ctx)
	if err != nil {
		return err
	}
	if p.Output == "" {
		return fmt.Errorf("parameter output: %w: required", flow.ErrBadParameters)
	}
	user, err := userOf(ctx.Key())
	if err != nil {
		return err
	}
	seen := flow.StateOf[int64](ctx, "seen")
	seq, _ := seen.Get()
	seen.Set(seq + 1)
	ctx.AddMessage(p.Output, flow.Row{"user": user, "seq": seq, "stream": msg.StreamID, "ts": int64(msg.EventTimestamp)})
	return nil
}
