// The committed states of a keyed job's keys, kept in memory (stateCache).

package job

import "github.com/ytflow/yt-flow/ytstore"

// stateCache keeps the committed states of a keyed job's keys in memory, so an epoch loads
// from the states table only the key hashes it has not seen. A job owns its key range
// exclusively for as long as its lease lives (the lease fences every other writer), and the
// cache changes only with the job's own committed epochs, so what it holds is what the table
// holds.
//
// Invariant: the cache is updated only after a commit applied, never from an epoch that did
// not; a job whose commit fails for good stops, and a new job starts with an empty cache
// (TestStateCacheFollowsCommits; TestWordCountUnderNetworkFaults fails when the cache is
// updated before the commit).
type stateCache struct {
	limit int
	// byHash maps a key hash to every state of every key with that hash (encoded key → state
	// name → value); a hash present with no keys is known to have no state.
	byHash map[uint64]map[string]map[string][]byte
}

// newStateCache holds up to limit key hashes; limit < 0 disables it.
func newStateCache(limit int) *stateCache {
	if limit < 0 {
		return nil
	}
	return &stateCache{limit: limit, byHash: map[uint64]map[string]map[string][]byte{}}
}

// get adds the cached states of hash to states and reports whether the hash is cached. The
// state maps are copies unless share is set: then they are the cache's own, for functions that
// never modify them (flow.LeavesStateAlone); the cache changes them only in committed, after
// the epoch.
func (c *stateCache) get(hash uint64, states map[string]map[string][]byte, share bool) bool {
	if c == nil {
		return false
	}
	keys, ok := c.byHash[hash]
	for k, named := range keys {
		if share {
			states[k] = named
			continue
		}
		m := make(map[string][]byte, len(named))
		for n, v := range named {
			m[n] = v
		}
		states[k] = m
	}
	return ok
}

// loaded records the complete states of hashes, as read from the table.
func (c *stateCache) loaded(hashes []uint64, rows []ytstore.StateRow) {
	if c == nil {
		return
	}
	if len(c.byHash)+len(hashes) > c.limit {
		// Make room: drop arbitrary entries (they are loaded again when needed).
		for h := range c.byHash {
			if len(c.byHash)+len(hashes) <= c.limit*9/10 {
				break
			}
			delete(c.byHash, h)
		}
	}
	if len(hashes) > c.limit {
		return
	}
	for _, h := range hashes {
		c.byHash[h] = map[string]map[string][]byte{}
	}
	for _, r := range rows {
		keys, ok := c.byHash[r.KeyHash]
		if !ok {
			continue
		}
		k := string(r.Key)
		if keys[k] == nil {
			keys[k] = map[string][]byte{}
		}
		keys[k][r.Name] = r.State
	}
}

// committed applies the state writes of an epoch that committed (a nil State deleted the
// state); hashes not cached stay uncached.
func (c *stateCache) committed(rows []ytstore.StateRow) {
	if c == nil {
		return
	}
	for _, r := range rows {
		keys, ok := c.byHash[r.KeyHash]
		if !ok {
			continue
		}
		named := keys[string(r.Key)] // a lookup converts the key without copying it
		if r.State == nil {
			delete(named, r.Name)
			if len(named) == 0 {
				delete(keys, string(r.Key))
			}
			continue
		}
		if named == nil {
			named = map[string][]byte{}
			keys[string(r.Key)] = named
		}
		named[r.Name] = r.State
	}
}

// drop forgets everything (a commit with an unknown outcome that was not resolved).
func (c *stateCache) drop() {
	if c != nil {
		clear(c.byHash)
	}
}
