package ytlocal

import (
	"bytes"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yterrors"

	"github.com/ytflow/yt-flow/internal/ybin"
)

// call is one decoded request as a handler sees it.
//
// Response shapes a handler may return:
//   - nil: the empty map {};
//   - any YSON-marshalable value (usually map[string]any{"value": v}), written in the
//     requested output format;
//   - *rowsResult: a list fragment of rows (heavy reads), block-compressed when the
//     client asked for it, with optional X-YT-Response-Parameters.
type call struct {
	s       *Server
	name    string
	params  map[string]any
	input   []byte // decompressed request body of PUT commands; nil otherwise
	inFmt   string // input format name: "yson" (default) or "json"
	now     time.Time
	mutates bool
	user    string // the authenticated user (root without authentication)
	logSeq  uint64 // last log record written when the handler finished (dispatcher)
	// volatile is set by a handler whose answer carries nothing a crash could take back:
	// rows buffered in a tablet transaction, a started tablet transaction, a fresh
	// timestamp. Such state lives in memory only and is lost by a restart anyway; what it
	// leads to becomes visible only through a commit, whose answer waits. When the call
	// wrote no log record itself, its answer does not wait for the fsync of records that
	// other commands wrote before (see Server.execute).
	volatile bool

	// rows and rowsErr are the input rows parsed before the state lock was taken
	// (preparse), for the commands whose body is a list of rows; parsed tells them apart
	// from a call that parses on demand.
	rows    []any
	rowsErr error
	parsed  bool
	// spare are the row maps of rows (and unused spares) that return to rowMaps once the
	// command has answered.
	spare *[]map[string]any
}

// rowInputCommands are the commands whose request body is a list of rows: their body is
// parsed before the state lock is taken (parsing is most of their cost and needs no state).
var rowInputCommands = map[string]bool{
	"insert_rows": true, "delete_rows": true, "lookup_rows": true, "push_queue_producer": true,
}

// preparse parses the input rows of a row-input command outside the state lock; the
// handler gets the result (or the parse error) from inputRows when it asks for it, so
// the order of its checks is what it would be without preparsing.
func (c *call) preparse() {
	if !rowInputCommands[c.name] {
		return
	}
	c.parsed = true
	if strings.HasPrefix(c.inFmt, "json") {
		c.rows, c.rowsErr = c.parseRows()
		return
	}
	sp := rowMaps.Get().(*[]map[string]any)
	dec := ybin.Decoder{Spare: *sp}
	var fast bool
	c.rows, fast, c.rowsErr = parseListFragmentWith(c.input, &dec)
	c.rowsErr = c.parseError(c.rowsErr)
	*sp = dec.Spare
	if fast {
		for _, r := range c.rows {
			*sp = append(*sp, r.(map[string]any))
		}
	}
	c.spare = sp
}

// rowMaps recycles the row maps of row-input commands: the handlers of those commands
// (insert, delete, lookup, lock and push rows) copy what they keep out of the maps.
var rowMaps = sync.Pool{New: func() any { return new([]map[string]any) }}

// releaseRows gives the command's row maps back to rowMaps.
func (c *call) releaseRows() {
	if c.spare == nil {
		return
	}
	if len(*c.spare) <= 1<<14 {
		rowMaps.Put(c.spare)
	}
	c.spare, c.rows = nil, nil
}

// rowsResult is a row stream response. Rows are written as a YSON list fragment;
// each element is a map[string]any, nil (written as #) or a yson.StreamMarshaler.
type rowsResult struct {
	Rows []any
	// Params, if non-nil, is sent as X-YT-Response-Parameters (e.g. start_row_index).
	Params map[string]any
}

// ytErr builds a YTsaurus error with a code and a formatted message.
func ytErr(code yterrors.ErrorCode, format string, args ...any) *yterrors.Error {
	return &yterrors.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// withAttrs adds attributes to e and returns it.
func withAttrs(e *yterrors.Error, kv ...any) *yterrors.Error {
	for i := 0; i+1 < len(kv); i += 2 {
		e.AddAttr(kv[i].(string), kv[i+1])
	}
	return e
}

func badParam(name, want string, got any) *yterrors.Error {
	return ytErr(yterrors.CodeGeneric, "Error parsing parameter %q: expected %s, got %s", name, want, ysonTypeName(got))
}

func ysonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "entity"
	case string:
		return "string"
	case int64:
		return "int64"
	case uint64:
		return "uint64"
	case float64:
		return "double"
	case bool:
		return "boolean"
	case []any:
		return "list"
	case map[string]any:
		return "map"
	case *yson.ValueWithAttrs:
		return "value with attributes"
	}
	return fmt.Sprintf("%T", v)
}

// has reports whether parameter name is present and not the entity #.
func (c *call) has(name string) bool {
	v, ok := c.params[name]
	return ok && v != nil
}

// param returns parameter name with its attributes stripped; absent and # give (nil, false).
func (c *call) param(name string) (any, bool) {
	v, ok := c.params[name]
	if !ok || v == nil {
		return nil, false
	}
	return yson.ValueOf(v), true
}

