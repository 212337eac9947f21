// Package flowtest runs a process function the way the yt-flow runtime does, without a cluster,
// so that its outputs, timers and state can be checked in unit tests.
//
// A Harness feeds scripted epochs to one function. In each epoch it fires the due timers (those
// whose trigger the watermark has reached), groups timers and messages by key, invokes the
// function once per key (timers first, then messages) and, when every invocation succeeded,
// applies the results the way an epoch commit does: state writes (a nil value deletes), fired
// timers removed, new timers added, outputs recorded. A failed epoch changes nothing, as a failed
// commit would not.
//
// By default every invocation runs twice on identical input and the two results must be equal:
// swift stages are recomputed after a restart and must produce the same outputs.
//
//	h := flowtest.New(t, "CountWords", flowtest.Options{})
//	r := h.Run(flowtest.Epoch{Messages: []flow.Message{flowtest.Msg("words", key, flow.Row{"word": "a"})}})
//	count, ok := flowtest.Get[int64](h, key, "count")
package flowtest
