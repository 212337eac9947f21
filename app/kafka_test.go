package app

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	kafkacount "github.com/ytflow/yt-flow/examples/kafka_count"
)

// TestRunKafkaCountExample runs `yt-flow run --spec examples/kafka_count/pipeline.yson
// --kafka-embedded` in process: the embedded server, a kfake broker, the input loaded into
// the source topic; the run stops once the input is consumed and prints, read_committed, the
// latest count of every word, which must be the input's exact counts.
func TestRunKafkaCountExample(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole example")
	}
	example := filepath.Join("..", "examples", "kafka_count")
	data, err := os.ReadFile(filepath.Join(example, "input.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for _, w := range kafkacount.Words(string(data)) {
		want[w]++
	}
	code, stdout, stderr := runCommand(t, 2*time.Minute, "run", "--spec", filepath.Join(example, "pipeline.yson"),
		"--kafka-embedded", "--data-dir", t.TempDir(), "--progress", "0")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, s := range []string{"embedded Kafka (kfake) at 127.0.0.1:", "consumed topic lines and stopped",
		"Kafka topic counts, latest value per key (" + strconv.Itoa(len(want)) + " keys):"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, stdout)
		}
	}
	got := map[string]int64{}
	_, table, _ := strings.Cut(stdout, "Kafka topic counts")
	for _, m := range regexp.MustCompile(`(?m)^  (\S+)\s+([0-9]+)$`).FindAllStringSubmatch(table, -1) {
		n, _ := strconv.ParseInt(m[2], 10, 64)
		got[m[1]] = n
	}
	for w, n := range want {
		if got[w] != n {
			t.Errorf("word %q: printed count %d, want %d", w, got[w], n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("printed %d words, want %d:\n%s", len(got), len(want), stdout)
	}
}

// TestRunKafkaEmbeddedNeedsKafkaSpec: --kafka-embedded with a spec that has no Kafka source
// fails before anything starts, saying what it wants.
func TestRunKafkaEmbeddedNeedsKafkaSpec(t *testing.T) {
	code, _, stderr := runCommand(t, time.Minute, "run", "--spec", filepath.Join("..", "examples", "word_count", "pipeline.yson"),
		"--kafka-embedded", "--data-dir", t.TempDir())
	if code == 0 || !strings.Contains(stderr, "want one Kafka source and a Kafka sink") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}
