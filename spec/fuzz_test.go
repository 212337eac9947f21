package spec

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func addSeeds(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.yson")
	examples, _ := filepath.Glob("../examples/*/pipeline.yson")
	for _, file := range append(files, examples...) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{path="//p"; spec={computations={}}}`))
	f.Add(crossClusterSpec("<cluster=a>//in", "<cluster=a>//c", "<cluster=b>//o", "//o2", "<cluster=a>//p"))
	f.Add([]byte(`{computations={a={computation_class_name="transform"}}}`))
	f.Add([]byte(`{throttlers={t={limit=5;classes={c={weight=2.0}}}};computations={c={input_rows_throttler_id=t;input_rows_throttler_class_id=c;key_visitor_streams={v={parameters={period=1000;buffer_row_limit=3}}}}}}`))
	f.Add([]byte(`{computations={a={computation_class_name="transform"; pivot_finder={part_count=4; window_size=100}}}}`))
	f.Add([]byte(orderingPipeline(`{time_type = "event_time"; stream_delays = {views = "5s"; clicks = 10}}`, false)))
	f.Add([]byte(orderingPipeline(`{}`, true)))
	f.Add([]byte(`{computations={a={parameters={desired_average_partition_messages_per_second=20.5; allowed_partition_count_deviation=1.5;
		partition_count_double_delay="2s"; partition_count_half_delay=60000; min_partition_count=2; max_partition_count=8;
		desired_average_partition_memory_used="1G"; weight_multiplier=0.5; interrupting_weight_multiplier=0}}}}`))
	f.Add([]byte(`{computations={c={state_joiners={"/s"={cache={ttl=60000}}}; external_state_joiners={"/j"={parameters={cache={ttl="5s"}}}}}}}`))
	f.Add([]byte(stateJoinPipeline(`{"/s" = {computation_id = one; state_name = count; join_on = {key_provider_streams = [b]; key_schema_override = [{name = "user"; type = "string"}]}}}`, "{}")))
}

// checkResult asserts the parse contract: a value or a *ValidationError with located,
// sorted problems, and the same answer on a second parse (no map-order dependence).
func checkResult[T any](t *testing.T, data []byte, parse func([]byte) (*T, error)) {
	v, err := parse(data)
	if err == nil {
		if v == nil {
			t.Fatal("nil result without error")
		}
		return
	}
	if v != nil {
		t.Fatal("result together with an error")
	}
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) == 0 {
		t.Fatalf("error %T %v is not a non-empty *ValidationError", err, err)
	}
	for i, p := range ve.Problems {
		if p.Path == "" || p.Message == "" {
			t.Fatalf("problem without path or message: %+v", p)
		}
		if i > 0 && ve.Problems[i-1].Path > p.Path {
			t.Fatalf("problems not sorted: %q before %q", ve.Problems[i-1].Path, p.Path)
		}
	}
	_, err2 := parse(data)
	if err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("parse is not deterministic:\n%v\n---\n%v", err, err2)
	}
}

func FuzzParseConfig(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) { checkResult(t, data, ParseConfig) })
}

func FuzzParsePipeline(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkResult(t, data, ParsePipeline)
		checkResult(t, data, ParseDynamic)
	})
}
