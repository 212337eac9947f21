package connectortest_test

import (
	"context"
	"fmt"
	"testing"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/connectors/connectortest"
	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/yson"
	"github.com/ytflow/yt-flow/ytstore"
)

// aloQueue is an at-least-once sync sink for the runtime's AtLeastOnceSyncSink kind: it
// appends an epoch's rows to a queue in a transaction of its own, before the epoch commits.
type aloQueue struct {
	st   *ytstore.Store
	path string
}

func (s *aloQueue) WriteBeforeCommit(ctx context.Context, msgs []flow.Message) error {
	rows := make([]map[string]any, len(msgs))
	for i, m := range msgs {
		rows[i] = map[string]any{"id": m.Payload["id"]}
	}
	return s.st.InsertRows(ctx, s.path, rows)
}

func init() {
	registry.Register(registry.Class{
		Name: "test_alo_queue", Role: registry.Sink, Guarantee: registry.AtLeastOnce, Kind: registry.AtLeastOnceSyncSink, Runs: true,
		Summary: "appends rows to a queue before the epoch commits (test)",
		Parse:   func(f *yson.Fields) any { return registry.RichPath(f, "queue_path") },
	})
	connector.RegisterSink("test_alo_queue", connector.Constructors{
		AtLeastOnceSyncSink: func(env connector.Env, params any) (connector.AtLeastOnceSyncSink, error) {
			return &aloQueue{st: env.Store, path: params.(string)}, nil
		},
	})
}

// TestAtLeastOnceSyncSinkConformance: with workers killed between an at-least-once sync
// sink's write and the epoch's commit, no row is lost (repeats are allowed).
func TestAtLeastOnceSyncSinkConformance(t *testing.T) {
	connectortest.RunSink(t, aloQueueSink(false))
}

// TestSwiftSourceAtLeastOnceSink: directly on a swift source, which re-reads its rows after a
// restart, an at-least-once sync sink is written before the commit that moves the source
// offset past its rows: with workers killed between the write and that commit, no row is
// lost (repeats are allowed).
func TestSwiftSourceAtLeastOnceSink(t *testing.T) {
	connectortest.RunSink(t, aloQueueSink(true))
}

func aloQueueSink(onSwift bool) connectortest.Sink {
	return connectortest.Sink{
		Class:         "test_alo_queue",
		OnSwiftSource: onSwift,
		Setup: func(ctx context.Context, st *ytstore.Store, root string) (string, error) {
			q := root + "/out"
			for _, tb := range []ytstore.UserTable{
				{Path: q, Kind: ytstore.UserQueue, Schema: schema.Schema{Columns: []schema.Column{{Name: "id", Type: schema.TypeUint64}}}},
				{Path: q + "_consumer", Kind: ytstore.UserConsumer, Queue: q},
			} {
				if err := st.EnsureUserTable(ctx, tb); err != nil {
					return "", err
				}
			}
			return fmt.Sprintf("{queue_path = %q}", q), nil
		},
		ReadBack: func(ctx context.Context, st *ytstore.Store, root string) ([]uint64, error) {
			var ids []uint64
			for off := int64(0); ; {
				rows, err := st.PullQueue(ctx, root+"/out", root+"/out_consumer", 0, off, 10000)
				if err != nil || len(rows) == 0 {
					return ids, err
				}
				for _, r := range rows {
					id, _ := r.Columns["id"].(uint64)
					ids = append(ids, id)
				}
				off = rows[len(rows)-1].Offset + 1
			}
		},
	}
}
