// Package flow is the API for user code of yt-flow: process functions, the messages and timers
// they receive, the outputs, timers and state changes they produce, and the registry through
// which a spec's processing_function names them.
//
// The runtime calls a Function once per key and epoch with an Invocation and applies the Result
// atomically with the epoch commit.
package flow
