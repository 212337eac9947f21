// Package bench measures yt-flow pipelines end to end: throughput of the word-count
// pipeline (queue → SplitWords → CountWords keyed with state → sorted table + async queue
// sink) in exactly-once and at-least-once mode against a raw SDK baseline, end-to-end
// latency at a steady input rate, rows written to YTsaurus per input message, and the time
// from kill -9 of a worker process to output resuming.
//
// The benchmarks are opt-in (`go test ./bench/ -run XXX -bench Pipeline -benchtime 1x`);
// plain `go test ./bench/` runs only fast tests of the helpers. BENCHMARKS.md records the
// figures and the exact commands.
//
// The helpers here are the reusable parts: Runtime starts ytlocal, the controller and
// workers in one process; Pipeline creates the word-count tables and spec; CountingProxy is
// an HTTP reverse proxy in front of the server that tallies commands and the rows their
// request bodies carry.
//
// BenchmarkSessions does the same for the three-stage sessions pipeline of
// examples/sessions (queue source → swift map → keyed transform with state and timers →
// async queue sink): Sessions creates its tables and spec (compact or full dedup index,
// exactly-once or at-least-once), SessionsLoad feeds it at a steady rate and observes each
// event's commit at the keyed stage, and TableCounter splits the written rows by table.
//
// bench/peers compares yt-flow with what a Go user would otherwise run (raw produce,
// franz-go's exactly-once GroupTransactSession, goka) on one Kafka job, side by side.
package bench
