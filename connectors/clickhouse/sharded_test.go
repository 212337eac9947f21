package clickhouse

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ytflow/yt-flow/connectors/connector"
)

// TestShardOf: rendezvous hashing is deterministic, spreads keys over the shards, and
// removing a shard moves only the keys it held.
func TestShardOf(t *testing.T) {
	shards := []string{"a", "b", "c"}
	count := make([]int, len(shards))
	moved := 0
	for i := range 3000 {
		key := shardKey([]string{"k"}, map[string]any{"k": uint64(i)}, "")
		s := ShardOf(key, shards)
		assert.Equal(t, s, ShardOf(key, shards))
		count[s]++
		after := ShardOf(key, []string{"a", "c"})
		if shards[s] != "b" && shards[s] != []string{"a", "c"}[after] {
			moved++
		}
	}
	for i, c := range count {
		assert.InDelta(t, 1000, c, 150, "shard %s", shards[i])
	}
	assert.Zero(t, moved, "keys of the shards that stay do not move")
	assert.Equal(t, 0, ShardOf([]byte("x"), []string{"only"}))
	// Without sharding key columns the message id is the key.
	assert.Equal(t, []byte("m1"), shardKey(nil, map[string]any{"k": 1}, "m1"))
	assert.NotEqual(t, shardKey([]string{"k"}, map[string]any{"k": "1"}, ""), shardKey([]string{"k"}, map[string]any{"k": int64(1)}, ""))
}

// TestParseSharded: shard_hosts is required, each shard lists hosts; host and hosts are not
// keys of the sharded class.
func TestParseSharded(t *testing.T) {
	p, problems := parsed(t, `{shard_hosts = {s2 = ["b:9000"]; s1 = ["a"; "a2"]}; table = "t"; sharding_key_columns = ["k"]}`, parseSharded)
	assert.Empty(t, problems)
	sp := p.(*ShardedParams)
	assert.Equal(t, []string{"s1", "s2"}, sp.Shards)
	assert.Equal(t, map[string][]string{"s1": {"a", "a2"}, "s2": {"b:9000"}}, sp.ShardHosts)
	assert.Equal(t, []string{"k"}, sp.ShardingKeyColumns)
	var topo connector.Topology = newSharded("out", sp, nil)
	assert.Equal(t, "shards s1,s2 by k", topo.Topology(), "the routing: shard names and key columns, not hosts")

	_, problems = parsed(t, `{shard_hosts = {s1 = []; s2 = "x"}; host = "h"; table = "t"}`, parseSharded)
	assert.Equal(t, []string{
		"parameters/host: unknown key",
		`parameters/shard_hosts/s1: shard "s1" lists no host`,
		"parameters/shard_hosts/s2: want list, got string",
	}, problems, fmt.Sprint(problems))
	_, problems = parsed(t, `{table = "t"}`, parseSharded)
	assert.Equal(t, []string{"parameters/shard_hosts: required"}, problems)
}
