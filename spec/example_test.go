package spec_test

import (
	"fmt"

	"github.com/ytflow/yt-flow/spec"
)

func ExampleParseConfig() {
	_, err := spec.ParseConfig([]byte(`{
		path = "//home/p";
		spec = {computations = {
			split = {
				computation_class_name = "source";
				processing_function = "Split";
				source_streams = {lines = {source_class_name = "queue"; parameters = {queue_path = "//home/q"; finit = %true}}};
			};
		}};
	}`))
	fmt.Println(err)
	// Output:
	// spec/computations/split/source_streams/lines/parameters/consumer_path: required
	// spec/computations/split/source_streams/lines/parameters/finit: unknown key (did you mean "finite"?)
}
