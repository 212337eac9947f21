package yson

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	ytyson "go.ytsaurus.tech/yt/go/yson"
)

// MaxDepth is the deepest nesting of lists, maps and attributes that Decode accepts.
const MaxDepth = 128

// Kind is the type of a Node.
type Kind int

// Node kinds, one per YSON node type.
const (
	KindEntity Kind = iota
	KindBool
	KindInt64
	KindUint64
	KindFloat64
	KindString
	KindList
	KindMap
)

// String returns the YSON name of the kind, as used in error messages.
func (k Kind) String() string {
	switch k {
	case KindEntity:
		return "entity"
	case KindBool:
		return "boolean"
	case KindInt64:
		return "int64"
	case KindUint64:
		return "uint64"
	case KindFloat64:
		return "double"
	case KindString:
		return "string"
	case KindList:
		return "list"
	case KindMap:
		return "map"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Field is one key of a map node or of an attribute map.
type Field struct {
	Key   string
	Value *Node
}

// Node is one decoded YSON node. Only the fields of its Kind are meaningful.
type Node struct {
	Kind Kind
	// Attrs holds the node's attributes in document order; nil when it has none.
	Attrs []Field

	Bool    bool
	Int64   int64
	Uint64  uint64
	Float64 float64
	String  string
	List    []*Node
	// Map holds the keys of a map node in document order; keys are unique.
	Map []Field
}

// Get returns the value of key in a map node, or nil when the node is not a map or has no such key.
func (n *Node) Get(key string) *Node {
	if n == nil || n.Kind != KindMap {
		return nil
	}
	for _, f := range n.Map {
		if f.Key == key {
			return f.Value
		}
	}
	return nil
}

// Any converts the node into the SDK's generic representation: nil, bool, int64, uint64,
// float64, string, []any and map[string]any; a node with attributes becomes *yson.ValueWithAttrs.
func (n *Node) Any() any {
	if n == nil {
		return nil
	}
	v := n.value()
	if n.Attrs == nil {
		return v
	}
	attrs := make(map[string]any, len(n.Attrs))
	for _, f := range n.Attrs {
		attrs[f.Key] = f.Value.Any()
	}
	return &ytyson.ValueWithAttrs{Attrs: attrs, Value: v}
}

func (n *Node) value() any {
	switch n.Kind {
	case KindBool:
		return n.Bool
	case KindInt64:
		return n.Int64
	case KindUint64:
		return n.Uint64
	case KindFloat64:
		return n.Float64
	case KindString:
		return n.String
	case KindList:
		l := make([]any, len(n.List))
		for i, item := range n.List {
			l[i] = item.Any()
		}
		return l
	case KindMap:
		m := make(map[string]any, len(n.Map))
		for _, f := range n.Map {
			m[f.Key] = f.Value.Any()
		}
		return m
	}
	return nil
}

// Error is a decoding error located at a path inside the document ("/" is the document itself).
type Error struct {
	Path    string
	Message string
}

func (e *Error) Error() string { return e.Path + ": " + e.Message }

// Decode parses one YSON document (a single node) into a tree. Text documents may carry
// "// …" and "/* … */" comments outside quoted strings. Syntax errors, duplicate map keys and
// excessive nesting are reported as *Error.
func Decode(data []byte) (n *Node, err error) {
	defer func() {
		// The SDK reader signals a few impossible states with panics; never let malformed
		// input take the process down.
		if r := recover(); r != nil {
			n, err = nil, &Error{Path: "/", Message: fmt.Sprintf("invalid YSON: %v", r)}
		}
	}()
	data = stripComments(data)
	r := ytyson.NewReaderKindFromBytes(data, ytyson.StreamNode)
	d := decoder{r: r, data: data}
	n, err = d.node("", 0)
	if err != nil {
		return nil, err
	}
	if err := r.CheckFinish(); err != nil {
		return nil, d.syntax(err)
	}
	return n, nil
}

type decoder struct {
	r    *ytyson.Reader
	data []byte
}

func (d *decoder) syntax(err error) error {
	if loc := locate(d.data, err); loc != "" {
		return &Error{Path: "/", Message: "invalid YSON at " + loc + ": " + err.Error()}
	}
	return &Error{Path: "/", Message: "invalid YSON: " + err.Error()}
}

const errUnexpectedEnd = "unexpected end of YSON input"

// locate finds where a syntax error of data lies, as "line L, column C", or "" when it cannot
// tell. The SDK reader does not report offsets, so it searches for the shortest prefix that
// the SDK validator rejects with something other than "unexpected end": that property only
// grows with the prefix, so a binary search finds it in O(log n) validations.
func locate(data []byte, err error) string {
	offset := len(data)
	if !strings.Contains(err.Error(), errUnexpectedEnd) {
		bad := func(n int) bool {
			verr := validPrefix(data[:n])
			return verr != nil && !strings.Contains(verr.Error(), errUnexpectedEnd)
		}
		if !bad(len(data)) {
			return ""
		}
		offset = sort.Search(len(data), func(n int) bool { return bad(n + 1) })
	}
	line, col := 1, 1
	for _, c := range data[:offset] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("line %d, column %d", line, col)
}

func validPrefix(b []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return ytyson.Valid(b)
}

func (d *decoder) node(path string, depth int) (*Node, error) {
	if depth > MaxDepth {
		return nil, &Error{Path: pathOrRoot(path), Message: fmt.Sprintf("nesting deeper than %d levels", MaxDepth)}
	}
	e, err := d.r.Next(false)
	if err != nil {
		return nil, d.syntax(err)
	}
	n := &Node{}
	if e == ytyson.EventBeginAttrs {
		attrs, err := d.fields(path, depth, true)
		if err != nil {
			return nil, err
		}
		if attrs == nil {
			attrs = []Field{}
		}
		n.Attrs = attrs
		if e, err = d.r.Next(false); err != nil {
			return nil, d.syntax(err)
		}
		if e != ytyson.EventEndAttrs {
			return nil, &Error{Path: pathOrRoot(path), Message: "invalid YSON: malformed attributes"}
		}
		if e, err = d.r.Next(false); err != nil {
			return nil, d.syntax(err)
		}
	}
	switch e {
	case ytyson.EventLiteral:
		switch d.r.Type() {
		case ytyson.TypeEntity:
			n.Kind = KindEntity
		case ytyson.TypeBool:
			n.Kind, n.Bool = KindBool, d.r.Bool()
		case ytyson.TypeInt64:
			n.Kind, n.Int64 = KindInt64, d.r.Int64()
		case ytyson.TypeUint64:
			n.Kind, n.Uint64 = KindUint64, d.r.Uint64()
		case ytyson.TypeFloat64:
			n.Kind, n.Float64 = KindFloat64, d.r.Float64()
		case ytyson.TypeString:
			n.Kind, n.String = KindString, d.r.String()
		default:
			return nil, &Error{Path: pathOrRoot(path), Message: "invalid YSON: unknown literal"}
		}
	case ytyson.EventBeginMap:
		n.Kind = KindMap
		fields, err := d.fields(path, depth, false)
		if err != nil {
			return nil, err
		}
		n.Map = fields
		if e, err = d.r.Next(false); err != nil {
			return nil, d.syntax(err)
		}
		if e != ytyson.EventEndMap {
			return nil, &Error{Path: pathOrRoot(path), Message: "invalid YSON: malformed map"}
		}
	case ytyson.EventBeginList:
		n.Kind = KindList
		n.List = []*Node{}
		for {
			ok, err := d.r.NextListItem()
			if err != nil {
				return nil, d.syntax(err)
			}
			if !ok {
				break
			}
			item, err := d.node(Join(path, strconv.Itoa(len(n.List))), depth+1)
			if err != nil {
				return nil, err
			}
			n.List = append(n.List, item)
		}
		if e, err = d.r.Next(false); err != nil {
			return nil, d.syntax(err)
		}
		if e != ytyson.EventEndList {
			return nil, &Error{Path: pathOrRoot(path), Message: "invalid YSON: malformed list"}
		}
	default:
		return nil, &Error{Path: pathOrRoot(path), Message: "invalid YSON: a value is expected"}
	}
	return n, nil
}

// fields reads the keys of a map or attribute map up to (not including) its end event.
func (d *decoder) fields(path string, depth int, attrs bool) ([]Field, error) {
	var fields []Field
	seen := map[string]bool{}
	for {
		ok, err := d.r.NextKey()
		if err != nil {
			return nil, d.syntax(err)
		}
		if !ok {
			break
		}
		key := d.r.String()
		keyPath := Join(path, key)
		if attrs {
			keyPath = Join(path, "@"+key)
		}
		if seen[key] {
			return nil, &Error{Path: keyPath, Message: "duplicate key"}
		}
		seen[key] = true
		v, err := d.node(keyPath, depth+1)
		if err != nil {
			return nil, err
		}
		fields = append(fields, Field{Key: key, Value: v})
	}
	if fields == nil && !attrs {
		fields = []Field{}
	}
	return fields, nil
}

// Join appends one element to a slash-separated YSON path; the empty path is the root.
func Join(path, elem string) string {
	if path == "" {
		return elem
	}
	return path + "/" + elem
}

func pathOrRoot(path string) string {
	if path == "" {
		return "/"
	}
	return path
}
