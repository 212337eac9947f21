package ytlocal_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
)

// TestQueueAutoTrim: a queue with @auto_trim_config/enable loses the rows below the smallest
// offset of its vital consumers when one advances; a non-vital consumer does not hold rows
// back, and a queue without the setting keeps every row.
func TestQueueAutoTrim(t *testing.T) {
	ctx, yc := newDynClient(t)
	trimmed := func(q ypath.Path) int64 {
		var tablets []struct {
			Trimmed int64 `yson:"trimmed_row_count"`
		}
		require.NoError(t, yc.GetNode(ctx, q.Attr("tablets"), &tablets, nil))
		require.Len(t, tablets, 1)
		return tablets[0].Trimmed
	}
	zero, three, five := int64(0), int64(3), int64(5)
	p0 := int32(0)
	for _, auto := range []bool{true, false} {
		queue, _, vital := newQueue(t, ctx, yc)
		if auto {
			require.NoError(t, yc.SetNode(ctx, queue.Attr("auto_trim_config"), map[string]any{"enable": true}, nil))
		}
		other := ypath.Path("//tmp/" + guid.New().String())
		_, err := yc.CreateNode(ctx, other, yt.NodeQueueConsumer, nil)
		require.NoError(t, err)
		isVital, notVital := true, false
		require.NoError(t, yc.RegisterQueueConsumer(ctx, queue, vital, &yt.RegisterQueueConsumerOptions{Vital: &isVital}))
		require.NoError(t, yc.RegisterQueueConsumer(ctx, queue, other, &yt.RegisterQueueConsumerOptions{Vital: &notVital}))
		rows := []any{&queueRow{0, "a"}, &queueRow{0, "b"}, &queueRow{0, "c"}, &queueRow{0, "d"}, &queueRow{0, "e"}}
		require.NoError(t, yc.InsertRows(ctx, queue, rows, nil))

		require.NoError(t, yc.AdvanceQueueConsumer(ctx, vital, queue, &yt.AdvanceQueueConsumerOptions{PartitionIndex: &p0, OldOffset: &zero, NewOffset: &three}))
		require.NoError(t, yc.AdvanceQueueConsumer(ctx, other, queue, &yt.AdvanceQueueConsumerOptions{PartitionIndex: &p0, NewOffset: &five}))
		r, _, err := yc.PullQueueConsumer(ctx, other, queue, &yt.PullQueueConsumerOptions{PartitionIndex: &p0, Offset: &three})
		require.NoError(t, err)
		var got []string
		for r.Next() {
			var row queueRow
			require.NoError(t, r.Scan(&row))
			got = append(got, row.Value)
		}
		require.NoError(t, r.Err())
		r.Close()
		assert.Equal(t, []string{"d", "e"}, got, "rows at and above the vital consumer's offset stay")
		if auto {
			assert.Equal(t, int64(3), trimmed(queue), "trimmed to the vital consumer's offset, not the other's")
		} else {
			assert.Equal(t, int64(0), trimmed(queue), "no auto_trim_config: nothing trimmed")
		}
	}
}
