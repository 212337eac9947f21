package random

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/yson"
)

func parseText(t *testing.T, text string, parser func(f *yson.Fields) any) (any, []string) {
	t.Helper()
	n, err := yson.Decode([]byte(text))
	require.NoError(t, err)
	var w yson.Walker
	f := w.Fields(n, "parameters")
	v := parser(f)
	f.Close()
	var problems []string
	for _, p := range w.Problems() {
		problems = append(problems, p.String())
	}
	return v, problems
}

// TestRandomParams: defaults (a finite source without a count has DefaultFiniteCount rows
// per partition), limits, and the parameters that fix the rows refused as dynamic ones, all
// with their paths.
func TestRandomParams(t *testing.T) {
	v, problems := parseText(t, `{}`, parse)
	assert.Empty(t, problems)
	assert.Equal(t, &Params{PartitionCount: 3, MessageSizeMean: 1024, MessageKeyRange: 1024}, v)
	v, problems = parseText(t, `{finite = %true}`, parse)
	assert.Empty(t, problems)
	assert.Equal(t, int64(DefaultFiniteCount), v.(*Params).PartitionMessageCount)
	_, problems = parseText(t, `{finite = %true; partition_count = 0; message_key_range = 0; partition_message_count = -1; seed = 1}`, parse)
	assert.Equal(t, []string{
		"parameters/message_key_range: 0 is out of range [1, 4611686018427387904]",
		"parameters/partition_count: 0 is out of range [1, 65536]",
		"parameters/partition_message_count: -1 is out of range [0, 1099511627776]",
		"parameters/seed: unknown key",
	}, problems)
	v, problems = parseText(t, `{message_count_mean = 10; unavailable_threshold = "1m"}`, func(f *yson.Fields) any { return parseDynamic(f, nil) })
	assert.Empty(t, problems)
	assert.Equal(t, 10.0, v.(*Dynamic).MessageCountMean)
	_, problems = parseText(t, `{partition_count = 5}`, func(f *yson.Fields) any { return parseDynamic(f, nil) })
	require.Len(t, problems, 1)
	assert.True(t, strings.HasPrefix(problems[0], "parameters/partition_count: is a static parameter in yt-flow"), problems[0])
}

// TestRandomDeterministic: a row depends only on its partition and offset — a reader opened
// again (a restart) reads the same rows from any position — and the ids of a finite source
// are 0..partitions×count−1, each once.
func TestRandomDeterministic(t *testing.T) {
	ctx := context.Background()
	p := &Params{Finite: true, PartitionCount: 3, PartitionMessageCount: 50, MessageSizeMean: 8, MessageKeyRange: 10}
	ctors, ok := connector.SourceOf(Class)
	require.True(t, ok)
	ids := map[uint64]int{}
	for part := range p.PartitionCount {
		open := func() connector.Source {
			src, err := ctors.Source(connector.Env{SourcePartition: part}, p)
			require.NoError(t, err)
			return src
		}
		all, err := open().Read(ctx, nil, 1000)
		require.NoError(t, err)
		require.Len(t, all, 50)
		tail, err := open().Read(ctx, all[19].Next, 7)
		require.NoError(t, err)
		require.Len(t, tail, 7)
		for i, r := range tail {
			assert.Equal(t, all[20+i].Columns, r.Columns, "partition %d offset %d", part, r.Offset)
			assert.Equal(t, all[20+i].Offset, r.Offset)
		}
		end, err := open().Read(ctx, all[49].Next, 10)
		require.NoError(t, err)
		assert.Empty(t, end, "a finite partition ends at partition_message_count")
		for _, r := range all {
			ids[r.Columns["id"].(uint64)]++
			assert.Less(t, r.Columns["key"].(uint64), uint64(10))
			assert.LessOrEqual(t, len(r.Columns["payload"].(string)), 16)
		}
	}
	require.Len(t, ids, 150)
	for id := range uint64(150) {
		assert.Equal(t, 1, ids[id], "id %d", id)
	}
	assert.NotEqual(t, Generate(p, 0, 1)["key"], nil)
	assert.NotEqual(t, fmt.Sprint(Generate(p, 0, 1)), fmt.Sprint(Generate(p, 1, 1)), "partitions differ")
	unbounded := &Params{PartitionCount: 1, MessageKeyRange: 1}
	src, err := ctors.Source(connector.Env{SourcePartition: 0}, unbounded)
	require.NoError(t, err)
	rows, err := src.Read(ctx, connector.OffsetPosition(1<<30), 5)
	require.NoError(t, err)
	assert.Len(t, rows, 5, "partition_message_count 0 emits without end")
	_, err = ctors.Source(connector.Env{SourcePartition: 3}, p)
	assert.Error(t, err, "a partition beyond partition_count")
}
