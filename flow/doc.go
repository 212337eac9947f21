// Package flow is the API for user code of yt-flow: process functions, the messages and timers
// they receive, the outputs, timers and state changes they produce, and the registry through
// which a spec's processing_function names them.
//
// # Writing a function
//
// A process function is built from handlers with the adapters PerMessage, Batch and PerTimer,
// or a Process literal that combines a message handler with a timer handler:
//
//	func countWords(ctx *flow.Context, msgs []flow.Message) error {
//		count := flow.StateOf[int64](ctx, "count")
//		n, _ := count.Get()
//		n += int64(len(msgs))
//		count.Set(n)
//		ctx.AddMessage("counts", flow.Row{"word": ctx.Key()[1], "count": n})
//		return nil
//	}
//
// The Context gives the invocation's key (nil in source computations), its parameters
// (Parameters, or ParamsOf for a typed view) and time (Now), collects outputs (AddMessage) and
// timers (AddTimer), and narrows lineage (WithParentIDs) or sets the event time of what is
// added through it (WithEventTimestamp). StateOf gives typed access to the key's named states,
// stored as YSON; an empty value is an absent state. In a source computation the same calls
// reach the partition's state.
//
// # Registering
//
// Register the function under the name the spec's processing_function uses, from an init
// function, so that importing the package is enough:
//
//	func init() { flow.Register("CountWords", flow.Batch(countWords)) }
//
// # What the runtime does
//
// The runtime calls a Function once per key and epoch with an Invocation (due timers first, then
// the messages in arrival order) and applies the Result atomically with the epoch commit: outputs,
// new timers, state writes, the deletion of the fired timers and the acknowledgement of the
// inputs commit together or not at all. A returned error or a panic (recovered into an error
// wrapping ErrUserPanic) discards the invocation's whole result and the epoch is retried.
// Once the runtime has built the epoch's write set from the results it releases them
// (Result.Release), and later invocations reuse their memory. A process function never holds a
// Result; a payload it passed to AddMessage is the runtime's from then on.
//
// # Determinism
//
// Swift stages keep no outputs: after a restart they are recomputed, and the recomputed outputs
// must be the ones produced before, or downstream deduplication cannot recognise them. So a
// process function must be a function of its invocation: read time only from Context.Now, draw
// no random numbers, call no services whose answers change, and do not let map iteration order
// decide the order or content of outputs. Transform stages tolerate nondeterminism (exactly one
// attempt is committed), but outputs that differ between attempts are still surprising, and
// side effects outside the epoch (HTTP calls, files) may run more than once. Package flowtest
// runs every invocation twice and fails on differing results.
//
// # Testing
//
// Package flowtest runs a function over scripted epochs the way the runtime does, keeping state
// and timers between epochs, and records outputs, timers and state for assertions.
package flow
