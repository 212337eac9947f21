package ytstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/yson"
)

// TestChangeSpec replaces and removes the static and the dynamic spec with their versions,
// and writes nothing when the change function refuses.
func TestChangeSpec(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, "//home/admin/pipe")
	if err := st.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	set := func(dynamic bool, v string) (int64, error) {
		return st.ChangeSpec(ctx, dynamic, func(*Attributes) (yson.RawValue, error) {
			if v == "" {
				return nil, nil
			}
			return yson.RawValue(v), nil
		})
	}
	if v, err := set(false, "{a=1}"); err != nil || v != 1 {
		t.Fatalf("first set: %d, %v", v, err)
	}
	if v, err := set(true, "{b=2}"); err != nil || v != 1 {
		t.Fatalf("dynamic set: %d, %v", v, err)
	}
	refused := errors.New("refused")
	var seen *Attributes
	_, err := st.ChangeSpec(ctx, false, func(a *Attributes) (yson.RawValue, error) {
		seen = a
		return nil, refused
	})
	if !errors.Is(err, refused) || seen == nil || seen.SpecVersion != 1 {
		t.Fatalf("refused change: err %v, saw %+v", err, seen)
	}
	var spec map[string]int64
	if err := yson.Unmarshal(seen.Spec, &spec); err != nil || spec["a"] != 1 {
		t.Fatalf("change saw spec %v, %v", spec, err)
	}
	a, err := st.Attributes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a.SpecVersion != 1 || a.DynamicSpecVersion != 1 || len(a.Spec) == 0 {
		t.Fatalf("after a refused change: %+v", a)
	}
	if v, err := set(false, ""); err != nil || v != 2 {
		t.Fatalf("remove: %d, %v", v, err)
	}
	if a, err = st.Attributes(ctx); err != nil || len(a.Spec) != 0 || a.SpecVersion != 2 || len(a.DynamicSpec) == 0 {
		t.Fatalf("after remove: %+v, %v", a, err)
	}
	// Removing what is not there still counts a version and fails nothing.
	if v, err := set(false, ""); err != nil || v != 3 {
		t.Fatalf("second remove: %d, %v", v, err)
	}
	missing := openTestStore(t, "//home/admin/none")
	if _, err := missing.ChangeSpec(ctx, false, func(*Attributes) (yson.RawValue, error) { return yson.RawValue("{}"), nil }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("change of a missing pipeline: %v, want ErrNotFound", err)
	}
}

// TestReadAndDeleteStates reads key and partition states by filter and deletes a
// selection in one transaction.
func TestReadAndDeleteStates(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, "//home/admin/states")
	if err := st.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	lease, err := st.StartLease(ctx, "j", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.AbortLease(context.Background(), lease) })
	token, err := st.GenerateTimestamp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	one, _ := yson.Marshal(int64(1))
	err = st.CommitEpoch(ctx, &EpochWrite{PartitionID: "count/0of1", Lease: lease, Token: token,
		States: []StateRow{
			{ComputationID: "count", KeyHash: 5, Key: []byte("k5"), Name: "n", State: one},
			{ComputationID: "count", KeyHash: 5, Key: []byte("k5"), Name: "m", State: one},
			{ComputationID: "count", KeyHash: 5, Key: []byte("k5b"), Name: "n", State: one},
			{ComputationID: "count", KeyHash: 7, Key: []byte("k7"), Name: "n", State: one},
			{ComputationID: "other", KeyHash: 5, Key: []byte("k5"), Name: "n", State: one},
		},
		PartitionStates: map[string][]byte{"offset/a": one, "offset/b": one},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		f    StateFilter
		want int
	}{
		{StateFilter{}, 5},
		{StateFilter{ComputationID: "count"}, 4},
		{StateFilter{ComputationID: "count", Key: []byte("k5"), KeyHash: 5, HasKeyHash: true}, 2},
		{StateFilter{ComputationID: "count", Key: []byte("k5")}, 2},
		{StateFilter{Name: "n"}, 4},
		{StateFilter{Limit: 3}, 3},
	} {
		rows, err := st.ReadStates(ctx, c.f)
		if err != nil || len(rows) != c.want {
			t.Errorf("ReadStates(%+v) = %d rows, %v; want %d", c.f, len(rows), err, c.want)
		}
	}
	// A limit takes the first rows in key order.
	first, err := st.ReadStates(ctx, StateFilter{Limit: 3})
	if err != nil || len(first) != 3 || string(first[0].Key) != "k5" || first[0].Name != "m" || first[1].Name != "n" || string(first[2].Key) != "k5b" {
		t.Fatalf("ReadStates(Limit 3) = %+v, %v", first, err)
	}
	if counts, err := st.StateCounts(ctx); err != nil || len(counts) != 2 || counts["count"] != 4 || counts["other"] != 1 {
		t.Fatalf("StateCounts = %v, %v", counts, err)
	}
	parts, err := st.ReadPartitionStates(ctx, "count/0of1", "", 0)
	if err != nil || len(parts) != 2 || parts[0].Name != "offset/a" {
		t.Fatalf("ReadPartitionStates = %+v, %v", parts, err)
	}
	if p, err := st.ReadPartitionStates(ctx, "", "offset/b", 0); err != nil || len(p) != 1 {
		t.Fatalf("ReadPartitionStates by name = %+v, %v", p, err)
	}
	keys, err := st.ReadStates(ctx, StateFilter{ComputationID: "count", Key: []byte("k5")})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteStates(ctx, keys, parts[:1]); err != nil {
		t.Fatal(err)
	}
	if rows, err := st.ReadStates(ctx, StateFilter{}); err != nil || len(rows) != 3 {
		t.Fatalf("after delete: %d key states, %v; want 3", len(rows), err)
	}
	if p, err := st.ReadPartitionStates(ctx, "", "", 0); err != nil || len(p) != 1 || p[0].Name != "offset/b" {
		t.Fatalf("after delete: partition states %+v, %v", p, err)
	}
}

// TestControllerLogRange reads controller_logs by row index.
func TestControllerLogRange(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, "//home/admin/logs")
	if err := st.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := st.AppendControllerLog(ctx, LogRecord{Time: uint64(i + 1), Host: "h", Data: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	data := func(recs []IndexedLogRecord) string {
		s := ""
		for _, r := range recs {
			s += r.Data
		}
		return s
	}
	for _, c := range []struct {
		offset int64
		count  int
		want   string
	}{
		{0, 0, "abcde"}, {2, 0, "cde"}, {1, 2, "bc"}, {-2, 0, "de"}, {-10, 3, "abc"}, {7, 0, ""},
	} {
		recs, err := st.ControllerLogRange(ctx, c.offset, c.count)
		if err != nil || data(recs) != c.want {
			t.Errorf("ControllerLogRange(%d, %d) = %q, %v; want %q", c.offset, c.count, data(recs), err, c.want)
		}
	}
	recs, _ := st.ControllerLogRange(ctx, 3, 1)
	if len(recs) != 1 || recs[0].Index != 3 || recs[0].Time != 4 {
		t.Errorf("record 3 = %+v", recs)
	}
}
