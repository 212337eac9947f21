package totals

import "github.com/ytflow/yt-flow/flow"

func init() {
	flow.Register("CountEvents", flow.Batch(CountEvents))
	flow.Register("AuditEvents", flow.Batch(AuditEvents))
}

// CountEvents counts the events of one user (key [hash, user]) in its internal state
// "events" and emits the new count as {user; events} to stream "counted".
func CountEvents(ctx *flow.Context, msgs []flow.Message) error {
	st := flow.StateOf[int64](ctx, "events")
	n, _ := st.Get()
	n += int64(len(msgs))
	st.Set(n)
	ctx.AddMessage("counted", flow.Row{"user": ctx.Key()[1], "events": n})
	return nil
}

// Events is the name of the state joiner AuditEvents reads: CountEvents' state "events"
// (state_joiners).
const Events = "/events"

// AuditEvents reads, for each message {user; events} of CountEvents, the count that
// computation has committed for the user through the state joiner "/events", and keeps in
// the external state "/audit" the largest count read (events) and how many messages read a
// count below the one they carry (behind: a read of uncommitted-looking, stale state; the
// runtime guarantees 0).
func AuditEvents(ctx *flow.Context, msgs []flow.Message) error {
	audit := flow.ExternalStateOf(ctx, "/audit")
	row, _ := audit.Get()
	best, _ := row["events"].(int64)
	behind, _ := row["behind"].(int64)
	joined, _ := flow.JoinedStateOf[int64](ctx, Events)
	for _, m := range msgs {
		if n, _ := m.Payload["events"].(int64); joined < n {
			behind++
		}
	}
	audit.Set(flow.Row{"events": max(best, joined), "behind": behind})
	return nil
}
