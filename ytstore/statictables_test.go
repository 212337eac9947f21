package ytstore

import (
	"context"
	"errors"
	"testing"

	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
)

// TestStaticTables writes static tables, lists their directory with attributes (a link
// listed as a link, followed by NodeInfo) and reads row ranges of a table.
func TestStaticTables(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, "//home/static/pipe")
	sc := schema.Schema{Columns: []schema.Column{{Name: "id", Type: schema.TypeUint64}, {Name: "text", Type: schema.TypeString}}}
	var rows []map[string]any
	for i := range 10 {
		rows = append(rows, map[string]any{"id": uint64(i), "text": "row"})
	}
	for _, name := range []string{"b", "a"} {
		if err := st.WriteStaticTable(ctx, "//home/static/logs/"+name, sc, rows[:5+len(name)*2]); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.WriteStaticTable(ctx, "//home/static/logs/a", sc, rows); err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	if err := st.Link(ctx, "//home/static/logs/a", "//home/static/logs/c"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.yc.CreateNode(ctx, ypath.Path("//home/static/logs/d"), yt.NodeMap, nil); err != nil {
		t.Fatal(err)
	}
	nodes, err := st.ListDir(ctx, "//home/static/logs", "creation_time")
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		name, typ string
		rows      int64
	}
	var got []seen
	for _, n := range nodes {
		got = append(got, seen{n.Name, n.Type, n.RowCount()})
		if n.Type == "table" && n.Attributes["creation_time"] == nil {
			t.Errorf("%s: no creation_time in %v", n.Name, n.Attributes)
		}
	}
	want := []seen{{"a", "table", 10}, {"b", "table", 7}, {"c", "link", 0}, {"d", "map_node", 0}}
	if len(got) != len(want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("listed %v, want %v", got, want)
		}
	}
	if nodes[2].Attributes["target_path"] != "//home/static/logs/a" {
		t.Errorf("link target %v", nodes[2].Attributes["target_path"])
	}
	info, err := st.NodeInfo(ctx, "//home/static/logs/c", "creation_time")
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != "table" || info.RowCount() != 10 || info.Name != "c" || info.Dynamic() {
		t.Errorf("link followed: %+v", info)
	}
	if _, err := st.NodeInfo(ctx, "//home/static/logs/none"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing node: %v, want ErrNotFound", err)
	}
	if _, err := st.ListDir(ctx, "//home/static/none"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing dir: %v, want ErrNotFound", err)
	}
	for _, r := range []struct{ lo, hi, n, first int64 }{{0, 3, 3, 0}, {3, 10, 7, 3}, {8, 20, 2, 8}, {10, 12, 0, 0}, {4, 4, 0, 0}} {
		got, err := st.ReadTableRange(ctx, "//home/static/logs/c", r.lo, r.hi)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(got)) != r.n {
			t.Fatalf("rows [%d, %d): %d rows, want %d", r.lo, r.hi, len(got), r.n)
		}
		if r.n > 0 && got[0]["id"] != uint64(r.first) {
			t.Errorf("rows [%d, %d): first id %v (%T), want %d", r.lo, r.hi, got[0]["id"], got[0]["id"], r.first)
		}
	}
	if _, err := st.ReadTableRange(ctx, "//home/static/logs/none", 0, 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing table: %v, want ErrNotFound", err)
	}
}
