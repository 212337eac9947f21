// State joiners read other computations' committed states (statejoin.go).

package job

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytql"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestStateJoinerReadsCommittedState: on ytlocal through the real client, computation
// "count" commits its state "count" of key [farm_hash(dog), dog] epoch by epoch; the state
// joiners of computation "check" read it as last committed: "/c" (the invocation's key, its
// dynamic cache{ttl} one minute) and "/o" (the message payload keyed by key_schema_override,
// no cache). With the injected clock, "/c" serves its cached value until the ttl passed and
// then the newly committed one; "/o" sees every commit at once. A key the epoch's messages did
// not give (or one of a stream outside key_provider_streams) was not preloaded: an error
// wrapping flow.ErrNotPreloaded; another computation's state of the same name is not read.
func TestStateJoinerReadsCommittedState(t *testing.T) {
	st, ctx := commitEnv(t)
	lease, err := st.StartLease(ctx, "count-job", time.Minute)
	require.NoError(t, err)
	dog := flow.Key{ytql.FarmHash("dog"), "dog"}
	commit := func(comp, value string) {
		t.Helper()
		token, err := st.GenerateTimestamp(ctx)
		require.NoError(t, err)
		require.NoError(t, st.CommitEpoch(ctx, &ytstore.EpochWrite{PartitionID: "p-" + comp, Lease: lease, Token: token,
			States: []ytstore.StateRow{{ComputationID: comp, KeyHash: epoch.KeyHash(dog), Key: epoch.EncodeKey(dog), Name: "count", State: []byte(value)}}}))
	}
	groupBy := schema.Schema{Columns: []schema.Column{
		{Name: "hash", Type: schema.TypeUint64, Expression: "farm_hash(word)"}, {Name: "word", Type: schema.TypeString}}}
	r := testRunner(st, st, "p-check", lease)
	r.comp = &spec.Computation{ID: "check", Kind: spec.KindTransform, GroupBy: groupBy, StateJoinerSpecs: map[string]*spec.StateJoiner{
		"/c": {Name: "/c", ComputationID: "count", StateName: "count", KeyProviderStreams: []string{"counts"}, AutoPreload: true},
		"/o": {Name: "/o", ComputationID: "count", StateName: "count", KeySchemaOverride: groupBy, AutoPreload: true},
	}}
	r.dyn.StateJoiners = map[string]spec.JoinerCache{"/c": {TTL: time.Minute}}
	batch := &epoch.Batch{Inputs: []epoch.Input{
		{Message: flow.Message{StreamID: "counts", MessageID: "m1", Key: dog, Payload: flow.Row{"word": "dog"}}},
		{Message: flow.Message{StreamID: "other", MessageID: "m2", Key: flow.Key{ytql.FarmHash("cat"), "cat"}, Payload: flow.Row{"word": "cat"}}},
	}}
	read := func(now time.Time, name string, k flow.Key) string {
		t.Helper()
		j, err := r.loadJoined(ctx, st, batch, now)
		require.NoError(t, err)
		b, ok, err := j.JoinedState(name, k)
		require.NoError(t, err)
		if !ok {
			return "<none>"
		}
		return string(b)
	}
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	assert.Equal(t, "<none>", read(t0, "/c", dog), "nothing committed yet")
	commit("count", "1")
	commit("other", "100") // another computation's state of the same name
	assert.Equal(t, "<none>", read(t0.Add(time.Second), "/c", dog), "cached absence within the ttl")
	assert.Equal(t, "1", read(t0.Add(time.Second), "/o", dog), "no cache: the committed state")
	assert.Equal(t, "1", read(t0.Add(time.Minute), "/c", dog), "the ttl passed: read again")
	commit("count", "2")
	assert.Equal(t, "1", read(t0.Add(time.Minute+59*time.Second), "/c", dog), "cached within the ttl")
	assert.Equal(t, "2", read(t0.Add(time.Minute+59*time.Second), "/o", dog))
	assert.Equal(t, "2", read(t0.Add(2*time.Minute), "/c", dog), "the ttl passed: the new commit")

	r.dyn.StateJoiners = nil // the dynamic spec drops the cache: every epoch reads
	commit("count", "3")
	assert.Equal(t, "3", read(t0.Add(2*time.Minute), "/c", dog))

	j, err := r.loadJoined(ctx, st, batch, t0)
	require.NoError(t, err)
	_, _, err = j.JoinedState("/c", flow.Key{ytql.FarmHash("cat"), "cat"})
	assert.ErrorIs(t, err, flow.ErrNotPreloaded, "cat came on a stream outside key_provider_streams")
	b, ok, err := j.JoinedState("/o", flow.Key{ytql.FarmHash("cat"), "cat"})
	assert.NoError(t, err, "/o takes keys from every stream")
	assert.False(t, ok)
	assert.Nil(t, b)
	k, err := j.JoinKey("/o", flow.Key{uint64(1), "x"}, &flow.Message{Payload: flow.Row{"word": "dog"}})
	require.NoError(t, err)
	assert.Equal(t, dog, k, "key_schema_override keys the payload")
	k, err = j.JoinKey("/c", dog, &flow.Message{Payload: flow.Row{"word": "cat"}})
	require.NoError(t, err)
	assert.Equal(t, dog, k, "without an override the invocation's key")
	_, _, err = j.JoinedState("/nope", dog)
	assert.ErrorContains(t, err, "not declared in state_joiners")
}