// str returns a string parameter or def when absent.
func (c *call) str(name, def string) (string, error) {
	v, ok := c.param(name)
	if !ok {
		return def, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", badParam(name, "string", v)
	}
	return s, nil
}

// requiredStr returns a string parameter that must be present.
func (c *call) requiredStr(name string) (string, error) {
	if !c.has(name) {
		return "", ytErr(yterrors.CodeGeneric, "Missing required parameter %q of command %q", name, c.name)
	}
	return c.str(name, "")
}

// boolean returns a boolean parameter or def. "true"/"false" strings are accepted too.
func (c *call) boolean(name string, def bool) (bool, error) {
	v, ok := c.param(name)
	if !ok {
		return def, nil
	}
	switch b := v.(type) {
	case bool:
		return b, nil
	case string:
		switch b {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return false, badParam(name, "boolean", v)
}

// attributes returns a copy of the "attributes" map parameter, or an empty
// map when it is absent.
func (c *call) attributes() (map[string]any, error) {
	v, ok := c.param("attributes")
	if !ok {
		return map[string]any{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, badParam("attributes", "map", v)
	}
	return maps.Clone(m), nil
}

// int64p returns an integer parameter (int64 or uint64 on the wire) or def.
func (c *call) int64p(name string, def int64) (int64, error) {
	v, ok := c.param(name)
	if !ok {
		return def, nil
	}
	switch n := v.(type) {
	case int64:
		return n, nil
	case uint64:
		if n > 1<<63-1 {
			return 0, badParam(name, "int64", v)
		}
		return int64(n), nil
	case float64:
		if n == float64(int64(n)) {
			return int64(n), nil
		}
	case string: // query-string parameters arrive as strings
		if i, err := strconv.ParseInt(n, 10, 64); err == nil {
			return i, nil
		}
	}
	return 0, badParam(name, "integer", v)
}

// uint64p returns an unsigned integer parameter or def.
func (c *call) uint64p(name string, def uint64) (uint64, error) {
	v, ok := c.param(name)
	if !ok {
		return def, nil
	}
	switch n := v.(type) {
	case uint64:
		return n, nil
	case int64:
		if n >= 0 {
			return uint64(n), nil
		}
	case string:
		if u, err := strconv.ParseUint(n, 10, 64); err == nil {
			return u, nil
		}
	}
	return 0, badParam(name, "uint64", v)
}

// duration reads a millisecond count as a duration, or def.
func (c *call) duration(name string, def time.Duration) (time.Duration, error) {
	if !c.has(name) {
		return def, nil
	}
	ms, err := c.int64p(name, 0)
	if err != nil {
		return 0, err
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// guidp returns a GUID parameter; ok=false when absent.
func (c *call) guidp(name string) (id guid.GUID, ok bool, err error) {
	s, err := c.str(name, "")
	if err != nil || s == "" {
		return guid.GUID{}, false, err
	}
	id, err = guid.ParseString(s)
	if err != nil {
		return guid.GUID{}, false, ytErr(yterrors.CodeGeneric, "Error parsing parameter %q: invalid GUID %q", name, s)
	}
	return id, true, nil
}

// guids returns a list-of-GUIDs parameter (empty when absent).
func (c *call) guids(name string) ([]guid.GUID, error) {
	v, ok := c.param(name)
	if !ok {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, badParam(name, "list of GUIDs", v)
	}
	out := make([]guid.GUID, 0, len(list))
	for _, e := range list {
		s, ok := yson.ValueOf(e).(string)
		if !ok {
			return nil, badParam(name, "list of GUIDs", v)
		}
		id, err := guid.ParseString(s)
		if err != nil {
			return nil, ytErr(yterrors.CodeGeneric, "Error parsing parameter %q: invalid GUID %q", name, s)
		}
		out = append(out, id)
	}
	return out, nil
}

// decode converts parameter name into dst (any yson.Unmarshal target) by re-encoding it.
// It reports whether the parameter was present.
func (c *call) decode(name string, dst any) (bool, error) {
	v, ok := c.params[name]
	if !ok || v == nil {
		return false, nil
	}
	raw, err := yson.Marshal(v)
	if err != nil {
		return true, ytErr(yterrors.CodeGeneric, "Error parsing parameter %q: %v", name, err)
	}
	if err := yson.Unmarshal(raw, dst); err != nil {
		return true, ytErr(yterrors.CodeGeneric, "Error parsing parameter %q: %v", name, err)
	}
	return true, nil
}

// richPath parses a path parameter that may carry YSON attributes (<append=%true>...)
// and suffix syntax (ranges [..], columns {..}).
func (c *call) richPath(name string) (*ypath.Rich, error) {
	v, ok := c.params[name]
	if !ok || v == nil {
		return nil, ytErr(yterrors.CodeGeneric, "Missing required parameter %q of command %q", name, c.name)
	}
	return parseRichPath(name, v)
}

func parseRichPath(name string, v any) (*ypath.Rich, error) {
	s, ok := yson.ValueOf(v).(string)
	if !ok {
		return nil, badParam(name, "YPath string", v)
	}
	p, err := ypath.Parse(s)
	if err != nil {
		return nil, ytErr(yterrors.CodeGeneric, "Error parsing parameter %q: invalid YPath %q: %v", name, s, err)
	}
	if attrs := yson.AttrsOf(v); len(attrs) > 0 {
		raw, err := yson.Marshal(&yson.ValueWithAttrs{Attrs: attrs, Value: ""})
		if err != nil {
			return nil, ytErr(yterrors.CodeGeneric, "Error parsing parameter %q: %v", name, err)
		}
		var outer ypath.Rich
		if err := yson.Unmarshal(raw, &outer); err != nil {
			return nil, ytErr(yterrors.CodeGeneric, "Error parsing attributes of parameter %q: %v", name, err)
		}
		mergeRich(p, &outer)
	}
	return p, nil
}

func mergeRich(p, outer *ypath.Rich) {
	if outer.Append != nil {
		p.Append = outer.Append
	}
	if outer.SortedBy != nil {
		p.SortedBy = outer.SortedBy
	}
	if outer.Ranges != nil {
		p.Ranges = outer.Ranges
	}
	if outer.Columns != nil {
		p.Columns = outer.Columns
	}
	if outer.Schema != nil {
		p.Schema = outer.Schema
	}
}

// path returns a plain path parameter (suffix syntax not allowed beyond trailing &, /@...).
func (c *call) path(name string) (string, error) {
	v, ok := c.params[name]
	if !ok || v == nil {
		return "", ytErr(yterrors.CodeGeneric, "Missing required parameter %q of command %q", name, c.name)
	}
	s, ok := yson.ValueOf(v).(string)
	if !ok {
		return "", badParam(name, "YPath string", v)
	}
	return s, nil
}

// inputValue parses the request body as one YSON (or JSON) value.
func (c *call) inputValue() (any, error) {
	var v any
	if err := unmarshalInput(c.input, c.inFmt, &v); err != nil {
		return nil, ytErr(yterrors.CodeGeneric, "Error parsing input of command %q: %v", c.name, err)
	}
	return v, nil
}

// inputRows parses the request body as a YSON list fragment of rows (or, with input
// format json, one JSON value per line). A # (null) item is nil.
func (c *call) inputRows() ([]any, error) {
	if c.parsed {
		return c.rows, c.rowsErr
	}
	return c.parseRows()
}

func (c *call) parseRows() ([]any, error) {
	parse := parseListFragment
	if strings.HasPrefix(c.inFmt, "json") {
		parse = parseJSONLines
	}
	rows, err := parse(c.input)
	return rows, c.parseError(err)
}

func (c *call) parseError(err error) error {
	if err != nil {
		return ytErr(yterrors.CodeGeneric, "Error parsing input rows of command %q: %v", c.name, err)
	}
	return nil
}

// parseListFragment decodes `item;item;...` into generic values. A body of binary maps of
// scalars only (what the SDK writes for most tables) is decoded by ybin without the SDK's
// generic decoder; any other body goes to it whole, so the values and errors are those the
// generic decoder gives (FuzzParseListFragment).
func parseListFragment(data []byte) ([]any, error) {
	var dec ybin.Decoder // rows repeat their column names
	out, _, err := parseListFragmentWith(data, &dec)
	return out, err
}

// parseListFragmentWith is parseListFragment with the caller's decoder; fast says the rows
// are maps dec made (or took from its spares).
func parseListFragmentWith(data []byte, dec *ybin.Decoder) (out []any, fast bool, err error) {
	rest := data
	for len(rest) > 0 {
		m, n, ok := dec.DecodeMapPrefix(rest)
		if !ok || n >= len(rest) || rest[n] != ';' {
			out, err = parseListFragmentGeneric(data)
			return out, false, err
		}
		out = append(out, m)
		rest = rest[n+1:]
	}
	return out, true, nil
}

// parseListFragmentGeneric decodes `item;item;...` with the SDK's generic decoder.
func parseListFragmentGeneric(data []byte) ([]any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	r := yson.NewReaderKindFromBytes(data, yson.StreamListFragment)
	// Items are decoded straight from the reader: one scan per item, no copy.
	d := &yson.Decoder{R: r}
	var out []any
	for {
		ok, err := r.NextListItem()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func unmarshalInput(data []byte, format string, v *any) error {
	if strings.HasPrefix(format, "json") {
		return unmarshalJSONValue(data, v)
	}
	return yson.Unmarshal(data, v)
}

// parseJSONLines decodes newline-delimited JSON values.
func parseJSONLines(data []byte) ([]any, error) {
	var out []any
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var v any
		if err := unmarshalJSONValue(line, &v); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		out = append(out, v)
	}
	return out, nil
}
