package totals

import (
	"fmt"

	"github.com/ytflow/yt-flow/flow"
)

func init() {
	flow.Register("KeepBuckets", flow.Batch(KeepBuckets))
}

// Buckets is the name of the external state KeepBuckets keeps: a table keyed by hash, user
// and bucket, so a user has several rows, one per bucket.
const Buckets = "/buckets"

// BucketWidth is the width of an amount bucket.
const BucketWidth = 25

// KeepBuckets handles the events {user; amount} of one user in arrival order, in the
// external state "/buckets" whose table has the further key column bucket: a non-negative
// amount adds to the row {bucket = amount / 25; count; total}, except that an amount that
// is a multiple of 7 deletes its bucket's row instead; a negative amount deletes all the
// user's rows.
func KeepBuckets(ctx *flow.Context, msgs []flow.Message) error {
	b := flow.ExternalStateOf(ctx, Buckets)
	for _, m := range msgs {
		amount, ok := m.Payload["amount"].(int64)
		if !ok {
			return fmt.Errorf("message %s: amount %v (%T) is not an int64", m.MessageID, m.Payload["amount"], m.Payload["amount"])
		}
		if amount < 0 {
			b.Delete()
			continue
		}
		bucket := amount / BucketWidth
		if amount%7 == 0 {
			b.DeleteRow(flow.Row{"bucket": bucket})
			continue
		}
		row := flow.Row{"bucket": bucket, "count": int64(0), "total": int64(0)}
		for _, r := range b.Rows() {
			if r["bucket"] == bucket {
				row = r
			}
		}
		row["count"] = row["count"].(int64) + 1
		row["total"] = row["total"].(int64) + amount
		b.SetRow(row)
	}
	return nil
}
