package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestRunProgressThroughTheBinary runs the word count with the real binary (not a terminal:
// a progress line each period) and finds a progress line with the rows its source read and
// still holds, then the completion.
func TestRunProgressThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--spec", filepath.Join("..", "..", "examples", "word_count", "pipeline.yson"),
		"--data-dir", filepath.Join(t.TempDir(), "data"), "--progress", "1ms")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // by pid, also when the test fails
	if err := cmd.Wait(); err != nil {
		t.Fatalf("yt-flow run: %v\n%s", err, out.String())
	}
	text := out.String()
	if !regexp.MustCompile(`(?m)^\[ *[0-9.]+s\] read [0-9]+ rows, [0-9]+ unread`).MatchString(text) {
		t.Errorf("no progress line with the rows read and unread:\n%s", text)
	}
	if !regexp.MustCompile(`(?m)^pipeline //home/word_count/pipeline completed`).MatchString(text) {
		t.Errorf("no completion line:\n%s", text)
	}
}
