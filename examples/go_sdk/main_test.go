package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"
)

// TestRunExample runs the program as its doc comment says (`--config config.yson`), in
// process on a fresh data folder: the pipeline completes and the printed ten most frequent
// words are those counted directly from input.txt. --validate-only validates the runner config
// with the program's streams added.
func TestRunExample(t *testing.T) {
	p := newPipeline()

	var out, errb bytes.Buffer
	if code := p.Main(context.Background(), []string{"--config", "config.yson", "--validate-only"}, &out, &errb); code != 0 || out.String() != "config.yson: ok\n" {
		t.Fatalf("--validate-only: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out.Reset()
	errb.Reset()
	code := p.Main(ctx, []string{"--config", "config.yson", "--data-dir", t.TempDir(), "--progress", "0"}, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "pipeline //home/go_sdk/pipeline completed") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	_, table, ok := strings.Cut(out.String(), "ten most frequent words:\n")
	if !ok {
		t.Fatalf("no result in the output:\n%s", out.String())
	}
	var got []string
	for _, line := range strings.Split(table, "\n")[1:] {
		if f := strings.Fields(line); len(f) == 2 {
			got = append(got, f[0]+" "+f[1])
		}
	}
	if want := topWords(t); strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("top words\n got %v\nwant %v", got, want)
	}
}

// topWords counts the words of input.txt as splitLines splits them: the ten most frequent,
// by count descending, then word.
func topWords(t *testing.T) []string {
	data, err := os.ReadFile("input.txt")
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, w := range strings.FieldsFunc(strings.ToLower(string(data)), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		counts[w]++
	}
	words := make([]string, 0, len(counts))
	for w := range counts {
		words = append(words, w)
	}
	sort.Slice(words, func(i, j int) bool {
		if counts[words[i]] != counts[words[j]] {
			return counts[words[i]] > counts[words[j]]
		}
		return words[i] < words[j]
	})
	var out []string
	for _, w := range words[:min(10, len(words))] {
		out = append(out, fmt.Sprintf("%s %d", w, counts[w]))
	}
	return out
}
