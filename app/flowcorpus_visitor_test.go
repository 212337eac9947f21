package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

// The visit-only computation of spec/testdata/flow/key_visitor.yson (a companion computation:
// the function registered under its id): every visit adds 1 to the key's count.
func init() {
	flow.Register("visitor", flow.Process{OnVisit: func(ctx *flow.Context, v *flow.Visit) error {
		st := flow.StateOf[int64](ctx, "count")
		n, _ := st.Get()
		st.Set(n + 1)
		return nil
	}})
}

var embeddedAddr = regexp.MustCompile(`embedded YTsaurus at (\S+),`)

// runCorpusKeyVisitor runs the key visitor corpus spec, a visit-only computation on two
// partitions over 200 seeded keys, with a period of 1 s instead of a day, twice on the same
// data (the second run resumes the passes where the first stopped). Each run is interrupted
// (a graceful stop) once every partition's cursor has started its second pass after the
// run's first; then the server's data is opened again and each key's count is checked
// exactly against its partition's committed cursor: seed + the passes before the cursor's
// + 1 if the cursor's pass has visited it. A key visited twice in a pass, or skipped, fails.
func runCorpusKeyVisitor(t *testing.T, file, setup string) {
	data := mustRead(t, file)
	if !strings.Contains(data, "period = 86400000") {
		t.Fatal("key_visitor.yson does not set period = 86400000")
	}
	specFile := filepath.Join(t.TempDir(), "key_visitor.yson")
	if err := os.WriteFile(specFile, []byte(strings.Replace(data, "period = 86400000", "period = 1000", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := spec.ParseConfigFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	seeds, err := parseSeedStates([]byte(mustRead(t, filepath.Join(corpusRunDir, "key_visitor_states.yson"))), cfg.Spec)
	if err != nil || len(seeds) != 200 {
		t.Fatalf("seeded states: %d, %v", len(seeds), err)
	}
	seed := map[uint64]int64{}
	for _, r := range seeds {
		var n int64
		if err := yson.Unmarshal(r.State, &n); err != nil {
			t.Fatal(err)
		}
		seed[r.KeyHash] = n
	}
	runVisits(t, specFile, setup, cfg.Path, seed, func(ctx context.Context, st *ytstore.Store) (map[uint64]int64, error) {
		rows, err := st.ReadStates(ctx, ytstore.StateFilter{ComputationID: "visitor", Name: "count"})
		if err != nil {
			return nil, err
		}
		got := map[uint64]int64{}
		for _, r := range rows {
			var n int64
			if err := yson.Unmarshal(r.State, &n); err != nil {
				return nil, fmt.Errorf("state of key hash %d: %w", r.KeyHash, err)
			}
			got[r.KeyHash] = n
		}
		return got, nil
	})
}

// runVisits runs specFile (a computation "visitor" with key visitor stream "visits" on two
// partitions, visiting the keys of seed: key hash → count before any visit) twice on the same
// data, each run interrupted once every partition's cursor is two passes further, and checks
// the counts read (key hash → count) after each run against the cursors (checkVisits).
func runVisits(t *testing.T, specFile, setup, path string, seed map[uint64]int64, read func(context.Context, *ytstore.Store) (map[uint64]int64, error)) {
	t.Helper()
	dataDir := t.TempDir()
	var minPass uint64
	var err error
	for run := 1; run <= 2; run++ {
		want := minPass + 2
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		runCtx, interrupt := context.WithCancel(ctx)
		defer interrupt()
		var stdout, stderr syncBuffer
		exit := make(chan int, 1)
		go func() {
			env := &environ{stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
			exit <- runMain(runCtx, env, []string{"run", "--spec", specFile, "--setup", setup, "--data-dir", dataDir, "--progress", "0"})
		}()
		var st *ytstore.Store
		code := -1
		for code < 0 {
			if st == nil {
				if m := embeddedAddr.FindStringSubmatch(stdout.String()); m != nil {
					if st, err = ytstore.Open(ctx, ytstore.Config{Proxy: m[1], Path: path}); err != nil {
						t.Fatal(err)
					}
				}
			} else if cur, err := visitCursors(ctx, st); err == nil && len(cur) == 2 && minCursorPass(cur) >= want {
				break
			}
			select {
			case code = <-exit:
			case <-ctx.Done():
				t.Fatalf("run %d: no pass %d within 2 minutes\nstdout:\n%s\nstderr:\n%s", run, want, stdout.String(), stderr.String())
			case <-time.After(100 * time.Millisecond):
			}
		}
		if st != nil {
			st.Close()
		}
		if code < 0 {
			interrupt()
			code = <-exit
		}
		cancel()
		if code != exitInterrupted || !strings.Contains(stdout.String(), "pipeline stopped") {
			t.Fatalf("run %d: exit %d (want %d after the interrupt, stopped gracefully)\nstdout:\n%s\nstderr:\n%s", run, code, exitInterrupted, stdout.String(), stderr.String())
		}
		if run == 2 && strings.Contains(stdout.String(), " key states into") {
			t.Errorf("run 2 seeded the states again:\n%s", stdout.String())
		}
		minPass = checkVisits(t, dataDir, path, seed, read)
		if minPass < want {
			t.Fatalf("run %d: committed cursors at pass %d, want ≥ %d", run, minPass, want)
		}
	}
}

// visitCursors reads the committed cursors of the visitor's partitions, by partition.
func visitCursors(ctx context.Context, st *ytstore.Store) (map[ytstore.Partition]epoch.VisitCursor, error) {
	parts, err := st.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	out := map[ytstore.Partition]epoch.VisitCursor{}
	for _, p := range parts {
		if p.ComputationID != "visitor" || p.State != ytstore.PartitionActive {
			continue
		}
		rows, err := st.ReadPartitionStates(ctx, p.PartitionID, "key_visitor/visits", 0)
		if err != nil {
			return nil, err
		}
		var c epoch.VisitCursor
		if len(rows) == 1 {
			if err := yson.Unmarshal(rows[0].State, &c); err != nil {
				return nil, fmt.Errorf("partition %s: cursor: %w", p.PartitionID, err)
			}
		}
		out[p] = c
	}
	return out, nil
}

func minCursorPass(cur map[ytstore.Partition]epoch.VisitCursor) uint64 {
	least := uint64(1 << 63)
	for _, c := range cur {
		least = min(least, c.Pass)
	}
	return least
}

// checkVisits opens the stopped pipeline's data and checks every key's count (read) against
// its partition's cursor: seed + the passes before the cursor's + 1 if the cursor's pass has
// visited it; it returns the least pass of the cursors.
func checkVisits(t *testing.T, dataDir, path string, seed map[uint64]int64, read func(context.Context, *ytstore.Store) (map[uint64]int64, error)) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := ytlocal.Start(ctx, ytlocal.Config{DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cur, err := visitCursors(ctx, st)
	if err != nil || len(cur) != 2 {
		t.Fatalf("cursors of the visitor's partitions: %v, %v", cur, err)
	}
	got, err := read(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	bad, visits := 0, int64(0)
	for hash, n := range seed {
		want := int64(-1)
		for p, c := range cur {
			if !epoch.InRange(hash, p.LowerKey, p.UpperKey) {
				continue
			}
			want = n + int64(c.Pass)
			if c.Done || hash < c.Next {
				want++
			}
		}
		visits += got[hash] - n
		if got[hash] != want {
			if bad++; bad <= 5 {
				t.Errorf("key hash %d: count %d, want %d (cursors %v)", hash, got[hash], want, cur)
			}
		}
	}
	if len(got) != len(seed) {
		t.Errorf("%d keys read, want the %d seeded", len(got), len(seed))
	}
	t.Logf("cursors %v: %d visits of %d keys, each key once per pass", cur, visits, len(seed))
	return minCursorPass(cur)
}
