// Package clickhouseevents holds the process function of the clickhouse_events example
// (examples/clickhouse_events): click events from a YTsaurus queue, numbered per user, into a
// ClickHouse MergeTree table through TClickHouseBatchingSink. Importing the package
// registers NumberEvents.
package clickhouseevents

import (
	"fmt"

	"github.com/ytflow/yt-flow/flow"
)

func init() {
	flow.Register("NumberEvents", flow.PerMessage(NumberEvents))
}

// NumberEvents handles one event {id, user, action} of one user (key [hash, user], hash =
// farm_hash(user)): it adds one to the int64 state "seq" and emits the event with user_seq =
// the new value to stream numbered. The numbering is part of the exactly-once state: after
// any restart each event keeps its number, so (user, user_seq) is unique in the table.
func NumberEvents(ctx *flow.Context, msg *flow.Message) error {
	id, ok := msg.Payload["id"].(uint64)
	if !ok {
		return fmt.Errorf("event %v: id is %T, want uint64", msg.Payload, msg.Payload["id"])
	}
	user, _ := msg.Payload["user"].(string)
	action, _ := msg.Payload["action"].(string)
	seq := flow.StateOf[int64](ctx, "seq")
	n, _ := seq.Get()
	n++
	seq.Set(n)
	ctx.AddMessage("numbered", flow.Row{"id": id, "user": user, "action": action, "user_seq": n})
	return nil
}
