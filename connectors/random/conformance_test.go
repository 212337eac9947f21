package random_test

import (
	"context"
	"fmt"
	"testing"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/connectortest"
	"github.com/ytflow/yt-flow/connectors/random"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestRandomSourceConformance: the random source delivers every row exactly once while
// workers are killed after reads, after commits and between partitions; its ids are
// 0..rows−1 by construction (4 partitions of rows/4).
func TestRandomSourceConformance(t *testing.T) {
	connectortest.RunSource(t, connectortest.Source{
		Class: random.Class,
		Setup: func(_ context.Context, _ *ytstore.Store, _ string, rows int) (string, []schema.Column, error) {
			if rows%4 != 0 {
				return "", nil, fmt.Errorf("%d rows do not split into 4 partitions", rows)
			}
			params := fmt.Sprintf("{finite = %%true; partition_count = 4; partition_message_count = %d; message_size_mean = 16}", rows/4)
			return params, []schema.Column{{Name: "partition", Type: schema.TypeUint64}, {Name: "offset", Type: schema.TypeUint64},
				{Name: "key", Type: schema.TypeUint64}, {Name: "payload", Type: schema.TypeString}}, nil
		},
	})
}