// TestExternalJoinerCacheTTL: a joined external state (external_state_joiners) with the
// dynamic cache{ttl} of one minute serves the row it read until the ttl passed (injected
// clock), then reads the table again; without a ttl every epoch reads the table. On ytlocal
// through the real client.
func TestExternalJoinerCacheTTL(t *testing.T) {
	st, ctx := commitEnv(t)
	const caps = "//tmp/caps"
	require.NoError(t, st.EnsureUserTable(ctx, ytstore.UserTable{Path: caps, Kind: ytstore.UserSortedTable, Schema: schema.Schema{UniqueKeys: true, Columns: []schema.Column{
		{Name: "hash", Type: schema.TypeUint64, SortOrder: schema.SortAscending, Expression: "farm_hash(user)"},
		{Name: "user", Type: schema.TypeString, SortOrder: schema.SortAscending},
		{Name: "cap", Type: schema.TypeInt64},
	}}}))
	r := testRunner(st, st, "p", "")
	r.extStore = st
	r.comp = &spec.Computation{ID: "keep", Kind: spec.KindTransform,
		GroupBy:        schema.Schema{Columns: []schema.Column{{Name: "hash", Type: schema.TypeUint64, Expression: "farm_hash(user)"}, {Name: "user", Type: schema.TypeString}}},
		ExternalStates: map[string]*spec.ExternalState{"/caps": {Name: "/caps", Path: caps, Joiner: true}}}
	r.dyn.ExternalStateJoiners = map[string]spec.JoinerCache{"/caps": {TTL: time.Minute}}
	ann := flow.Key{ytql.FarmHash("ann"), "ann"}
	batch := &epoch.Batch{Inputs: []epoch.Input{{Message: flow.Message{MessageID: "m1", Key: ann, Payload: flow.Row{"user": "ann"}}}}}
	set := func(c int64) {
		t.Helper()
		require.NoError(t, st.InsertRows(ctx, caps, []map[string]any{{"user": "ann", "cap": c}}))
	}
	read := func(now time.Time) any {
		t.Helper()
		got, _, err := r.loadExternal(ctx, batch, now)
		require.NoError(t, err)
		row := got["/caps"][string(epoch.EncodeKey(ann))]
		if row == nil {
			return "<none>"
		}
		return row["cap"]
	}
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	set(10)
	assert.Equal(t, int64(10), read(t0))
	set(20)
	assert.Equal(t, int64(10), read(t0.Add(59*time.Second)), "cached within the ttl")
	assert.Equal(t, int64(20), read(t0.Add(time.Minute)), "the ttl passed: read again")
	r.dyn.ExternalStateJoiners = nil
	set(30)
	assert.Equal(t, int64(30), read(t0.Add(time.Minute)), "no ttl: every epoch reads")
}

// TestExternalTableKeyColumns: on ytlocal, an external state table whose leading key columns
// are the group_by_schema columns opens, with its further key columns as several rows per key
// (read by key prefix); one whose key does not begin with them, or whose further key column
// is computed, is refused naming the table and both column lists.
func TestExternalTableKeyColumns(t *testing.T) {
	st, ctx := commitEnv(t)
	table := func(path string, cols ...schema.Column) {
		t.Helper()
		cols = append(cols, schema.Column{Name: "v", Type: schema.TypeInt64})
		require.NoError(t, st.EnsureUserTable(ctx, ytstore.UserTable{Path: path, Kind: ytstore.UserSortedTable, Schema: schema.Schema{UniqueKeys: true, Columns: cols}}))
	}
	hash := schema.Column{Name: "hash", Type: schema.TypeUint64, SortOrder: schema.SortAscending, Expression: "farm_hash(user)"}
	user := schema.Column{Name: "user", Type: schema.TypeString, SortOrder: schema.SortAscending}
	day := schema.Column{Name: "day", Type: schema.TypeInt64, SortOrder: schema.SortAscending}
	table("//tmp/days", hash, user, day)
	table("//tmp/swapped", hash, day, user)
	table("//tmp/computed", hash, user, schema.Column{Name: "h2", Type: schema.TypeUint64, SortOrder: schema.SortAscending, Expression: "farm_hash(user)"})
	require.NoError(t, st.InsertRows(ctx, "//tmp/days", []map[string]any{
		{"user": "ann", "day": int64(2), "v": int64(20)}, {"user": "ann", "day": int64(1), "v": int64(10)}, {"user": "bob", "day": int64(1), "v": int64(5)}}))
	open := func(path string) (*runner, error) {
		r := testRunner(st, st, "p", "")
		r.extStore = st
		r.comp = &spec.Computation{ID: "keep", Kind: spec.KindTransform,
			GroupBy:        schema.Schema{Columns: []schema.Column{{Name: "hash", Type: schema.TypeUint64, Expression: "farm_hash(user)"}, {Name: "user", Type: schema.TypeString}}},
			ExternalStates: map[string]*spec.ExternalState{"/s": {Name: "/s", Path: path}}}
		_, err := r.externals(ctx)
		return r, err
	}
	r, err := open("//tmp/days")
	require.NoError(t, err)
	ann := flow.Key{ytql.FarmHash("ann"), "ann"}
	_, rows, err := r.loadExternal(ctx, &epoch.Batch{Inputs: []epoch.Input{{Message: flow.Message{MessageID: "m", Key: ann}}}}, time.Now())
	require.NoError(t, err)
	got := rows["/s"][string(epoch.EncodeKey(ann))]
	require.Len(t, got, 2, "ann's rows, not bob's")
	assert.Equal(t, []any{int64(1), int64(2)}, []any{got[0]["day"], got[1]["day"]}, "ordered by the further key column")
	assert.Equal(t, map[string][]string{"/s": {"day"}}, externalSubKeys(r.ext))

	_, err = open("//tmp/swapped")
	assert.ErrorContains(t, err, "computation keep: external state /s: table //tmp/swapped has key columns [hash day user], want the group_by_schema columns [hash user] first")
	_, err = open("//tmp/computed")
	assert.ErrorContains(t, err, "table //tmp/computed: further key column h2 is computed")
}
