package bench

import (
	"context"

	farm "github.com/dgryski/go-farm"
)

// WriteRaw is the baseline without a pipeline: for every input word it writes straight
// into YTsaurus with the SDK the row the pipeline's sinks write for that word's count —
// an upsert of {hash, word, count} (the running count) into the counts table and the same
// row pushed to the output queue through a producer session — batch words per call pair
// (one insert_rows and one push_queue_producer, each its own transaction).
func WriteRaw(ctx context.Context, p *Pipeline, words []string, batch int) error {
	ps, err := p.Store.OpenProducerSession(ctx, p.Root+"/producer", p.Output(), "raw")
	if err != nil {
		return err
	}
	seq := ps.LastSequenceNumber + 1
	counts := map[string]int64{}
	for i := 0; i < len(words); i += batch {
		part := words[i:min(i+batch, len(words))]
		rows := make([]map[string]any, len(part))
		for j, w := range part {
			counts[w]++
			rows[j] = map[string]any{"hash": farm.Fingerprint64([]byte(w)), "word": w, "count": counts[w]}
		}
		if err := p.Store.InsertRows(ctx, p.Counts(), rows); err != nil {
			return err
		}
		if _, err := p.Store.Push(ctx, ps, seq, rows); err != nil {
			return err
		}
		seq += int64(len(rows))
	}
	return nil
}
