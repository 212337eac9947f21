package app

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.ytsaurus.tech/yt/go/schema"
	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/yson"
	"github.com/ytflow/yt-flow/ytstore"
)

// setupFile is the optional `local.yson` next to a pipeline spec: the user tables that
// `yt-flow run` creates on the embedded server, the input it loads into them, and the
// queries whose results it prints at the end. It is not part of the pipeline spec.
type setupFile struct {
	dir     string
	Tables  []ytstore.UserTable
	Inputs  []setupInput
	Results []setupResult
	// States are the files of key states seeded once the pipeline is created (setup_states.go).
	States []setupStates
	// ClickHouse is the clickhouse block (used with --clickhouse-embedded), or nil.
	ClickHouse *clickHouseSetup
}

type setupInput struct {
	// Queue is the ordered table the rows go to (round-robin over its tablets), unless Table
	// is set.
	Queue string
	// Table is the static table (a static_table of Tables: written whole) or the sorted
	// dynamic table (a sorted_table of Tables: rows inserted) the rows go to.
	Table string
	// File holds the rows; relative to the setup file's folder.
	File string
	// Format is "lines" (one row per non-empty line, in Column) or "yson" (a list fragment of maps).
	Format string
	// Column receives each line for the lines format.
	Column string
}

type setupResult struct {
	Title string
	Query string
}

// loadSetup reads and checks a setup file; every problem is reported with its YSON path.
func loadSetup(path string) (*setupFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	return parseSetup(data, filepath.Dir(path))
}

func parseSetup(data []byte, dir string) (*setupFile, error) {
	root, err := yson.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	var w yson.Walker
	s := &setupFile{dir: dir}
	top := w.Fields(root, "")
	if n := top.Node("tables"); n != nil {
		eachList(&w, n, "tables", func(i int, n *yson.Node, p string) {
			f := w.Fields(n, p)
			t := ytstore.UserTable{
				Path:        f.RequiredString("path"),
				Kind:        f.Enum("kind", "", ytstore.UserQueue, ytstore.UserConsumer, ytstore.UserProducer, ytstore.UserSortedTable, ytstore.UserStaticTable),
				TabletCount: int(f.Int("tablet_count", 1, 1, 1024)),
				Queue:       f.String("queue", ""),
			}
			if t.Kind == "" {
				w.Errorf(f.Path("kind"), "required: one of queue, consumer, producer, sorted_table, static_table")
			}
			if sn := f.Node("schema"); sn != nil {
				sc, err := decodeSchema(sn)
				if err != nil {
					w.Errorf(f.Path("schema"), "%v", err)
				}
				t.Schema = sc
			} else if t.Kind == ytstore.UserQueue || t.Kind == ytstore.UserSortedTable || t.Kind == ytstore.UserStaticTable {
				w.Errorf(f.Path("schema"), "required for a %s", t.Kind)
			}
			if t.Kind == ytstore.UserConsumer && t.Queue == "" {
				w.Errorf(f.Path("queue"), "required for a consumer")
			}
			f.Close()
			s.Tables = append(s.Tables, t)
		})
	}
	if n := top.Node("inputs"); n != nil {
		eachList(&w, n, "inputs", func(i int, n *yson.Node, p string) {
			f := w.Fields(n, p)
			in := setupInput{
				Queue:  f.String("queue", ""),
				Table:  f.String("table", ""),
				File:   f.RequiredString("file"),
				Format: f.Enum("format", "lines", "lines", "yson"),
				Column: f.String("column", ""),
			}
			switch {
			case in.Queue == "" && in.Table == "":
				w.Errorf(f.Path("queue"), "required (or table)")
			case in.Queue != "" && in.Table != "":
				w.Errorf(f.Path("table"), "set either queue or table, not both")
			case in.Table != "" && s.staticTable(in.Table) == nil && s.sortedTable(in.Table) == nil:
				w.Errorf(f.Path("table"), "%s is not a static_table or sorted_table of tables", in.Table)
			}
			if in.Format == "lines" && in.Column == "" {
				w.Errorf(f.Path("column"), "required for the lines format")
			}
			f.Close()
			s.Inputs = append(s.Inputs, in)
		})
	}
	if n := top.Node("results"); n != nil {
		eachList(&w, n, "results", func(i int, n *yson.Node, p string) {
			f := w.Fields(n, p)
			s.Results = append(s.Results, setupResult{Title: f.String("title", ""), Query: f.RequiredString("query")})
			f.Close()
		})
	}
	if n := top.Node("states"); n != nil {
		eachList(&w, n, "states", func(i int, n *yson.Node, p string) {
			f := w.Fields(n, p)
			s.States = append(s.States, setupStates{File: f.RequiredString("file")})
			f.Close()
		})
	}
	if n := top.Node("clickhouse"); n != nil {
		s.ClickHouse = parseClickHouseSetup(&w, n, "clickhouse")
	}
	top.Close()
	if !w.OK() {
		var lines []string
		for _, p := range w.Problems() {
			lines = append(lines, p.String())
		}
		return nil, fmt.Errorf("setup:\n%s", strings.Join(lines, "\n"))
	}
	return s, nil
}

// sortedTable returns the sorted_table entry of Tables at path, or nil.
func (s *setupFile) sortedTable(path string) *ytstore.UserTable {
	for i, t := range s.Tables {
		if t.Path == path && t.Kind == ytstore.UserSortedTable {
			return &s.Tables[i]
		}
	}
	return nil
}

