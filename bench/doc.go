// Package bench measures yt-flow pipelines end to end: throughput of the word-count
// pipeline (queue → SplitWords → CountWords keyed with state → sorted table + async queue
// sink) in exactly-once and at-least-once mode against a raw SDK baseline, end-to-end
// latency at a steady input rate, rows written to YTsaurus per input message, and the time
// from kill -9 of a worker process to output resuming.
//
// The benchmarks are opt-in (`go test ./bench/ -run XXX -bench Pipeline -benchtime 1x`);
// plain `go test ./bench/` runs only fast tests of the helpers. BENCHMARKS.md shows the
// current figures and their commands; bench/results/ keeps every earlier run.
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
// # Knobs of BenchmarkPipeline
//
// `BENCH_MESSAGES` (100000), `BENCH_WORDS` (1000), `BENCH_WORKERS` (2), `BENCH_PARTITIONS` (2:
// input tablets), `BENCH_COUNT_PARTITIONS` (`BENCH_PARTITIONS`: partitions of the count;
// `paired_count4` runs `paired` with 4, the e2e fault test's shape, unless this is 4),
// `BENCH_MAX_ROWS_PER_BATCH` (unset: the spec default, 1000), `BENCH_RATE` (msgs/s of
// `latency`, `latency_processes` and `recovery`; by default `latency` runs at half of this
// run's exactly-once rate (200 when that was not measured), and `latency_processes` and
// `recovery`, which run on the processes, at half of the counted rate of
// `exactly_once_processes`; with `BENCH_RATE` set, `latency_half_counted` does not run),
// `BENCH_LOW_RATE` (100), `BENCH_LATENCY_SECONDS` (15), `BENCH_MEMORY=1` (ytlocal without
// `DataDir`; `paired` uses the same servers as `raw` and `exactly_once`), `BENCH_TCP=1` (the
// in-process servers are reached over loopback TCP instead of by direct calls,
// `ytlocal.Config.InProcess`, which `yt-flow run` uses and the benchmark therefore does by
// default, raw included), `BENCH_WORKER_LOG=1` (the workers' and the controller's info logs on
// stderr, among them the controller's layout events and the epoch phase times every job logs
// when it stops: `input_fetch_ms`, `prepare_ms`, `process_ms`, `commit_ms`, `idle_ms`),
// `BENCH_HEAP=FILE` (a heap profile of the in-process latency runs, taken after a forced
// collection at the end of the measured window), `BENCH_DATAPATH_PROFILE=PREFIX` (a CPU
// profile of each finite in-process run from `Start` to the check of the sinks, in
// `PREFIX.<unix ns>`; merge them with `go tool pprof -proto`), `BENCH_CPU_SAMPLE=1` (logs the
// process's CPU use per 100 ms of each finite in-process run, in % of one core). Plain `go
// test ./bench/` runs only the fast tests (`TestCountingProxy`, `TestCountRows`,
// `FuzzCountRows` seeds, `TestSpecsEmptyBatchBackoff`, `TestPipelineSmoke`, `TestLoadSmoke`;
// the last two skip with `-short`).
//
// # Knobs of BenchmarkSessions
//
// `BENCH_SESSIONS_EVENTS` (50000), `BENCH_SESSIONS_USERS` (1000), and those of "Pipeline":
// `BENCH_WORKERS` (2), `BENCH_RATE` (events/s of `latency`; default half of this run's
// `exactly_once_compact` sum-commit rate), `BENCH_LOW_RATE` (100), `BENCH_LATENCY_SECONDS`
// (15), `BENCH_MEMORY=1`. `go test ./bench/` runs `TestSessionsSpecs` (every variant parses;
// the dedup and mode knobs land on `sum`), `TestRequestPath` and `TestTableBreakdown` (the
// per-table tally), `TestSessionsCheckMismatch` (the output checks reject a wrong output) and
// `TestSessionsSmoke` (400 events: raw, each finite mode through both counting proxies with
// its output exact, its dedup rows in the index asked for and every written row attributed to
// a table, and a steady load whose every event is committed at the sum stage exactly once;
// skipped with `-short`).
//
// bench/peers compares yt-flow with what a Go user would otherwise run (raw produce,
// franz-go's exactly-once GroupTransactSession, goka) on one Kafka job, side by side.
package bench
