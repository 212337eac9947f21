package app

import (
	"context"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ytflow/yt-flow/connectors/random"
	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/internal/chserver"
	"github.com/ytflow/yt-flow/spec"
)

// corpusDir holds the corpus specs; corpusRunDir their setup files and inputs.
const (
	corpusDir    = "../spec/testdata/flow"
	corpusRunDir = corpusDir + "/run"
)

// corpusPrepare starts what the corpus spec name talks to besides the embedded server and
// returns the replacements of its addresses in the spec text and the check of a completed
// run's stdout.
func corpusPrepare(t *testing.T, name string) (map[string]string, func(t *testing.T, stdout string)) {
	t.Helper()
	switch name {
	case "http_sink":
		got := &corpusHTTP{}
		srv := httptest.NewServer(got)
		t.Cleanup(srv.Close)
		return map[string]string{"http://127.0.0.1:8080/ingest": srv.URL + "/ingest"}, func(t *testing.T, _ string) {
			if b := got.body("the"); b != "the=5" {
				t.Errorf("the HTTP server's last body for \"the\" is %q, want the=5 (bodies: %v)", b, got.all())
			}
		}
	case "clickhouse_sink":
		return corpusClickHouse(t)
	case "static_table_source":
		// The tables of 2026 hold lines.txt and static_more.txt; 2025-12-31 is filtered out.
		want := fileWordCounts(t, filepath.Join(corpusRunDir, "lines.txt"), filepath.Join(corpusRunDir, "static_more.txt"))
		excluded := fileWordCounts(t, filepath.Join(corpusRunDir, "static_excluded.txt"))
		return nil, func(t *testing.T, stdout string) {
			got := printedCounts(t, stdout)
			assertCounts(t, got, want)
			for w := range excluded {
				if _, ok := want[w]; !ok && got[w] != 0 {
					t.Errorf("word %q of the excluded table 2025-12-31 was counted %d times", w, got[w])
				}
			}
		}
	case "state_joiner":
		// Every word's largest joined count is its count in lines.txt, and no message read a
		// state below the count it carried.
		want := fileWordCounts(t, filepath.Join(corpusRunDir, "lines.txt"))
		return nil, func(t *testing.T, stdout string) {
			assertCounts(t, printedCounts(t, stdout), want)
			if _, stale, _ := strings.Cut(stdout, "stale reads:\n"); !strings.HasPrefix(stale, "  (no rows)") {
				t.Errorf("stale joined reads:\n%s", stale)
			}
		}
	case "at_most_once_swift_source":
		// Every output row, each printed once: at most once, and without a failure or a full
		// queue exactly the input (word_counts.yson).
		want := map[string]int64{"the": 5, "and": 3, "a": 2, "flow": 1}
		return nil, func(t *testing.T, stdout string) { assertCounts(t, printedCounts(t, stdout), want) }
	case "random_source":
		want := randomWordCounts(t, filepath.Join(corpusDir, "random_source.yson"))
		return nil, func(t *testing.T, stdout string) { assertCounts(t, printedCounts(t, stdout), want) }
	}
	return nil, func(t *testing.T, stdout string) {
		top := printedTopWords(t, stdout, "top words")
		if len(top) == 0 || top[0] != (wordCount{"the", 5}) {
			t.Errorf("top words %v, want (the 5) first\nstdout:\n%s", top, stdout)
		}
	}
}

// fileWordCounts counts the words (corpusWords) of the lines of files.
func fileWordCounts(t *testing.T, files ...string) map[string]int64 {
	t.Helper()
	counts := map[string]int64{}
	for _, f := range files {
		for _, line := range strings.Split(mustRead(t, f), "\n") {
			for _, w := range corpusWords(flow.Row{"text": line}) {
				counts[w]++
			}
		}
	}
	if counts["the"] == 0 && len(files) > 0 && strings.HasSuffix(files[0], "lines.txt") {
		t.Fatalf("%s has no \"the\"", files[0])
	}
	return counts
}

// randomWordCounts counts the words of every row the random source of spec file emits: its
// rows depend only on its parameters, the partition and the offset (random.Generate).
func randomWordCounts(t *testing.T, file string) map[string]int64 {
	t.Helper()
	cfg, err := spec.ParseConfigFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := cfg.Spec.Computations["split"].Sources["lines"].Params.(*random.Params)
	if !ok || !p.Finite || p.PartitionMessageCount == 0 {
		t.Fatalf("the random source of %s is not finite: %+v", file, p)
	}
	counts := map[string]int64{}
	for part := range p.PartitionCount {
		for off := range p.PartitionMessageCount {
			for _, w := range corpusWords(random.Generate(p, part, off)) {
				counts[w]++
			}
		}
	}
	if len(counts) == 0 {
		t.Fatalf("the random rows of %s hold no words", file)
	}
	return counts
}

