package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/ytstore"
)

// BadWordCount describes a word-count pipeline with something wrong in it.
type BadWordCount struct {
	// InputColumns is the schema of the input queue (default: text string).
	InputColumns []schema.Column
	// Tablets of the input queue.
	Tablets int
	// Rows are written to the input queue; each names its "$tablet_index".
	Rows []map[string]any
	// SkipConsumer leaves the consumer uncreated; SkipInput leaves both the input queue
	// and its consumer uncreated (CreateInput makes them later).
	SkipConsumer, SkipInput bool
	// Edit rewrites the spec text (ROOT already replaced by the test's folder).
	Edit func(spec string) string
}

// NewBadWordCount creates the user tables of the word count (or fewer, as b says), loads
// b.Rows and writes the spec of the e2e word count, edited by b.Edit.
func NewBadWordCount(t *testing.T, c *Cluster, name string, b BadWordCount) *WordCount {
	t.Helper()
	root := c.Root(name)
	w := &WordCount{C: c, Root: root, Path: root + "/pipeline", Expected: map[string]int64{}}
	w.Store = c.Store(w.Path)
	ctx := context.Background()
	mk := func(ut ytstore.UserTable) {
		t.Helper()
		if err := w.Store.EnsureUserTable(ctx, ut); err != nil {
			t.Fatal(err)
		}
	}
	cols := b.InputColumns
	if cols == nil {
		cols = []schema.Column{{Name: "text", Type: schema.TypeString}}
	}
	if !b.SkipInput {
		mk(ytstore.UserTable{Path: root + "/input", Kind: ytstore.UserQueue, TabletCount: max(b.Tablets, 1), Schema: schema.Schema{Columns: cols}})
	}
	if !b.SkipConsumer && !b.SkipInput {
		mk(ytstore.UserTable{Path: root + "/consumer", Kind: ytstore.UserConsumer, Queue: root + "/input"})
	}
	mk(ytstore.UserTable{Path: root + "/counts", Kind: ytstore.UserSortedTable, Schema: schema.Schema{UniqueKeys: true, Columns: []schema.Column{
		{Name: "hash", Type: schema.TypeUint64, SortOrder: schema.SortAscending},
		{Name: "word", Type: schema.TypeString, SortOrder: schema.SortAscending},
		{Name: "count", Type: schema.TypeInt64},
	}}})
	mk(ytstore.UserTable{Path: root + "/output", Kind: ytstore.UserQueue, Schema: schema.Schema{Columns: []schema.Column{
		{Name: "hash", Type: schema.TypeUint64},
		{Name: "word", Type: schema.TypeString},
		{Name: "count", Type: schema.TypeInt64},
	}}})
	mk(ytstore.UserTable{Path: root + "/producer", Kind: ytstore.UserProducer})
	w.insert(t, b.Rows)
	text := WordCountSpec(SpecParams{Root: root, Finite: true, SplitPartitions: b.Tablets, CountPartitions: 2})
	if b.Edit != nil {
		text = b.Edit(text)
	}
	w.SpecFile = filepath.Join(t.TempDir(), "pipeline.yson")
	if err := os.WriteFile(w.SpecFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

// Status runs `yt-flow status` and returns its output.
func (w *WordCount) Status(t *testing.T) string {
	t.Helper()
	p := Start(t, "status", "status", "--proxy", w.C.Proxy, "--path", w.Path)
	if _, ok := p.Wait(time.Minute); !ok {
		t.Fatalf("yt-flow status did not exit:\n%s", p.Log())
	}
	return p.Log()
}

// JobErrors reads the error texts of the job_status rows: job id → error.
func (w *WordCount) JobErrors(t *testing.T) map[string]string {
	t.Helper()
	statuses, err := w.Store.JobStatuses(context.Background())
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, s := range statuses {
		if s.Error != "" {
			out[s.JobID] = s.Error
		}
	}
	return out
}

// missingFrom returns the substrings of want that s lacks.
func missingFrom(s string, want ...string) []string {
	var miss []string
	for _, w := range want {
		if !strings.Contains(s, w) {
			miss = append(miss, w)
		}
	}
	return miss
}

// TryStart runs `yt-flow start` and returns its exit error and output.
func (w *WordCount) TryStart(t *testing.T) (error, string) {
	t.Helper()
	p := Start(t, "start", "start", "--proxy", w.C.Proxy, "--spec", w.SpecFile)
	err, ok := p.Wait(2 * time.Minute)
	if !ok {
		t.Fatalf("yt-flow start did not exit:\n%s", p.Log())
	}
	return err, p.Log()
}

// ControllerEvents returns the controller's event records (controller_logs), oldest first.
func (w *WordCount) ControllerEvents(t *testing.T) []string {
	t.Helper()
	recs, err := w.Store.ControllerLogs(context.Background(), 1000)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.Data)
	}
	return out
}

// WaitEvents polls the controller's events until n of them contain every substring of want
// and returns those events.
func (w *WordCount) WaitEvents(t *testing.T, n int, want ...string) []string {
	t.Helper()
	var got []string
	Eventually(t, 2*time.Minute, func() (bool, string) {
		got = got[:0]
		for _, e := range w.ControllerEvents(t) {
			if len(missingFrom(e, want...)) == 0 {
				got = append(got, e)
			}
		}
		return len(got) >= n, fmt.Sprintf("%d of %d controller events with %q", len(got), n, want)
	})
	return got
}

// PartitionState returns the state of the partition id ("" when it does not exist).
func (w *WordCount) PartitionState(t *testing.T, id string) string {
	t.Helper()
	parts, err := w.Store.Partitions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if p.PartitionID == id {
			return p.State
		}
	}
	return ""
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (w *WordCount) insert(t *testing.T, rows []map[string]any) {
	t.Helper()
	for start := 0; start < len(rows); start += 1000 {
		if err := w.Store.InsertRows(context.Background(), w.Root+"/input", rows[start:min(start+1000, len(rows))]); err != nil {
			t.Fatal(err)
		}
	}
}

// CreateInput creates what NewBadWordCount left out: the input queue (one tablet, column
// text) unless it exists, and its consumer; then it writes rows.
func (w *WordCount) CreateInput(t *testing.T, rows []map[string]any) {
	t.Helper()
	ctx := context.Background()
	for _, ut := range []ytstore.UserTable{
		{Path: w.Root + "/input", Kind: ytstore.UserQueue, TabletCount: 1, Schema: schema.Schema{Columns: []schema.Column{{Name: "text", Type: schema.TypeString}}}},
		{Path: w.Root + "/consumer", Kind: ytstore.UserConsumer, Queue: w.Root + "/input"},
	} {
		if err := w.Store.EnsureUserTable(ctx, ut); err != nil {
			t.Fatal(err)
		}
	}
	w.insert(t, rows)
}
