package ytstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/migrate"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yt"
)

// TestWorkersTableOfOlderVersion: a pipeline whose workers table was created before the
// flow_core_version column existed is still accepted by CreatePipeline, and its workers
// register without their version; a workers table with another schema is refused.
func TestWorkersTableOfOlderVersion(t *testing.T) {
	ctx := context.Background()
	st, other := openTestStore(t, "//home/old/pipe"), openTestStore(t, "//home/other/pipe")
	old := coordTables()[0]
	if old.name != TableWorkers {
		t.Fatalf("first coordination table is %s", old.name)
	}
	old.schema.Columns = old.schema.Columns[:len(old.schema.Columns)-1]
	for _, p := range []*Store{st, other} {
		if _, err := p.yc.CreateNode(ctx, p.path, yt.NodeMap, &yt.CreateNodeOptions{Recursive: true,
			Attributes: map[string]any{"pipeline_format_version": PipelineFormatVersion}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.yc.CreateNode(ctx, st.child(TableWorkers), yt.NodeTable, &yt.CreateNodeOptions{Recursive: true,
		Attributes: map[string]any{"dynamic": true, "schema": old.schema}}); err != nil {
		t.Fatal(err)
	}
	if err := migrate.MountAndWait(ctx, st.yc, st.child(TableWorkers)); err != nil {
		t.Fatal(err)
	}
	if err := st.CreatePipeline(ctx); err != nil {
		t.Fatalf("CreatePipeline over a workers table of an older version: %v", err)
	}
	sess, err := st.StartSession(ctx, "worker", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sess.Close() }()
	if err := st.PutWorker(ctx, Worker{WorkerID: "w", SessionTx: sess.ID(), FlowCoreVersion: "v1"}); err != nil {
		t.Fatalf("PutWorker into a workers table of an older version: %v", err)
	}
	ws, err := st.Workers(ctx)
	if err != nil || len(ws) != 1 || ws[0].WorkerID != "w" || ws[0].FlowCoreVersion != "" {
		t.Fatalf("workers %+v (%v), want w without a version", ws, err)
	}

	bad := schema.Schema{UniqueKeys: true, Columns: []schema.Column{coordKey("worker_id", schema.TypeBytes), coordVal("something", schema.TypeBytes)}}
	if _, err := other.yc.CreateNode(ctx, other.child(TableWorkers), yt.NodeTable, &yt.CreateNodeOptions{Recursive: true,
		Attributes: map[string]any{"dynamic": true, "schema": bad}}); err != nil {
		t.Fatal(err)
	}
	if err := other.CreatePipeline(ctx); err == nil || !strings.Contains(err.Error(), "exists with another schema") {
		t.Fatalf("CreatePipeline over a workers table with another schema: %v, want refused", err)
	}
}