// printedCounts reads the "top words" result of a run as word → count (each word once).
func printedCounts(t *testing.T, stdout string) map[string]int64 {
	t.Helper()
	got := map[string]int64{}
	for _, wc := range printedTopWords(t, stdout, "top words") {
		if _, dup := got[wc.word]; dup {
			t.Errorf("word %q printed twice", wc.word)
		}
		got[wc.word] = wc.count
	}
	return got
}

// assertCounts wants got to equal want, word by word.
func assertCounts(t *testing.T, got, want map[string]int64) {
	t.Helper()
	for w, n := range want {
		if got[w] != n {
			t.Errorf("word %q: count %d, want %d", w, got[w], n)
		}
	}
	for w, n := range got {
		if _, ok := want[w]; !ok {
			t.Errorf("word %q counted %d times, want none", w, n)
		}
	}
}

// corpusClickHouse starts the two servers of clickhouse_sink.yson's shards, creates
// flow.counts on each (a MergeTree table that deduplicates by insert token) and checks after
// the run that each word lives on exactly one of them, its counts 1..N each once (N its
// count in lines.txt), and that both shards hold words.
func corpusClickHouse(t *testing.T) (map[string]string, func(t *testing.T, stdout string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	var conns []clickhouse.Conn
	subst := map[string]string{}
	for i := range 2 {
		srv := chserver.Start(t)
		conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{srv.TCPAddr}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		for _, q := range []string{"CREATE DATABASE flow",
			"CREATE TABLE flow.counts (hash Nullable(UInt64), word Nullable(String), count Nullable(Int64)) ENGINE = MergeTree ORDER BY tuple() SETTINGS non_replicated_deduplication_window = 1000"} {
			if err := conn.Exec(ctx, q); err != nil {
				t.Fatalf("ClickHouse server %s: %s: %v", srv.TCPAddr, q, err)
			}
		}
		conns = append(conns, conn)
		subst[fmt.Sprintf("ch%d.example.com", i+1)] = srv.TCPAddr
	}
	want := fileWordCounts(t, filepath.Join(corpusRunDir, "lines.txt"))
	return subst, func(t *testing.T, _ string) {
		where := map[string]int{} // word → shard
		for i, conn := range conns {
			rows, err := conn.Query(ctx, "SELECT ifNull(word, ''), arraySort(groupArray(ifNull(count, 0))) FROM flow.counts GROUP BY word")
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for rows.Next() {
				var word string
				var counts []int64
				if err := rows.Scan(&word, &counts); err != nil {
					t.Fatal(err)
				}
				n++
				if j, ok := where[word]; ok {
					t.Errorf("word %q is on shard%d and shard%d", word, j+1, i+1)
				}
				where[word] = i
				if !isSubsequenceEndingAt(counts, want[word]) {
					t.Errorf("shard%d word %q: counts %v, want strictly increasing (each once), ending at %d", i+1, word, counts, want[word])
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			rows.Close()
			if n == 0 {
				t.Errorf("shard%d holds no word", i+1)
			}
		}
		if got := slices.Sorted(maps.Keys(where)); !slices.Equal(got, slices.Sorted(maps.Keys(want))) {
			t.Errorf("words in ClickHouse %v, want %v", got, slices.Sorted(maps.Keys(want)))
		}
	}
}

// isSubsequenceEndingAt tells whether counts strictly increase and end at last: a word's
// running counts, each emitted once (a batch of several occurrences emits one total).
func isSubsequenceEndingAt(counts []int64, last int64) bool {
	if len(counts) == 0 || counts[len(counts)-1] != last {
		return false
	}
	for i := 1; i < len(counts); i++ {
		if counts[i] <= counts[i-1] {
			return false
		}
	}
	return counts[0] >= 1
}

// runCorpusKafka runs kafka.yson against a Kafka broker (kfake) of the test: lines.txt is
// loaded into topic events (2 partitions), the spec's bootstrap server is replaced by the
// broker's address, and the run goes on until a read_committed reader of topic counts sees
// every word's final count; then it is interrupted and stops gracefully. Every word's counts
// in the topic strictly increase and end at its count in lines.txt (each total written once:
// no duplicate from a replay), the=5 among them.
func runCorpusKafka(t *testing.T, data, setup string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for topic, partitions := range map[string]int32{"events": 2, "counts": 1} {
		if resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil || resp.Err != nil {
			t.Fatalf("create topic %s: %v %v", topic, err, resp.Err)
		}
	}
	var recs []*kgo.Record
	for _, line := range strings.Split(mustRead(t, filepath.Join(corpusRunDir, "lines.txt")), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			recs = append(recs, &kgo.Record{Topic: "events", Partition: int32(len(recs) % 2), Value: []byte(line)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	want := fileWordCounts(t, filepath.Join(corpusRunDir, "lines.txt"))
	if want["the"] != 5 {
		t.Fatalf("lines.txt counts the %d times, want 5", want["the"])
	}

	if !strings.Contains(data, `"localhost:9092"`) {
		t.Fatal("kafka.yson does not name bootstrap server localhost:9092")
	}
	specFile := filepath.Join(t.TempDir(), "kafka.yson")
	if err := os.WriteFile(specFile, []byte(strings.Replace(data, `"localhost:9092"`, strconv.Quote(strings.Join(brokers, ",")), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	counts := newCountsReader(t, brokers)
	defer counts.cl.Close()
	runCtx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	var stdout, stderr syncBuffer
	exit := make(chan int, 1)
	go func() {
		env := &environ{stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
		exit <- runMain(runCtx, env, []string{"run", "--spec", specFile, "--setup", setup, "--data-dir", t.TempDir(), "--progress", "0"})
	}()
	code := -1
	for code < 0 && !maps.Equal(counts.latest(), want) {
		select {
		case code = <-exit:
		case <-ctx.Done():
			t.Fatalf("the counts did not become final within 2 minutes (latest %v)\nstdout:\n%s\nstderr:\n%s", counts.latest(), stdout.String(), stderr.String())
		default:
			counts.poll(ctx, 200*time.Millisecond)
		}
	}
	if code < 0 {
		interrupt()
		code = <-exit
	}
	if code != exitInterrupted || !strings.Contains(stdout.String(), "pipeline stopped") {
		t.Fatalf("exit %d (want %d after the interrupt, stopped gracefully)\nstdout:\n%s\nstderr:\n%s", code, exitInterrupted, stdout.String(), stderr.String())
	}
	counts.drain(ctx)
	for w, n := range want {
		if !isSubsequenceEndingAt(counts.values[w], n) {
			t.Errorf("topic counts, key %q: values %v, want strictly increasing (each total once), ending at %d", w, counts.values[w], n)
		}
	}
	if len(counts.values) != len(want) {
		t.Errorf("topic counts has %d keys, want %d: %v", len(counts.values), len(want), counts.values)
	}
}

// countsReader reads topic counts from the start, read_committed: the values of each key,
// in order.
type countsReader struct {
	t      *testing.T
	cl     *kgo.Client
	values map[string][]int64
	next   int64 // the offset after the last record read
}

func newCountsReader(t *testing.T, brokers []string) *countsReader {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("counts"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	return &countsReader{t: t, cl: cl, values: map[string][]int64{}}
}

// poll reads what arrives within wait; it returns the number of records read.
func (c *countsReader) poll(ctx context.Context, wait time.Duration) int {
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	n := 0
	c.cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
		v, err := strconv.ParseInt(string(r.Value), 10, 64)
		if err != nil {
			c.t.Errorf("topic counts offset %d: value %q is not a count", r.Offset, r.Value)
		}
		c.values[string(r.Key)] = append(c.values[string(r.Key)], v)
		c.next, n = r.Offset+1, n+1
	})
	return n
}

// drain reads the rest of the topic, once no transaction is open: up to its end, less the
// last transaction's commit marker; an aborted tail, which read_committed skips, ends it after
// three empty polls.
func (c *countsReader) drain(ctx context.Context) {
	ends, err := kadm.NewClient(c.cl).ListEndOffsets(ctx, "counts")
	if err != nil {
		c.t.Fatal(err)
	}
	var end int64
	ends.Each(func(o kadm.ListedOffset) { end = o.Offset })
	for empty := 0; empty < 3 && c.next < end-1 && ctx.Err() == nil; {
		if c.poll(ctx, time.Second) == 0 {
			empty++
		}
	}
}

// latest is each key's last value.
func (c *countsReader) latest() map[string]int64 {
	out := map[string]int64{}
	for k, v := range c.values {
		out[k] = v[len(v)-1]
	}
	return out
}
