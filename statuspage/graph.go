package statuspage

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ytflow/yt-flow/status"
)

// The pipeline graph is laid out here, without I/O: sources in the first column, each
// computation one column right of the furthest computation or source feeding it, each sink
// right of its computation; within a column nodes are ordered by kind, then id. The page
// draws it as inline SVG.

const (
	boxW, boxH = 220, 58
	colGap     = 90
	rowGap     = 26
	margin     = 16
)

// node is one box of the graph.
type node struct {
	// Key is unique: "source:lines", "computation:count", "sink:count/out".
	Key  string
	Kind string // "source", "computation", "sink"
	// ID is the stream (source), computation or sink id.
	ID string
	// Label is the box's first line, Sub its second; Title the full text (a tooltip).
	Label, Sub, Title string
	// Warn marks a computation whose jobs report errors.
	Warn bool
	X, Y int
}

// edge is one arrow: a stream from one node to another.
type edge struct {
	Stream string
	From   string // node keys
	To     string
	// D is the SVG path; LX, LY where its label goes.
	D      string
	LX, LY int
}

type graph struct {
	W, H  int
	Nodes []node
	Edges []edge
}

// layout places the nodes and edges of the pipeline of comps and streams (status.Snapshot's
// rows). sinkClass names a sink's class ("" unknown) by computation and sink id.
func layout(comps []status.Computation, streams []status.Stream, sinkClass func(computation, sink string) string) graph {
	nodes := map[string]*node{}
	add := func(n node) {
		if nodes[n.Key] == nil {
			nodes[n.Key] = &n
		}
	}
	for _, c := range comps {
		sub := fmt.Sprintf("%s partitions, %d in flight", c.PartitionSummary(), c.InFlight)
		if len(c.Messages) > 0 {
			sub = fmt.Sprintf("%d messages", len(c.Messages))
		}
		add(node{Key: "computation:" + c.ID, Kind: "computation", ID: c.ID, Label: c.ID, Sub: sub, Title: c.ID, Warn: len(c.Messages) > 0})
	}
	var edges []edge
	for _, s := range streams {
		from := "computation:" + s.From
		if s.From == "" {
			from = "source:" + s.ID
			add(node{Key: from, Kind: "source", ID: s.ID, Label: "source " + s.ID, Sub: s.Source, Title: s.Source})
		} else {
			add(node{Key: from, Kind: "computation", ID: s.From, Label: s.From, Title: s.From})
		}
		for _, to := range s.To {
			add(node{Key: "computation:" + to, Kind: "computation", ID: to, Label: to, Title: to})
			edges = append(edges, edge{Stream: s.ID, From: from, To: "computation:" + to})
		}
		for _, k := range s.Sinks {
			key := "sink:" + s.From + "/" + k
			class := sinkClass(s.From, k)
			add(node{Key: key, Kind: "sink", ID: k, Label: "sink " + k, Sub: shortClass(class), Title: class})
			edges = append(edges, edge{Stream: s.ID, From: from, To: key})
		}
	}

	// Columns: sources 0, a computation one right of its furthest input, a sink one right
	// of its computation. A cycle stops growing after len(nodes) rounds.
	depth := map[string]int{}
	for k, n := range nodes {
		if n.Kind != "source" {
			depth[k] = 1
		}
	}
	for range len(nodes) {
		changed := false
		for _, e := range edges {
			if d := depth[e.From] + 1; d > depth[e.To] && d <= len(nodes) {
				depth[e.To], changed = d, true
			}
		}
		if !changed {
			break
		}
	}
	kindOrder := map[string]int{"source": 0, "computation": 1, "sink": 2}
	keys := make([]string, 0, len(nodes))
	for k := range nodes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := nodes[keys[i]], nodes[keys[j]]
		if depth[a.Key] != depth[b.Key] {
			return depth[a.Key] < depth[b.Key]
		}
		if kindOrder[a.Kind] != kindOrder[b.Kind] {
			return kindOrder[a.Kind] < kindOrder[b.Kind]
		}
		return a.Key < b.Key
	})
	var g graph
	row := map[int]int{}
	for _, k := range keys {
		n := nodes[k]
		d := depth[k]
		n.X = margin + d*(boxW+colGap)
		n.Y = margin + row[d]*(boxH+rowGap)
		row[d]++
		g.W = max(g.W, n.X+boxW+margin)
		g.H = max(g.H, n.Y+boxH+margin)
		g.Nodes = append(g.Nodes, *n)
	}
	for _, e := range edges {
		a, b := nodes[e.From], nodes[e.To]
		x1, y1 := a.X+boxW, a.Y+boxH/2
		x2, y2 := b.X, b.Y+boxH/2
		mid := (x1 + x2) / 2
		e.D = fmt.Sprintf("M%d,%d C%d,%d %d,%d %d,%d", x1, y1, mid, y1, mid, y2, x2-2, y2)
		e.LX, e.LY = mid, (y1+y2)/2-6
		g.Edges = append(g.Edges, e)
	}
	return g
}

// shortClass is the last part of a class name: "NYT::NFlow::TAsyncQueueSink" → "TAsyncQueueSink".
func shortClass(name string) string {
	if i := strings.LastIndex(name, "::"); i >= 0 {
		return name[i+2:]
	}
	return name
}
