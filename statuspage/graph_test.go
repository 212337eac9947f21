package statuspage

import (
	"testing"

	"github.com/ytflow/yt-flow/status"
)

// TestLayoutColumns: sources in column 0, each computation right of its furthest input,
// sinks right of their computation; every stream is an edge between the boxes it joins.
func TestLayoutColumns(t *testing.T) {
	comps := []status.Computation{{ID: "count"}, {ID: "enrich"}, {ID: "split", Messages: []string{"Job failed"}}}
	streams := []status.Stream{
		{ID: "lines", Source: "queue //q/in", To: []string{"split"}},
		{ID: "words", From: "split", To: []string{"count", "enrich"}},
		{ID: "rich", From: "enrich", To: []string{"count"}},
		{ID: "counts", From: "count", Sinks: []string{"out"}},
	}
	g := layout(comps, streams, func(c, k string) string { return "NYT::NFlow::TAsyncQueueSink" })
	col := map[string]int{}
	warn := map[string]bool{}
	for _, n := range g.Nodes {
		col[n.Key] = (n.X - margin) / (boxW + colGap)
		warn[n.Key] = n.Warn
	}
	want := map[string]int{"source:lines": 0, "computation:split": 1, "computation:enrich": 2, "computation:count": 3, "sink:count/out": 4}
	if len(col) != len(want) {
		t.Fatalf("nodes %v, want %v", col, want)
	}
	for k, c := range want {
		if col[k] != c {
			t.Errorf("%s in column %d, want %d", k, col[k], c)
		}
	}
	if !warn["computation:split"] || warn["computation:count"] {
		t.Errorf("warn marks %v: want split only", warn)
	}
	edges := map[string]bool{}
	for _, e := range g.Edges {
		edges[e.Stream+" "+e.From+" "+e.To] = true
	}
	for _, e := range []string{"lines source:lines computation:split", "words computation:split computation:count", "words computation:split computation:enrich",
		"rich computation:enrich computation:count", "counts computation:count sink:count/out"} {
		if !edges[e] {
			t.Errorf("no edge %s in %v", e, edges)
		}
	}
	if g.W != margin+5*(boxW+colGap)-colGap+margin {
		t.Errorf("width %d", g.W)
	}

	// A cycle does not loop forever.
	cyc := layout([]status.Computation{{ID: "a"}, {ID: "b"}}, []status.Stream{{ID: "x", From: "a", To: []string{"b"}}, {ID: "y", From: "b", To: []string{"a"}}}, func(string, string) string { return "" })
	if len(cyc.Nodes) != 2 || len(cyc.Edges) != 2 {
		t.Errorf("cycle: %d nodes, %d edges", len(cyc.Nodes), len(cyc.Edges))
	}
}
