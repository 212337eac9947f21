package app

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytql"
	"github.com/ytflow/yt-flow/ytstore"
)

// aggKey is the key of computation agg of lifecycleConfig for k: [farm_hash(k); k].
func aggKey(t *testing.T, k string) flow.Key {
	e, err := ytql.ParseExpression("farm_hash(k)")
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.Eval(map[string]any{"k": k})
	if err != nil {
		t.Fatal(err)
	}
	return flow.Key{h, k}
}

// writeStates commits key states of agg (count per key; "seen" for alice too), the offset
// of the source partition and two partitions rows, as jobs and the controller would.
func (f *flowTest) writeStates() {
	t := f.t
	ctx := context.Background()
	lease, err := f.st.StartLease(ctx, "j", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.st.AbortLease(context.Background(), lease) })
	y := func(v any) []byte {
		b, err := sdkyson.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var states []ytstore.StateRow
	for i, k := range []string{"alice", "bob", "carol"} {
		key := aggKey(t, k)
		states = append(states, ytstore.StateRow{ComputationID: "agg", KeyHash: epoch.KeyHash(key), Key: epoch.EncodeKey(key), Name: "count", State: y(int64(i + 1))})
		if k == "alice" {
			states = append(states, ytstore.StateRow{ComputationID: "agg", KeyHash: epoch.KeyHash(key), Key: epoch.EncodeKey(key), Name: "seen", State: y(map[string]any{"first": "x"})})
		}
	}
	for _, w := range []ytstore.EpochWrite{
		{PartitionID: "agg/0of1", States: states},
		{PartitionID: "gen/src/r/0", PartitionStates: map[string][]byte{"offset/r": y(int64(42))}},
	} {
		token, err := f.st.GenerateTimestamp(ctx)
		if err != nil {
			t.Fatal(err)
		}
		w.Lease, w.Token = lease, token
		if err := f.st.CommitEpoch(ctx, &w); err != nil {
			t.Fatal(err)
		}
	}
	err = f.st.InsertRows(ctx, lifecyclePath+"/partitions", []map[string]any{
		{"partition_id": "agg/0of1", "computation_id": "agg", "lower_key": uint64(0), "upper_key": uint64(0), "source_partition": int64(-1), "source_id": "", "state": "active"},
		{"partition_id": "gen/src/r/0", "computation_id": "gen", "lower_key": uint64(0), "upper_key": uint64(0), "source_partition": int64(0), "source_id": "r", "state": "active"},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// stateCounts counts the rows of states and partition_states.
func (f *flowTest) stateCounts() (int, int) {
	f.t.Helper()
	ctx := context.Background()
	keys, err := f.st.ReadStates(ctx, ytstore.StateFilter{})
	if err != nil {
		f.t.Fatal(err)
	}
	parts, err := f.st.ReadPartitionStates(ctx, "", "", 0)
	if err != nil {
		f.t.Fatal(err)
	}
	return len(keys), len(parts)
}

type readStatesOut struct {
	KeyStates []struct {
		ComputationID string         `json:"computation_id"`
		Key           []any          `json:"key"`
		States        map[string]any `json:"states"`
	} `json:"key_states"`
	PartitionStates []struct {
		PartitionID string         `json:"partition_id"`
		States      map[string]any `json:"states"`
	} `json:"partition_states"`
	External []any `json:"external_key_states"`
	Errors   []any `json:"errors"`
}

func TestReadStates(t *testing.T) {
	f := newFlowTest(t)
	f.writeStates()
	p := lifecyclePath
	read := func(args ...string) readStatesOut {
		t.Helper()
		code, out, errs := f.cmd("", append(append([]string{"read-states", "--format", "json"}, args...), p)...)
		var r readStatesOut
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.External == nil || len(r.Errors) != 0 {
			t.Fatalf("read-states %v: %d %q %q", args, code, out, errs)
		}
		return r
	}
	all := read()
	if len(all.KeyStates) != 3 || len(all.PartitionStates) != 1 || all.PartitionStates[0].States["offset/r"] != float64(42) {
		t.Fatalf("read-states: %+v", all)
	}
	alice := read("--computation-id", "agg", "--key", `{k = "alice"}`)
	if len(alice.KeyStates) != 1 || alice.KeyStates[0].Key[1] != "alice" || alice.KeyStates[0].States["count"] != float64(1) ||
		alice.KeyStates[0].States["seen"].(map[string]any)["first"] != "x" || len(alice.PartitionStates) != 0 {
		t.Fatalf("read-states --key map: %+v", alice)
	}
	bobKey := aggKey(t, "bob")
	bob := read("--key", fmt.Sprintf(`[%du; "bob"]`, bobKey[0]), "--name", "count")
	if len(bob.KeyStates) != 1 || bob.KeyStates[0].States["count"] != float64(2) {
		t.Fatalf("read-states --key list: %+v", bob)
	}
	if r := read("--limit", "1", "--target", "key_state"); len(r.KeyStates) != 1 || len(r.PartitionStates) != 0 {
		t.Fatalf("read-states --limit 1 --target key_state: %+v", r)
	}
	if r := read("--partition-id", "gen/src/r/0"); len(r.KeyStates) != 0 || len(r.PartitionStates) != 1 {
		t.Fatalf("read-states --partition-id of a source partition: %+v", r)
	}
	if r := read("--partition-id", "agg/0of1"); len(r.KeyStates) != 3 || len(r.PartitionStates) != 0 {
		t.Fatalf("read-states --partition-id of a keyed partition: %+v", r)
	}
	if r := read("--computation-id", "agg", "--key", `{k = "nobody"}`); len(r.KeyStates) != 0 {
		t.Fatalf("read-states of an unknown key: %+v", r)
	}
	code, out, errs := f.cmd("", "read-states", "--key", `{k = `, p)
	failsCleanly(t, "malformed key", code, out, errs, 2, "--key: ")
	code, out, errs = f.cmd("", "read-states", "--key", `"alice"`, p)
	failsCleanly(t, "key not a list or map", code, out, errs, 2, "is not a YSON list or map")
	code, out, errs = f.cmd("", "read-states", "--key", `{k = "alice"}`, p)
	failsCleanly(t, "key map without computation", code, out, errs, 2, "needs --computation-id")
	code, out, errs = f.cmd("", "read-states", "--computation-id", "agg", "--key", `{k = "alice"; extra = 1}`, p)
	failsCleanly(t, "key map with an unknown column", code, out, errs, 1, "extra, which is not a column")
	code, out, errs = f.cmd("", "read-states", "--partition-id", "agg/9of9", p)
	failsCleanly(t, "unknown partition", code, out, errs, 1, `no partition "agg/9of9"`)
	code, out, errs = f.cmd("", "read-states", "--target", "everything", p)
	failsCleanly(t, "bad target", code, out, errs, 2, "--target must be")
	code, out, errs = f.cmd("", "read-states", "//home/t/none")
	failsCleanly(t, "missing pipeline", code, out, errs, 1, "does not exist")
	// A key with more states than the first batch of rows holds is read whole.
	ctx := context.Background()
	lease, err := f.st.StartLease(ctx, "j2", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.st.AbortLease(context.Background(), lease) })
	token, err := f.st.GenerateTimestamp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The first key in key order gets twelve more states.
	firstName := "alice"
	for _, k := range []string{"bob", "carol"} {
		if epoch.KeyHash(aggKey(t, k)) < epoch.KeyHash(aggKey(t, firstName)) {
			firstName = k
		}
	}
	key := aggKey(t, firstName)
	var many []ytstore.StateRow
	for i := range 12 {
		many = append(many, ytstore.StateRow{ComputationID: "agg", KeyHash: epoch.KeyHash(key), Key: epoch.EncodeKey(key), Name: fmt.Sprintf("extra%02d", i), State: []byte("1")})
	}
	if err := f.st.CommitEpoch(ctx, &ytstore.EpochWrite{PartitionID: "agg/0of1", Lease: lease, Token: token, States: many}); err != nil {
		t.Fatal(err)
	}
	first := read("--limit", "1", "--target", "key_state")
	if len(first.KeyStates) != 1 {
		t.Fatalf("read-states --limit 1: %+v", first)
	}
	want := 13
	if firstName == "alice" {
		want = 14
	}
	if first.KeyStates[0].Key[1] != firstName || len(first.KeyStates[0].States) != want {
		t.Fatalf("read-states --limit 1: key %v has %d states, want %d", first.KeyStates[0].Key, len(first.KeyStates[0].States), want)
	}
	if r := read("--computation-id", "agg", "--key", fmt.Sprintf(`{k = %q}`, firstName)); len(r.KeyStates[0].States) != want {
		t.Fatalf("%s has %d states, want %d", firstName, len(r.KeyStates[0].States), want)
	}

	// YSON output by default.
	if code, out, _ := f.cmd("", "read-states", "--target", "partition_state", p); code != 0 || ysonOf(t, out).(map[string]any)["partition_states"] == nil {
		t.Fatalf("read-states YSON: %d %q", code, out)
	}
}

func TestDeleteStates(t *testing.T) {
	f := newFlowTest(t)
	f.writeStates()
	p := lifecyclePath
	keys, parts := f.stateCounts()
	if keys != 4 || parts != 1 {
		t.Fatalf("written: %d key states, %d partition states", keys, parts)
	}
	unchanged := func(what string) {
		t.Helper()
		if k, pt := f.stateCounts(); k != keys || pt != parts {
			t.Fatalf("%s changed the states: %d key states, %d partition states", what, k, pt)
		}
	}
	f.setState("working")
	code, out, errs := f.cmd("", "delete-states", "--commit", "--force", p)
	failsCleanly(t, "delete while working", code, out, errs, 1, "is working: states can be deleted only while it is stopped or completed")
	unchanged("delete while working")
	f.setState("paused")
	code, out, errs = f.cmd("", "delete-states", "--commit", p)
	failsCleanly(t, "delete while paused", code, out, errs, 1, "--force allows paused")
	unchanged("delete while paused")
	code, out, errs = f.cmd("", "delete-states", "--commit", "--computation-id", "agg", "--key", "[1;", p)
	failsCleanly(t, "malformed key", code, out, errs, 2, "--key")
	unchanged("delete with a malformed key")

	// A dry run counts.
	code, out, errs = f.cmd("", "delete-states", "--force", "--computation-id", "agg", "--key", `{k = "alice"}`, p)
	if m, _ := ysonOf(t, out).(map[string]any); code != 0 || m["committed"] != false || m["key_count"] != int64(1) || m["key_state_count"] != int64(2) || m["partition_state_count"] != int64(0) {
		t.Fatalf("dry run: %d %q %q", code, out, errs)
	}
	unchanged("a dry run")

	f.setState("stopped")
	code, out, errs = f.cmd("", "delete-states", "--commit", "--computation-id", "agg", "--key", `{k = "alice"}`, "--format", "json", p)
	if code != 0 || !json.Valid([]byte(out)) {
		t.Fatalf("delete alice: %d %q %q", code, out, errs)
	}
	if k, pt := f.stateCounts(); k != 2 || pt != 1 {
		t.Fatalf("after deleting alice: %d key states, %d partition states", k, pt)
	}
	code, out, errs = f.cmd("", "delete-states", "--commit", "--target", "partition_state", p)
	if m, _ := ysonOf(t, out).(map[string]any); code != 0 || m["partition_state_count"] != int64(1) || m["key_state_count"] != int64(0) {
		t.Fatalf("delete partition states: %d %q %q", code, out, errs)
	}
	if k, pt := f.stateCounts(); k != 2 || pt != 0 {
		t.Fatalf("after deleting partition states: %d key states, %d partition states", k, pt)
	}
}
