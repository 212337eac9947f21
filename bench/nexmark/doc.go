// Package nexmark runs Nexmark, the field's common streaming benchmark, as yt-flow pipelines:
// it generates the Nexmark event stream into a queue on the embedded server (ytlocal, in
// memory, in this process), runs each query exactly-once with a controller and workers in
// this process (as `yt-flow run` does), and verifies every query's output against a model
// computed here from the same events: the output queue must hold exactly the model's rows,
// each as often as the model has it.
//
// # The events
//
// Generate follows the Nexmark reference generator's shapes: of every 50 events 1 is a person,
// 3 are auctions and 46 are bids; person and auction ids count up from 1000; an auction's
// seller and a bid's bidder are mostly the current "hot" person (3 in 4) and a bid's auction
// the current hot auction (1 in 2), else one of the active people or in-flight auctions (ids
// may run up to 10 ahead of the last generated); prices are 10^(6u) dollars in cents; a bid's
// channel is one of 4 hot ones half the time, else one of 10,000; each event pads its extra
// column to Nexmark's average sizes (person 200, auction 500, bid 100 bytes) counted as the
// reference counts them (a bid's channel and url come on top). Event i is drawn from a generator seeded by (seed, i): the stream is deterministic by
// seed. date_time is the event time in milliseconds, 1/EventsPerSecond apart (default 10,000
// events a second, Nexmark's first_event_rate). One input queue holds all kinds (column
// event_type: 0 person, 1 auction, 2 bid); event i goes to tablet i mod tablets, and after the
// last event each tablet gets an end marker (event_type 3) an hour of event time later, which
// every query drops: it moves the event watermark past the last windows.
//
// # The queries
//
// Every query starts with a swift source (TSwiftOrderedSourceComputation) running the query's
// function on each input row. The query's result goes to an output queue through a sync queue
// sink, written in the transaction of the epoch that commits it (on the source for q0–q2, on
// the keyed transform for q3, q5 and q7): exactly once.
//
//   - q0, passthrough: every bid as {auction, bidder, price, date_time, extra}; the sink is on
//     the source.
//   - q1, map: the same with the price in euros (price × 0.908, a double).
//   - q2, filter: {auction, price} of the bids whose auction id is a multiple of 123.
//   - q3, local item suggestion: a join on keyed state. The source keeps the people living in
//     OR, ID or CA and the auctions of category 10; a transform keyed by person id (the
//     auction's seller) keeps the person and the auctions waiting for it, and emits
//     {name, city, state, id} for every auction of a known seller, whichever came first.
//   - q5, hot items: for each sliding window of 10 s every 2 s (event time), the auctions with
//     the most bids, {window_start, auction, num}. The bids go to one key, which counts them
//     in 2-second panes and sets an event_time timer at each window end: when the watermark
//     passes it the window's 5 panes are summed and the maximum emitted.
//   - q7, highest bid: for each tumbling window of 10 s, the bids with the window's highest
//     price. A transform keyed by window start keeps the best bids and emits them from its
//     event_time timer at the window's end.
//
// # Measures
//
// A burst run writes all events before the pipeline starts (the source finite); a live run
// writes them at Config.Rate events a second while it runs. A run ends when the source has
// committed past every input (the input consumer's offsets) and the output holds the model's
// row count; then the output is read on (burst: until the pipeline completed; live: for a
// second) and verified. events/s is the events over the wall time from the start (burst) or
// the first write (live) to that end; events/s per core is the events over this process's CPU
// time (getrusage) in the same span — which includes the embedded server, the writer and the
// reader besides the pipeline. Latency (live runs) is, per output row, from the write of the
// input that made the row computable — the bid (q0–q2), the later of person and auction (q3),
// for a window the first input that moves every tablet's watermark past its end (q5, q7) — to
// the reader first seeing the row (the output queue is polled every 10 ms).
//
// Run it with
//
//	go test ./bench/nexmark/ -run XXX -bench Nexmark -benchtime 1x [-args -events 100000 -rate 10000 -burst=false -queries q0,q5 -seed 1]
//
// (or NEXMARK_EVENTS, NEXMARK_RATE, NEXMARK_BURST=0, NEXMARK_QUERIES, NEXMARK_SEED in the
// environment; -rate 0 skips the live runs, -burst=false the burst runs; NEXMARK_PROFILE=PREFIX
// writes a CPU profile of each run's measured span to PREFIX-<query>-<rate>.pprof; -trace or
// NEXMARK_TRACE=1 measures the watermark's path of the live q5 and q7 runs: for each window the
// medians of input written → source statuses report it → controller publishes it → output
// read, from statuses and attributes read every 10 ms, see trace.go). It prints
// one table with Flink 1.13's published figures beside yt-flow's (exactly-once checkpoints
// every 3 minutes, events/s per core: 155K on q0, 12–35K on q4/q5/q7/q9; the nexmark/nexmark
// project's README; other hardware, indicative only). Figures: bench/results/2026-12-06-nexmark.md.
// Plain `go test ./bench/nexmark/` runs every query on 5,000 events and a live q7 run and
// asserts that each verifies (TestQueriesVerify, TestLiveRunVerifies; skipped with -short),
// besides table tests of the generator, the model and the verification.
package nexmark
