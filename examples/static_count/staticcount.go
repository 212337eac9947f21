// Package staticcount holds the process function of the static_count example
// (examples/static_count): hourly log tables, read by the static table source, counted per
// user into a sorted table. Importing the package registers CountVisits.
package staticcount

import (
	"fmt"

	"github.com/ytflow/yt-flow/flow"
)

func init() {
	flow.Register("CountVisits", flow.Batch(CountVisits))
}

// CountVisits handles all log rows of one user (key [hash, user], hash = farm_hash(user)) at
// once: it adds their number to the int64 state "visits" and emits the new total as
// {hash, user, visits} to stream visits — one output per key per invocation.
func CountVisits(ctx *flow.Context, msgs []flow.Message) error {
	key := ctx.Key()
	if len(key) != 2 {
		return fmt.Errorf("key %v: want [hash, user]", key)
	}
	hash, ok1 := key[0].(uint64)
	user, ok2 := key[1].(string)
	if !ok1 || !ok2 {
		return fmt.Errorf("key %v: want [hash uint64, user string], got [%T, %T]", key, key[0], key[1])
	}
	visits := flow.StateOf[int64](ctx, "visits")
	n, _ := visits.Get()
	n += int64(len(msgs))
	visits.Set(n)
	ctx.AddMessage("visits", flow.Row{"hash": hash, "user": user, "visits": n})
	return nil
}
