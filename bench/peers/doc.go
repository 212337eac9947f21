// Package peers runs the same keyed job four ways, side by side, on one in-process Kafka
// broker (franz-go's kfake) and prints one table: records of an input topic (key = one of
// 1,000 keys) → a running count per key → one output record per input (key, count so far).
//
//   - raw: the idempotent producer writes the output records directly (no consumer, no
//     state): the ceiling of the broker and the clients in this process;
//   - franz-go EOS: kgo.GroupTransactSession consume-transform-produce, the counts in memory,
//     exactly-once;
//   - goka: a goka processor with the counts in its group table, at-least-once;
//   - yt-flow: TKafkaSource → Key → RunningCount (keyed state in YTsaurus on the
//     embedded ytlocal, in memory) → TKafkaSink with Kafka transactions, exactly-once.
//
// Every run gets fresh topics with the same partition count and the same seeded input, is
// warmed up (one record per key, waited for at the output), and then measured: msgs/s is N
// over the time from the first measured record produced to the last output readable by a
// read_committed consumer; latency is that consumer's read time minus the time the input
// record was produced (in burst mode this includes the backlog; -rate feeds at a fixed rate
// for latency under load); CPU-µs per message is the process's getrusage delta (producer,
// reader, broker and the job, plus ytlocal for yt-flow) over N. The output of every run is
// verified: the final count of every key exact, and for raw, franz-go and yt-flow the counts
// of each key exactly 1, 2, …, n in order (no duplicate, no gap), read with read_committed.
//
// Run it with
//
//	go test ./bench/peers -run XXX -bench Peers -benchtime 1x [-args -n 50000 -rounds 3 -rate 20000]
//
// (or PEERS_N, PEERS_ROUNDS, PEERS_RATE, PEERS_PARTITIONS in the environment). After each
// yt-flow run it prints the epoch-part breakdown of each computation over the measured run
// (input_fetch, prepare, process, commit, idle and its pacing part, and the sender's push and
// delivery times, from the workers' counters). -jobs may also name yt-flow-before: yt-flow
// with the epoch path of earlier versions (fixed pacing, unbounded top-ups), for before/after
// figures in one run. The package
// keeps goka a dependency of this benchmark only. TestPeersVerify runs all four with a tiny
// input and asserts that every verification passes.
package peers
