package tablet

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"go.ytsaurus.tech/yt/go/yson"
)

// sdkEncode is how the server journals a record without the fast path.
func sdkEncode(t *testing.T, rec *Record) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := yson.NewEncoderWriter(yson.NewWriterFormat(&buf, yson.FormatBinary)).Encode(rec); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func randomScalar(r *rand.Rand) any {
	switch r.IntN(9) {
	case 0:
		return nil
	case 1:
		return string(make([]byte, r.IntN(200)))
	case 2:
		return "w" + string(rune('a'+r.IntN(26)))
	case 3:
		return r.Int64() - math.MaxInt64/2
	case 4:
		return r.Uint64()
	case 5:
		return r.IntN(2) == 0
	case 6:
		return r.Float64() * 1e6
	case 7:
		return []byte{byte(r.IntN(256)), 0}
	default:
		return int64(r.IntN(300) - 150)
	}
}

func randomScalars(r *rand.Rand) []any {
	var vs []any
	for range r.IntN(5) {
		vs = append(vs, randomScalar(r))
	}
	return vs
}

func randomInts(r *rand.Rand) []int {
	var gs []int
	for range r.IntN(3) {
		gs = append(gs, r.IntN(1000)-10)
	}
	return gs
}

// TestAppendCommitRecordMatchesSDK: the journal's fast encoding of commit records is byte
// for byte the SDK encoder's (so replay and older logs are untouched), and records it does
// not take are left to the SDK with b unchanged.
func TestAppendCommitRecordMatchesSDK(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		c := &CommitRecord{Timestamp: Timestamp(r.Uint64())}
		for range r.IntN(4) {
			c.Writes = append(c.Writes, RowWrite{Table: "t" + string(rune('0'+r.IntN(10))), Key: randomScalars(r),
				Values: randomScalars(r), Delete: r.IntN(3) == 0, Groups: randomInts(r)})
		}
		for range r.IntN(3) {
			c.Locks = append(c.Locks, RowLock{Table: "l", Key: randomScalars(r), Groups: randomInts(r), Exclusive: r.IntN(2) == 0})
		}
		for range r.IntN(4) {
			c.Appends = append(c.Appends, RowAppend{Table: "q", Tablet: r.IntN(40), Values: randomScalars(r)})
		}
		rec := &Record{Kind: RecordCommit, Commit: c}
		prefix := []byte("prefix")
		got, ok := AppendCommitRecord(prefix, rec)
		if !ok {
			t.Fatalf("seed %d: commit of scalars not taken", seed)
		}
		if want := sdkEncode(t, rec); !bytes.Equal(got[len(prefix):], want) {
			t.Fatalf("seed %d:\n got %q\nwant %q", seed, got[len(prefix):], want)
		}
		var back Record
		if err := yson.Unmarshal(got[len(prefix):], &back); err != nil || back.Commit == nil || back.Commit.Timestamp != c.Timestamp {
			t.Fatalf("seed %d: decodes to %+v, %v", seed, back, err)
		}
	}
	for _, rec := range []*Record{
		{Kind: RecordTrim, Table: "q", TrimmedRowCount: 5},
		{Kind: RecordCommit},
		{Kind: RecordCommit, Table: "x", Commit: &CommitRecord{}},
		{Kind: RecordCommit, Commit: &CommitRecord{Writes: []RowWrite{{Table: "t", Key: []any{map[string]any{"a": 1}}}}}},
	} {
		b := []byte("keep")
		if got, ok := AppendCommitRecord(b, rec); ok || string(got) != "keep" {
			t.Fatalf("%+v: taken (%v) or b changed (%q)", rec, ok, got)
		}
	}
}
