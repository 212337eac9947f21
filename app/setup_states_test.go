package app

import (
	"strings"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// seedSpec has a keyed computation (count, keys [hash, word]) and a source (split).
const seedSpec = `{
  split = {computation_class_name = "NYT::NFlow::TProcessFunctionSourceComputation"; processing_function = "CorpusSplit";
    source_streams = {lines = {source_class_name = "NYT::NFlow::TQueueSource"; parameters = {queue_path = "//q"; consumer_path = "//c"}}};
    output_stream_ids = ["words"]};
  count = {computation_class_name = "NYT::NFlow::TProcessFunctionComputation"; processing_function = "CorpusCount";
    group_by_schema = [{name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(word)"}; {name = "word"; type = "string"; required = %true}];
    input_stream_ids = ["words"]};
}`

func seedPipeline(t testing.TB) *spec.Pipeline {
	t.Helper()
	p, err := spec.ParsePipeline([]byte(`{computations = ` + seedSpec + `; streams = {words = {schema = [{name = "word"; type = "string"; required = %true}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestParseSeedStates: a states file's rows become states rows keyed as a job keys them (a
// YSON integer takes its key column's signedness; the hash is the first uint64 column), one
// row per state name; every bad row is refused naming the row and what is wrong.
func TestParseSeedStates(t *testing.T) {
	p := seedPipeline(t)
	rows, err := parseSeedStates([]byte("// two states of one key\n{computation_id = count; key = [7; alice]; states = {count = 3; last = \"x\"}};\n"), p)
	if err != nil || len(rows) != 2 {
		t.Fatalf("rows %v, %v", rows, err)
	}
	key, err := epoch.DecodeKey(rows[0].Key)
	if err != nil || len(key) != 2 || key[0] != uint64(7) || key[1] != "alice" {
		t.Fatalf("key %#v, %v", key, err)
	}
	var n int64
	if rows[0].Name != "count" || rows[0].KeyHash != 7 || yson.Unmarshal(rows[0].State, &n) != nil || n != 3 || rows[1].Name != "last" {
		t.Errorf("rows %+v", rows)
	}
	for _, tc := range []struct{ text, want string }{
		{`{key = [1u; a]; states = {count = 1}}`, "row 0: computation_id: required"},
		{`{computation_id = nope; key = [1u; a]; states = {count = 1}}`, `row 0: computation_id: the spec has no computation "nope"`},
		{`{computation_id = count; key = [1u; a]; states = {c = 1}}; {computation_id = split; key = [1u]; states = {c = 1}}`, `row 1: computation "split" is not keyed`},
		{`{computation_id = count; key = [1u]; states = {count = 1}}`, `row 0: key: 1 values, computation "count" has 2 key columns`},
		{`{computation_id = count; key = [1u; a]}`, "row 0: states: required"},
		{`{computation_id = count; key = [1u; a]; states = {count = 1}`, "yson rows:"},
		{`{computation_id = count; key = 5; states = {count = 1}}`, "yson rows:"},
	} {
		if _, err := parseSeedStates([]byte(tc.text), p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.text, err, tc.want)
		}
	}
}

// FuzzParseSeedStates: parseSeedStates never panics, and every row it returns belongs to the
// keyed computation with a key that decodes to as many values as it has key columns.
func FuzzParseSeedStates(f *testing.F) {
	for _, s := range []string{
		`{computation_id = count; key = [7; alice]; states = {count = 3}};`,
		`{computation_id = count; key = [7u; "b"]; states = {count = {a = [1; 2]}}}`,
		`// c` + "\n" + `{computation_id = split; key = []; states = {}}`, `[`, `{}`, `1;2`,
	} {
		f.Add([]byte(s))
	}
	p := seedPipeline(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var rows []ytstore.StateRow
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			rows, err = parseSeedStates(data, p)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("parseSeedStates(%q) has not returned within 10s", data)
		}
		if err != nil {
			return
		}
		for _, r := range rows {
			key, err := epoch.DecodeKey(r.Key)
			if r.ComputationID != "count" || err != nil || len(key) != 2 || r.Name == "" || epoch.KeyHash(key) != r.KeyHash {
				t.Fatalf("row %+v (key %v, %v) from %q", r, key, err, data)
			}
		}
	})
}
