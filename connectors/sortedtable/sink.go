// Package sortedtable is the synchronous sink into a user's sorted dynamic table
// (TSortedDynamicTableSink): rows are upserted (or, with delete_rows, deleted by key) inside
// the epoch transaction, so they commit exactly once together with the epoch.
package sortedtable

import (
	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/ytstore"
)

// Sink writes output payloads to the sorted dynamic table TablePath.
type Sink struct {
	TablePath string
	// ColumnFilter keeps only these columns (all when empty).
	ColumnFilter []string
	// DeleteRows deletes the rows keyed by the payloads instead of upserting them.
	DeleteRows bool
}

// Write returns the epoch write of msgs, in message order (a later row for the same key
// wins).
func (s *Sink) Write(msgs []flow.Message) (ytstore.SinkWrite, error) {
	w := ytstore.SinkWrite{Path: s.TablePath, Delete: s.DeleteRows, Rows: make([]map[string]any, 0, len(msgs))}
	for _, m := range msgs {
		if len(s.ColumnFilter) == 0 {
			// The payload as it is: the runtime owns output payloads once added
			// (flow.Context.AddMessage) and nothing changes them.
			w.Rows = append(w.Rows, m.Payload)
			continue
		}
		row := make(map[string]any, len(s.ColumnFilter))
		for _, c := range s.ColumnFilter {
			if v, ok := m.Payload[c]; ok {
				row[c] = v
			}
		}
		w.Rows = append(w.Rows, row)
	}
	return w, nil
}
