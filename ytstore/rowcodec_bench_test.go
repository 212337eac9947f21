package ytstore

import (
	"io"
	"testing"

	"go.ytsaurus.tech/yt/go/yson"
)

// benchRows are rows as the peers benchmark's epochs write them: one compact dedup row per
// input message, a state row per key, a chunk row per destination and a partition token.
func benchRows() map[string][]any {
	fp := uint64(0x1234_5678_9abc_def0)
	compact := make([]any, 1000)
	for i := range compact {
		compact[i] = &compactInputMessageRow{DedupKey: DedupKey{ComputationID: "count", KeyHash: uint64(i) * 0x9e37_79b9_7f4a_7c15, MessageID: "m"}.compactKey(), SystemTimestamp: 1_700_000_000_000_000 + uint64(i), PayloadFingerprint: &fp}
	}
	states := make([]any, 1000)
	for i := range states {
		states[i] = &StateRow{ComputationID: "count", KeyHash: uint64(i) * 0x9e37_79b9_7f4a_7c15, Key: []byte("\x01\x08word1234"), Name: "count", State: []byte("\x02\x90\x01")}
	}
	chunk := &outputChunkRow{PartitionID: "0", Destination: "sink:out", ChunkID: 1 << 60, Part: 0, MessageCount: 1000, Data: make([]byte, 40_000)}
	return map[string][]any{
		"compact": compact,
		"state":   states,
		"chunk":   {chunk},
		"token":   {partitionTransactionRow{PartitionID: "0", Token: 1 << 60}},
	}
}

// BenchmarkRowsThroughWriter encodes an insert's rows as the SDK's InsertRows does: each
// row through the binary list-fragment writer (yson.Writer.Any).
func BenchmarkRowsThroughWriter(b *testing.B) {
	for name, rows := range benchRows() {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w := yson.NewWriterConfig(io.Discard, yson.WriterConfig{Format: yson.FormatBinary, Kind: yson.StreamListFragment})
				for _, r := range rows {
					w.Any(r)
				}
				if err := w.Finish(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
		})
	}
}

// BenchmarkEncodeRows encodes the same rows as one batch body (rowList.appendRows), into a
// buffer kept between inserts as tableTx.insert keeps it; "compact-direct" encodes the
// compact dedup rows straight from an epoch's dedup rows, as writeEpoch does.
func BenchmarkEncodeRows(b *testing.B) {
	lists := map[string]rowList{}
	for name, rows := range benchRows() {
		l, ok := asRowList(rows)
		if !ok {
			b.Fatalf("%s rows do not encode themselves", name)
		}
		lists[name] = l
	}
	dedup := make([]DedupRow, 1000)
	for i := range dedup {
		dedup[i] = DedupRow{DedupKey: DedupKey{ComputationID: "count", KeyHash: uint64(i) * 0x9e37_79b9_7f4a_7c15, MessageID: "m", Compact: true}, SystemTimestamp: 1_700_000_000_000_000 + uint64(i), PayloadFingerprint: 0x1234_5678_9abc_def0}
	}
	lists["compact-direct"] = compactDedupRows{rows: dedup, fingerprints: true}
	for name, l := range lists {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				buf = l.appendRows(buf[:0])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(l.values())), "ns/row")
		})
	}
}
