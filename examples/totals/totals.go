// Package totals holds the process functions of the totals example (examples/totals): a
// transform that keeps per-user totals in an external state table — a sorted dynamic table
// the user owns — and a function that re-emits that table's rows, read every cycle by a
// service log source, as a report. KeepCappedTotals also reads a joined external state.
// Importing the package registers KeepTotals, KeepCappedTotals and ReportTotals.
package totals

import (
	"fmt"

	"github.com/ytflow/yt-flow/flow"
)

func init() {
	flow.Register("KeepTotals", flow.Batch(KeepTotals))
	flow.Register("KeepCappedTotals", flow.Batch(KeepCappedTotals))
	flow.Register("ReportTotals", flow.PerMessage(ReportTotals))
}

// State is the name of the external state KeepTotals keeps (external_state_managers).
const State = "/totals"

// KeepTotals handles the events {user; amount} of one user (key [hash, user]) in arrival
// order: a non-negative amount adds to the user's row {total; events} of the external state
// "/totals", a negative one closes the account (deletes the row). It emits nothing: the table
// is the result.
func KeepTotals(ctx *flow.Context, msgs []flow.Message) error {
	totals := flow.ExternalStateOf(ctx, State)
	for _, m := range msgs {
		amount, ok := m.Payload["amount"].(int64)
		if !ok {
			return fmt.Errorf("message %s: amount %v (%T) is not an int64", m.MessageID, m.Payload["amount"], m.Payload["amount"])
		}
		if amount < 0 {
			totals.Delete()
			continue
		}
		row, _ := totals.Get()
		total, _ := row["total"].(int64)
		events, _ := row["events"].(int64)
		totals.Set(flow.Row{"total": total + amount, "events": events + 1})
	}
	return nil
}

// Caps is the name of the joined external state KeepCappedTotals reads
// (external_state_joiners): a row {cap} per user, or none.
const Caps = "/caps"

// KeepCappedTotals is KeepTotals with a user's total capped at the cap its row of the joined
// external state "/caps" holds (no row: no cap). It reads that table and never writes it.
func KeepCappedTotals(ctx *flow.Context, msgs []flow.Message) error {
	if err := KeepTotals(ctx, msgs); err != nil {
		return err
	}
	limit, ok := flow.JoinedExternalStateOf(ctx, Caps)
	if !ok {
		return nil
	}
	totals := flow.ExternalStateOf(ctx, State)
	row, ok := totals.Get()
	if c, isInt := limit["cap"].(int64); ok && isInt && row["total"].(int64) > c {
		row["total"] = c
		totals.Set(row)
	}
	return nil
}

// ReportTotals re-emits one row {hash; user; total; events} of the totals table, as a
// service log source reads it, to stream "report" with the start of the source's cycle (the
// message's event time, microseconds) as cycle.
func ReportTotals(ctx *flow.Context, m *flow.Message) error {
	ctx.AddMessage("report", flow.Row{
		"hash": m.Payload["hash"], "user": m.Payload["user"], "total": m.Payload["total"], "events": m.Payload["events"],
		"cycle": m.EventTimestamp,
	})
	return nil
}
