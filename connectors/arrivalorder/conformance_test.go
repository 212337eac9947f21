package arrivalorder_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ytflow/yt-flow/connectors/arrivalorder"
	"github.com/ytflow/yt-flow/connectors/connectortest"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestArrivalOrderSinkConformance: every row lands in exactly one slot table while workers
// are killed between delivery and acknowledgement and the delivery fails, is cut short or
// is slow; @progress then names every slot table there is and no other.
func TestArrivalOrderSinkConformance(t *testing.T) {
	connectortest.RunSink(t, connectortest.Sink{
		Class: arrivalorder.Class,
		Setup: func(ctx context.Context, st *ytstore.Store, root string) (string, error) {
			// One-second slots: the run spans several tables.
			return fmt.Sprintf("{output_directory = %q; table_period = 1000; table_ttl = 3600000}", root+"/out"), nil
		},
		ReadBack: func(ctx context.Context, st *ytstore.Store, root string) ([]uint64, error) {
			got, err := arrivalorder.ReadDirectory(ctx, st, root+"/out")
			if err != nil {
				return nil, err
			}
			var ids []uint64
			for _, tb := range got.Tables {
				for i, row := range tb.Rows {
					id, ok := row["id"].(uint64)
					if !ok {
						return nil, fmt.Errorf("table %s row %d: id %v (%T)", tb.Name, i, row["id"], row["id"])
					}
					ids = append(ids, id)
				}
			}
			if err := got.Check(); err != nil {
				return nil, err
			}
			return ids, nil
		},
	})
}
