package ytlocal

import (
	"go.ytsaurus.tech/yt/go/guid"
)

const mutationCacheSize = 100000

type mutationResult struct {
	result any
	err    error
}

// mutationCache remembers the outcome of recent mutations by mutation_id, so a retried
// request (retry=%true after a lost response) gets the original answer instead of being
// applied twice. It is bounded (FIFO eviction) and lives in memory only.
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
