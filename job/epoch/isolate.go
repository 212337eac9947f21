package epoch

import "github.com/ytflow/yt-flow/flow"

// Failed is a message or a due timer that Isolate set aside: its invocation fails on its own.
type Failed struct {
	// Group is the index of its group in the plan; Key its key.
	Group int
	Key   flow.Key
	// Message is the failing message, nil for a timer; Timer the failing timer, nil for a
	// message.
	Message *flow.Message
	Timer   *flow.Timer
}

// Isolate splits the groups of an epoch whose invocations kept failing, so that the failing
// messages and timers are set aside and the rest is processed. fails reports whether invoking
// a group fails; Isolate asks it, in order:
//
//  1. about each group whole, in plan order: a group that does not fail is kept as it is;
//  2. of a group that fails, about each of its due timers alone, then each of its messages
//     alone, in order (each a group of the same key holding only it), with the key's state
//     as loaded: those that fail alone are set aside;
//  3. about the group without them: if it still fails (its messages fail only together),
//     all of its timers and messages are set aside.
//
// It returns groups of the same length and order as groups (BuildCommit takes them with
// one result per group): a group is kept whole, or copied without what was set aside, and
// failed lists what was set aside in the order found. A copy keeps the group's bookkeeping:
// its timers are fired and its source row's offset advances with the commit, and the plan's
// Fresh (acknowledged and registered in the dedup index by BuildCommit) is unchanged, so the
// failing messages are acknowledged by the same commit. A group emptied of all it held is
// to be given a nil result, not invoked.
//
// Isolate is a pure function of groups and fails: for a deterministic fails (the same failing
// set) it sets aside the same messages on every attempt (TestIsolateDeterministic).
func Isolate(groups []*Group, fails func(*Group) bool) (kept []*Group, failed []Failed) {
	kept = make([]*Group, len(groups))
	for gi, g := range groups {
		if !fails(g) {
			kept[gi] = g
			continue
		}
		rest := *g
		rest.Timers, rest.Messages = nil, nil
		var out []Failed
		for i := range g.Timers {
			one := *g
			one.Timers, one.Messages = g.Timers[i:i+1:i+1], nil
			if fails(&one) {
				out = append(out, Failed{Group: gi, Key: g.Key, Timer: &g.Timers[i]})
			} else {
				rest.Timers = append(rest.Timers, g.Timers[i])
			}
		}
		for i := range g.Messages {
			one := *g
			one.Timers, one.Messages = nil, g.Messages[i:i+1:i+1]
			if fails(&one) {
				out = append(out, Failed{Group: gi, Key: g.Key, Message: &g.Messages[i]})
			} else {
				rest.Messages = append(rest.Messages, g.Messages[i])
			}
		}
		if (len(rest.Timers) > 0 || len(rest.Messages) > 0) && fails(&rest) {
			// They fail only together: set the whole group aside.
			out = out[:0]
			for i := range g.Timers {
				out = append(out, Failed{Group: gi, Key: g.Key, Timer: &g.Timers[i]})
			}
			for i := range g.Messages {
				out = append(out, Failed{Group: gi, Key: g.Key, Message: &g.Messages[i]})
			}
			rest.Timers, rest.Messages = nil, nil
		}
		kept[gi] = &rest
		failed = append(failed, out...)
	}
	return kept, failed
}

// Empty reports whether g holds nothing to invoke (Isolate set all of it aside).
func (g *Group) Empty() bool { return len(g.Timers) == 0 && len(g.Messages) == 0 }
