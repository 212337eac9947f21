package queue_test

import (
	"context"
	"fmt"
	"testing"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/connectortest"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestSourceConformance: the queue source delivers every row exactly once while workers are
// killed after reads, after commits and between partitions.
func TestSourceConformance(t *testing.T) {
	connectortest.RunSource(t, connectortest.Source{
		Class: "queue",
		Setup: func(ctx context.Context, st *ytstore.Store, root string, rows int) (string, []schema.Column, error) {
			q, c := root+"/input", root+"/consumer"
			cols := []schema.Column{{Name: "id", Type: schema.TypeUint64}, {Name: "text", Type: schema.TypeString}}
			if err := st.EnsureUserTable(ctx, ytstore.UserTable{Path: q, Kind: ytstore.UserQueue, TabletCount: 3, Schema: schema.Schema{Columns: cols}}); err != nil {
				return "", nil, err
			}
			if err := st.EnsureUserTable(ctx, ytstore.UserTable{Path: c, Kind: ytstore.UserConsumer, Queue: q}); err != nil {
				return "", nil, err
			}
			batch := make([]map[string]any, 0, 500)
			for i := range rows {
				batch = append(batch, map[string]any{"$tablet_index": int64(i % 3), "id": uint64(i), "text": fmt.Sprint("row ", i)})
				if len(batch) == cap(batch) || i == rows-1 {
					if err := st.InsertRows(ctx, q, batch); err != nil {
						return "", nil, err
					}
					batch = batch[:0]
				}
			}
			params := fmt.Sprintf("{queue_path = %q; consumer_path = %q; finite = %%true}", q, c)
			return params, []schema.Column{{Name: "text", Type: schema.TypeString, Required: false}}, nil
		},
	})
}

// queueSink is the conformance case of a queue sink class: the target is a queue of ids
// read back through a consumer.
func queueSink(class string) connectortest.Sink {
	return connectortest.Sink{
		Class: class,
		Setup: func(ctx context.Context, st *ytstore.Store, root string) (string, error) {
			q := root + "/out"
			for _, t := range []ytstore.UserTable{
				{Path: q, Kind: ytstore.UserQueue, Schema: schema.Schema{Columns: []schema.Column{{Name: "id", Type: schema.TypeUint64}}}},
				{Path: root + "/out_consumer", Kind: ytstore.UserConsumer, Queue: q},
				{Path: root + "/producer", Kind: ytstore.UserProducer},
			} {
				if err := st.EnsureUserTable(ctx, t); err != nil {
					return "", err
				}
			}
			if class == "async_queue" {
				return fmt.Sprintf("{queue_path = %q; producer_path = %q}", q, root+"/producer"), nil
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
					id, ok := r.Columns["id"].(uint64)
					if !ok {
						return nil, fmt.Errorf("row %d: id %v (%T)", r.Offset, r.Columns["id"], r.Columns["id"])
					}
					ids = append(ids, id)
				}
				off = rows[len(rows)-1].Offset + 1
			}
		},
	}
}

// TestSyncSinkConformance: rows appended in the epoch transaction arrive exactly once while
// workers are killed between the write and the commit.
func TestSyncSinkConformance(t *testing.T) { connectortest.RunSink(t, queueSink("sync_queue")) }

// TestAsyncSinkConformance: the async queue sink delivers every row exactly once while
// workers are killed between delivery and acknowledgement and the target fails, takes part
// of a delivery, or is slow.
func TestAsyncSinkConformance(t *testing.T) { connectortest.RunSink(t, queueSink("async_queue")) }
