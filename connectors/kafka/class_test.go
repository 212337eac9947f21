package kafka_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	_ "github.com/ytflow/yt-flow/connectors/kafka"
	"github.com/ytflow/yt-flow/spec"
)

// TestKafkaSinkColumnTypes: payload_column and key_column must name columns whose values
// have record bytes (strings, numbers, booleans); another type is a spec error naming the
// sink's parameter, the column, its stream and what to name instead.
func TestKafkaSinkColumnTypes(t *testing.T) {
	const pipeline = `{computations = {c = {computation_class_name = "source"; processing_function = "F";
		source_streams = {in = {source_class_name = "queue"; parameters = {queue_path = "//q"; consumer_path = "//c"}}};
		output_stream_ids = ["o"];
		sinks = {out = {sink_class_name = "CLASS"; input_stream_ids = ["o"]; parameters = {topic = "t"; PARAMS}}}}};
		streams = {o = {schema = [{name = "word"; type = "string"}; {name = "n"; type = "int64"}; {name = "meta"; type = "any"}]}}}`
	for _, class := range []string{"NYT::NFlow::TKafkaSink", "NYT::NFlow::TAtLeastOnceKafkaSink"} {
		for params, want := range map[string]string{
			`payload_column = "n"; key_column = "word"`: "",
			`payload_column = "word"`:                   "",
			`payload_column = "meta"`:                   `computations/c/sinks/out/parameters/payload_column: column "meta" of stream "o" has type any, which has no record bytes: name a string, number or boolean column`,
			`payload_column = "n"; key_column = "meta"`: `computations/c/sinks/out/parameters/key_column: column "meta" of stream "o" has type any, which has no record bytes: name a string, number or boolean column`,
		} {
			_, err := spec.ParsePipeline([]byte(strings.NewReplacer("CLASS", class, "PARAMS", params).Replace(pipeline)))
			if want == "" {
				require.NoError(t, err, "%s {%s}", class, params)
				continue
			}
			require.Error(t, err, "%s {%s}", class, params)
			require.Equal(t, want, err.Error(), "%s {%s}", class, params)
		}
	}
}
