package registry

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/yson"
)

func parseNothing(f *yson.Fields) any { return nil }

func TestRegisterAndLookup(t *testing.T) {
	Register(Class{Name: "test_source_x", Role: Source, FlowNames: []string{"NYT::NFlow::TTestSourceX"}, Aliases: []string{"tsx"},
		Guarantee: ExactlyOnce, Parse: parseNothing})
	for _, name := range []string{"test_source_x", "NYT::NFlow::TTestSourceX", "TTestSourceX", "tsx"} {
		c, ok := Lookup(Source, name)
		require.True(t, ok, name)
		assert.Equal(t, "test_source_x", c.Name)
	}
	_, ok := Lookup(Sink, "test_source_x")
	assert.False(t, ok, "roles have separate names")
	assert.Contains(t, ShortNames(Source), "tsx")
	assert.NotContains(t, ShortNames(Source), "NYT::NFlow::TTestSourceX", "qualified names are not offered")

	// The same short name may name a sink: roles are separate.
	Register(Class{Name: "test_source_x", Role: Sink, Guarantee: AtLeastOnce, Kind: AsyncSink, Parse: parseNothing})
}

func TestRegisterRejectsMistakes(t *testing.T) {
	for name, c := range map[string]Class{
		"no parser":           {Name: "bad1", Role: Source, Guarantee: ExactlyOnce},
		"no role":             {Name: "bad2", Guarantee: ExactlyOnce, Parse: parseNothing},
		"no guarantee":        {Name: "bad3", Role: Source, Parse: parseNothing},
		"sink without kind":   {Name: "bad4", Role: Sink, Guarantee: ExactlyOnce, Parse: parseNothing},
		"at-most-once a sync": {Name: "bad5", Role: Sink, Guarantee: ExactlyOnce, Kind: SyncSink, AtMostOnce: true, Parse: parseNothing},
	} {
		assert.Panics(t, func() { Register(c) }, name)
	}
	Register(Class{Name: "dup_a", Role: Source, FlowNames: []string{"NYT::NFlow::TDup"}, Guarantee: ExactlyOnce, Parse: parseNothing})
	assert.Panics(t, func() {
		Register(Class{Name: "dup_b", Role: Source, Aliases: []string{"TDup"}, Guarantee: ExactlyOnce, Parse: parseNothing})
	}, "a spelling taken by another class of the role")
}

func TestPartitionFilterAndRichPath(t *testing.T) {
	n, err := yson.Decode([]byte(`{partition_filter = [[0; 2]; [3; 3]; [1]]; p = "home/x"; q = "<cluster=c>//ok"}`))
	require.NoError(t, err)
	var w yson.Walker
	f := w.Fields(n, "parameters")
	assert.Equal(t, [][2]int64{{0, 2}}, PartitionFilter(f))
	assert.Equal(t, "home/x", RichPath(f, "p"))
	assert.Equal(t, "<cluster=c>//ok", RichPath(f, "q"))
	f.Close()
	var got []string
	for _, p := range w.Problems() {
		got = append(got, p.String())
	}
	assert.Equal(t, []string{
		`parameters/p: "home/x" is not an absolute Cypress path (want //…)`,
		"parameters/partition_filter/1: range [3, 3) is empty or negative",
		"parameters/partition_filter/2: want a [begin; end] pair",
	}, got)
}