// staticTable returns the static_table entry of Tables at path, or nil.
func (s *setupFile) staticTable(path string) *ytstore.UserTable {
	for i, t := range s.Tables {
		if t.Path == path && t.Kind == ytstore.UserStaticTable {
			return &s.Tables[i]
		}
	}
	return nil
}

func eachList(w *yson.Walker, n *yson.Node, path string, fn func(i int, n *yson.Node, p string)) {
	if n.Kind != yson.KindList {
		w.Errorf(path, "want list, got %s", n.Kind)
		return
	}
	for i, item := range n.List {
		fn(i, item, yson.Join(path, fmt.Sprint(i)))
	}
}

func decodeSchema(n *yson.Node) (schema.Schema, error) {
	raw, err := sdkyson.Marshal(n.Any())
	if err != nil {
		return schema.Schema{}, err
	}
	var sc schema.Schema
	if err := sdkyson.Unmarshal(raw, &sc); err != nil {
		return schema.Schema{}, fmt.Errorf("bad schema: %w", err)
	}
	for i, c := range sc.Columns {
		if c.Name == "" {
			return schema.Schema{}, fmt.Errorf("column %d: name is required", i)
		}
		if c.ComplexType == nil && !knownColumnTypes[c.Type] {
			return schema.Schema{}, fmt.Errorf("column %d (%s): unknown type %q", i, c.Name, c.Type)
		}
	}
	return sc, nil
}

// knownColumnTypes are the simple YTsaurus column types a setup schema may use.
var knownColumnTypes = map[schema.Type]bool{
	schema.TypeInt8: true, schema.TypeInt16: true, schema.TypeInt32: true, schema.TypeInt64: true,
	schema.TypeUint8: true, schema.TypeUint16: true, schema.TypeUint32: true, schema.TypeUint64: true,
	schema.TypeFloat32: true, schema.TypeFloat64: true, schema.TypeBytes: true, schema.TypeString: true,
	schema.TypeBoolean: true, schema.TypeAny: true, schema.TypeNull: true, schema.TypeDate: true,
	schema.TypeDatetime: true, schema.TypeTimestamp: true, schema.TypeInterval: true,
}

// apply creates the tables and loads each input once: a queue remembers the digest of the
// file it was loaded from in @yt_flow_loaded_input, so a second run on the same data
// folder does not load the input twice.
func (s *setupFile) apply(ctx context.Context, st *ytstore.Store, progress func(string, ...any)) error {
	for _, t := range s.Tables {
		if err := st.EnsureUserTable(ctx, t); err != nil {
			return err
		}
	}
	for _, in := range s.Inputs {
		target := in.Queue
		if in.Table != "" {
			target = in.Table
		}
		path := in.File
		if !filepath.IsAbs(path) {
			path = filepath.Join(s.dir, path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("setup: input for %s: %w", target, err)
		}
		sum := sha256.Sum256(data)
		digest := hex.EncodeToString(sum[:])
		var loaded string
		err = st.GetAttribute(ctx, target, "yt_flow_loaded_input", &loaded)
		if err != nil && !errors.Is(err, ytstore.ErrNotFound) {
			return err
		}
		if loaded == digest {
			progress("input %s already loaded into %s", in.File, target)
			continue
		}
		if loaded != "" {
			return fmt.Errorf("setup: %s was loaded from another version of %s; remove the data folder to start over", target, in.File)
		}
		rows, err := readInputRows(data, in)
		if err != nil {
			return fmt.Errorf("setup: %s: %w", path, err)
		}
		if in.Table != "" && s.staticTable(in.Table) != nil {
			// A static table is written whole, in one transaction, then marked loaded.
			if err := st.WriteStaticTable(ctx, in.Table, s.staticTable(in.Table).Schema, rows); err != nil {
				return err
			}
			if err := st.SetAttribute(ctx, in.Table, "yt_flow_loaded_input", digest); err != nil {
				return err
			}
			progress("loaded %d rows from %s into %s", len(rows), in.File, in.Table)
			continue
		}
		tablets := 0
		if in.Queue != "" {
			if tablets, err = st.TabletCount(ctx, target); err != nil {
				return err
			}
			for i := range rows {
				rows[i]["$tablet_index"] = int64(i % max(tablets, 1))
			}
		}
		for start := 0; start < len(rows); start += 1000 {
			if err := st.InsertRows(ctx, target, rows[start:min(start+1000, len(rows))]); err != nil {
				return err
			}
		}
		if err := st.SetAttribute(ctx, target, "yt_flow_loaded_input", digest); err != nil {
			return err
		}
		if in.Queue == "" {
			progress("loaded %d rows from %s into %s", len(rows), in.File, target)
			continue
		}
		progress("loaded %d rows from %s into %s (%d tablets)", len(rows), in.File, target, tablets)
	}
	return nil
}

func readInputRows(data []byte, in setupInput) ([]map[string]any, error) {
	var rows []map[string]any
	switch in.Format {
	case "lines":
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" {
				continue
			}
			rows = append(rows, map[string]any{in.Column: line})
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	case "yson":
		// A list fragment ("{a=1};{a=2};") is a list without its brackets.
		var list []map[string]any
		if err := sdkyson.Unmarshal(append(append([]byte("["), data...), ']'), &list); err != nil {
			return nil, fmt.Errorf("yson rows: %w", err)
		}
		rows = list
	}
	return rows, nil
}
