package controller

import (
	"slices"
	"testing"

	"github.com/ytflow/yt-flow/spec"
)

// testSpec has a random source (one partition) feeding a keyed computation.
const testSpec = `{
    computations = {
        gen = {
            computation_class_name = "NYT::NFlow::TProcessFunctionSourceComputation";
            processing_function = "Gen";
            source_streams = {r = {source_class_name = "random"; parameters = {partition_count = 1}}};
            output_stream_ids = ["x"];
        };
        agg = {
            computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
            processing_function = "Agg";
            group_by_schema = [{name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(k)"}; {name = "k"; type = "string"; required = %true}];
            input_stream_ids = ["x"];
        };
    };
    streams = {x = {schema = [{name = "k"; type = "string"; required = %true}]}};
}`

const testDynamicSpec = `{computations = {agg = {parameters = {desired_partition_count = 2}}}}`

func TestTopologyOf(t *testing.T) {
	p, err := spec.ParsePipeline([]byte(testSpec))
	if err != nil {
		t.Fatalf("parse test spec: %v", err)
	}
	d, err := spec.ParseDynamic([]byte(testDynamicSpec))
	if err != nil {
		t.Fatalf("parse test dynamic spec: %v", err)
	}
	topo := TopologyOf(p, d)
	if len(topo.Computations) != 2 {
		t.Fatalf("computations %+v", topo.Computations)
	}
	agg, gen := topo.Computations[0], topo.Computations[1]
	if agg.ID != "agg" || len(agg.Sources) != 0 || agg.PartitionCount != 2 {
		t.Errorf("agg: %+v", agg)
	}
	if gen.ID != "gen" || len(gen.Sources) != 1 || gen.Sources[0].ID != "r" || gen.Sources[0].ListKey != "gen/src/r/" {
		t.Errorf("gen: %+v", gen)
	}
	want, _ := desiredPartitions(topo, map[string][]int64{"gen/src/r/": {0}})
	if got := sortedKeys(want); !slices.Equal(got, []string{"agg/0of2", "agg/1of2", "gen/src/r/0"}) {
		t.Errorf("partitions %v", got)
	}
	if got := TopologyOf(p, nil).Computations[0].PartitionCount; got != 1 {
		t.Errorf("default partition count %d, want 1", got)
	}
	if len(TopologyOf(nil, nil).Computations) != 0 {
		t.Error("nil spec has computations")
	}
}
