// The state cache follows the job's commits (stateCache).

package job

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ytflow/yt-flow/ytstore"
)

func TestStateCacheFollowsCommits(t *testing.T) {
	c := newStateCache(10)
	states := map[string]map[string][]byte{}
	assert.False(t, c.get(7, states, false), "nothing cached yet")

	c.loaded([]uint64{7, 8}, []ytstore.StateRow{{KeyHash: 7, Key: []byte("a"), Name: "count", State: []byte("1")}})
	assert.True(t, c.get(8, states, false), "a hash loaded without rows is known to have none")
	assert.Empty(t, states)
	assert.True(t, c.get(7, states, false))
	assert.Equal(t, map[string]map[string][]byte{"a": {"count": []byte("1")}}, states)
	states["a"]["count"] = []byte("changed by user code")
	fresh := map[string]map[string][]byte{}
	c.get(7, fresh, false)
	assert.Equal(t, []byte("1"), fresh["a"]["count"], "callers get copies")
	shared := map[string]map[string][]byte{}
	assert.True(t, c.get(7, shared, true))
	assert.Equal(t, fresh, shared, "shared maps hold what copies hold")

	c.committed([]ytstore.StateRow{
		{KeyHash: 7, Key: []byte("a"), Name: "count", State: []byte("2")},
		{KeyHash: 8, Key: []byte("b"), Name: "count", State: []byte("5")},
		{KeyHash: 9, Key: []byte("c"), Name: "count", State: []byte("9")},
	})
	got := map[string]map[string][]byte{}
	c.get(7, got, false)
	c.get(8, got, false)
	assert.Equal(t, map[string]map[string][]byte{"a": {"count": []byte("2")}, "b": {"count": []byte("5")}}, got)
	assert.False(t, c.get(9, got, false), "a commit does not make an uncached hash cached")

	c.committed([]ytstore.StateRow{{KeyHash: 7, Key: []byte("a"), Name: "count"}})
	got = map[string]map[string][]byte{}
	assert.True(t, c.get(7, got, false))
	assert.Empty(t, got, "a nil state deletes")

	many := make([]uint64, 12)
	for i := range many {
		many[i] = uint64(100 + i)
	}
	c.loaded(many[:9], nil)
	assert.LessOrEqual(t, len(c.byHash), 10, "bounded")
	c.loaded(many, nil)
	assert.LessOrEqual(t, len(c.byHash), 10, "more hashes than the limit are not cached")

	c.drop()
	assert.False(t, c.get(8, got, false))
	var off *stateCache = newStateCache(-1)
	off.loaded([]uint64{1}, nil)
	off.committed([]ytstore.StateRow{{KeyHash: 1}})
	assert.False(t, off.get(1, got, false), "disabled")
}
