package ytlocal

import (
	"fmt"
	"io"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yson"
)

// mutationLogName names logged mutation outcomes in the write-ahead log.
const mutationLogName = "mutations"

const mutationCacheSize = 100000

type mutationResult struct {
	result any
	err    error
}

// mutationCache remembers the outcome of recent mutations by mutation_id, so a retried
// request (retry=%true after a lost response) gets the original answer instead of being
// applied twice. It is bounded (FIFO eviction). Successful mutations that changed durable
// state are also logged, so a retry after a crash and restart still gets the original
// answer (a committed commit_transaction must not turn into "no such transaction").
type mutationCache struct {
	m     map[guid.GUID]mutationResult
	order []guid.GUID
}

func newMutationCache() *mutationCache {
	return &mutationCache{m: map[guid.GUID]mutationResult{}}
}

func (c *mutationCache) get(id guid.GUID) (mutationResult, bool) {
	r, ok := c.m[id]
	return r, ok
}

func (c *mutationCache) put(id guid.GUID, result any, err error) {
	if _, ok := c.m[id]; ok {
		return
	}
	if len(c.order) >= mutationCacheSize {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.m[id] = mutationResult{result: result, err: err}
	c.order = append(c.order, id)
}

type mutationRecord struct {
	ID     guid.GUID `yson:"id"`
	Result any       `yson:"result"`
}

type mutationSnapshot struct {
	Entries []mutationRecord `yson:"entries"`
}

// Apply replays one logged outcome (Persistent).
func (c *mutationCache) Apply(raw []byte) error {
	var rec mutationRecord
	if err := yson.Unmarshal(raw, &rec); err != nil {
		return fmt.Errorf("decode mutation record: %w", err)
	}
	c.put(rec.ID, rec.Result, nil)
	return nil
}

// Snapshot writes the successful outcomes (Persistent).
func (c *mutationCache) Snapshot(w io.Writer) error {
	var snap mutationSnapshot
	for _, id := range c.order {
		if r := c.m[id]; r.err == nil {
			snap.Entries = append(snap.Entries, mutationRecord{ID: id, Result: r.result})
		}
	}
	raw, err := yson.MarshalFormat(&snap, yson.FormatBinary)
	if err != nil {
		return err
	}
	_, err = w.Write(raw)
	return err
}

// Restore loads outcomes from a snapshot (Persistent).
func (c *mutationCache) Restore(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	var snap mutationSnapshot
	if err := yson.Unmarshal(raw, &snap); err != nil {
		return fmt.Errorf("decode mutation snapshot: %w", err)
	}
	for _, e := range snap.Entries {
		c.put(e.ID, e.Result, nil)
	}
	return nil
}

// logMutation records a successful mutation's response when the command logged changes.
func (s *Server) logMutation(id guid.GUID, result any) {
	raw, err := yson.MarshalFormat(&mutationRecord{ID: id, Result: result}, yson.FormatBinary)
	if err == nil {
		err = s.logRecord(mutationLogName, raw)
	}
	if err != nil {
		s.log.Warn("ytlocal: mutation id not logged; a retry after a restart re-executes it")
	}
}
