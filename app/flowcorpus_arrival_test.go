package app

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/connectors/arrivalorder"
	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

// runCorpusArrival runs the corpus spec of the arrival-order sink, whose counts go to static
// slot tables: after the run it opens the embedded server's data again and reads the output
// directory back — @progress names exactly the tables there are, and each word's largest
// count in them is its count in lines.txt.
func runCorpusArrival(t *testing.T, file, setup string) {
	dataDir := t.TempDir()
	code, stdout, stderr := runCommand(t, 2*time.Minute, "run", "--spec", file, "--setup", setup, "--data-dir", dataDir, "--progress", "0")
	if code != 0 || !strings.Contains(stdout, " completed in ") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := ytlocal.Start(ctx, ytlocal.Config{DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: "//home/corpus/arrival_order_sink/pipeline"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dir, err := arrivalorder.ReadDirectory(ctx, st, "//home/corpus/arrival_order_sink/out")
	if err != nil {
		t.Fatal(err)
	}
	if err := dir.Check(); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, tb := range dir.Tables {
		for _, row := range tb.Rows {
			w, _ := row["word"].(string)
			n, _ := row["count"].(int64)
			got[w] = max(got[w], n)
		}
	}
	assertCounts(t, got, fileWordCounts(t, filepath.Join(corpusRunDir, "lines.txt")))
	if got["the"] != 5 {
		t.Errorf("\"the\" counted %d times, want 5", got["the"])
	}
}
