package flowsdk

import (
	"fmt"
	"sort"

	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
)

// Key holds a message's group-by key values in group_by_schema order (computed columns
// included); nil for messages of source computations.
type Key = flow.Key

// Payload is the columns of a message or timer. Its getters return ErrColumnNotFound for an
// absent or null column and ErrTypeMismatch for a value of another type.
type Payload struct {
	row flow.Row
}

// Has reports whether the payload has a non-null column col.
func (p Payload) Has(col string) bool { return p.row[col] != nil }

// Columns returns the names of the payload's columns, sorted.
func (p Payload) Columns() []string {
	out := make([]string, 0, len(p.row))
	for c := range p.row {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// Any returns the column's value as decoded from YSON (int64, uint64, float64, bool, string,
// []byte, lists and maps).
func (p Payload) Any(col string) (any, error) {
	v, ok := p.row[col]
	if !ok || v == nil {
		return nil, fmt.Errorf("column %q: %w", col, ErrColumnNotFound)
	}
	return v, nil
}

func column[T any](p Payload, col string) (T, error) {
	var zero T
	v, err := p.Any(col)
	if err != nil {
		return zero, err
	}
	t, ok := v.(T)
	if !ok {
		return zero, fmt.Errorf("column %q: want %T, got %T: %w", col, zero, v, ErrTypeMismatch)
	}
	return t, nil
}

// Int64 returns a signed integer column.
func (p Payload) Int64(col string) (int64, error) { return column[int64](p, col) }

// Uint64 returns an unsigned integer column.
func (p Payload) Uint64(col string) (uint64, error) { return column[uint64](p, col) }

// Float64 returns a double column.
func (p Payload) Float64(col string) (float64, error) { return column[float64](p, col) }

// Bool returns a boolean column.
func (p Payload) Bool(col string) (bool, error) { return column[bool](p, col) }

// String returns a string column (string or utf8; bytes are converted).
func (p Payload) String(col string) (string, error) {
	v, err := p.Any(col)
	if err != nil {
		return "", err
	}
	switch s := v.(type) {
	case string:
		return s, nil
	case []byte:
		return string(s), nil
	}
	return "", fmt.Errorf("column %q: want string, got %T: %w", col, v, ErrTypeMismatch)
}

// Bytes returns a string column as bytes.
func (p Payload) Bytes(col string) ([]byte, error) {
	s, err := p.String(col)
	return []byte(s), err
}

// convert decodes a row into v (a pointer to a struct with yson tags, or a map) through YSON.
func convert(row flow.Row, v any) error {
	b, err := yson.Marshal(row)
	if err == nil {
		err = yson.Unmarshal(b, v)
	}
	if err != nil {
		return fmt.Errorf("convert to %T: %w: %w", v, ErrTypeMismatch, err)
	}
	return nil
}

// ExtendedMessage is one input message. Timestamps are microseconds since the epoch.
type ExtendedMessage struct {
	// ID is unique; outputs name it as their parent (OutputCollector.WithParentIDs).
	ID       string
	StreamID string
	Key      Key
	// EventTimestamp is the business time; 0 means unknown.
	EventTimestamp  uint64
	SystemTimestamp uint64
	Payload         Payload
}

// ConvertTo decodes the payload into v, a pointer to a struct with yson tags (or a map);
// the error wraps ErrTypeMismatch.
func (m ExtendedMessage) ConvertTo(v any) error { return convert(m.Payload.row, v) }

// Timer is a due timer of the key.
type Timer struct {
	// ID names the timer as a parent of outputs.
	ID       string
	StreamID string
	Key      Key
	// TriggerTimestamp is when it was due; EventTimestamp the event time it carries.
	TriggerTimestamp uint64
	EventTimestamp   uint64
}

// Visit is a key visitor's visit of a key with state. yt-flow has no key visitors yet: no
// handler is ever called with one.
type Visit struct {
	ID             string
	StreamID       string
	Key            Key
	EventTimestamp uint64
}

// TimerRequest sets a timer for the current key on timer stream StreamID (one of the
// computation's timer_streams), due at TriggerTimestamp (microseconds); EventTimestamp, when
// not 0, is the event time the fired timer and its outputs carry.
type TimerRequest struct {
	TriggerTimestamp uint64
	EventTimestamp   uint64
	StreamID         string
}

// Message is an output message built by a MessageBuilder.
type Message struct {
	streamID string
	row      flow.Row
	eventTS  uint64
}

// StreamID returns the stream the message goes to.
func (m *Message) StreamID() string { return m.streamID }

// MessageBuilder builds one output message of a stream (Runtime.MessageBuilder). Set calls
// chain; the first error is kept and returned by Finish.
type MessageBuilder struct {
	streamID string
	schema   *schema.Schema // nil when the stream's schema is unknown
	row      flow.Row
	eventTS  uint64
	err      error
}

// Set sets column col to v: int, intN, uintN, float, bool, string, []byte or a composite value
// for an any column. With the stream's schema known, a column it lacks is ErrColumnNotFound and
// a value of another type ErrTypeMismatch.
func (b *MessageBuilder) Set(col string, v any) *MessageBuilder {
	if b.err != nil {
		return b
	}
	nv, err := normalize(v)
	if err != nil {
		b.err = fmt.Errorf("stream %q: column %q: %w", b.streamID, col, err)
		return b
	}
	if b.schema != nil {
		c, ok := findColumn(*b.schema, col)
		if !ok {
			b.err = fmt.Errorf("stream %q: column %q: %w", b.streamID, col, ErrColumnNotFound)
			return b
		}
		if nv != nil && !fits(c.Type, nv) {
			b.err = fmt.Errorf("stream %q: column %q of type %s: value %T: %w", b.streamID, col, c.Type, v, ErrTypeMismatch)
			return b
		}
	}
	b.row[col] = nv
	return b
}

// SetStruct sets the columns of v, a struct with yson tags (or a map), as Set would.
func (b *MessageBuilder) SetStruct(v any) *MessageBuilder {
	if b.err != nil {
		return b
	}
	var row map[string]any
	if err := convertAny(v, &row); err != nil {
		b.err = fmt.Errorf("stream %q: %w", b.streamID, err)
		return b
	}
	cols := make([]string, 0, len(row))
	for c := range row {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	for _, c := range cols {
		b.Set(c, row[c])
	}
	return b
}

// SetEventTimestamp sets the message's event time (microseconds) instead of the one derived
// from its parents.
func (b *MessageBuilder) SetEventTimestamp(ts uint64) *MessageBuilder {
	b.eventTS = ts
	return b
}

// SetSystemTimestamp is not supported by yt-flow yet (the runtime assigns system time): Finish
// returns an error wrapping ErrNotSupported.
func (b *MessageBuilder) SetSystemTimestamp(uint64) *MessageBuilder {
	if b.err == nil {
		b.err = fmt.Errorf("stream %q: SetSystemTimestamp: %w", b.streamID, ErrNotSupported)
	}
	return b
}

// Finish returns the message, or the first error of the calls before. With the stream's schema
// known, a required column left unset is ErrColumnNotFound.
func (b *MessageBuilder) Finish() (*Message, error) {
	if b.err != nil {
		return nil, b.err
	}
	if b.schema != nil {
		for _, c := range b.schema.Columns {
			if c.Required && b.row[c.Name] == nil {
				return nil, fmt.Errorf("stream %q: required column %q is not set: %w", b.streamID, c.Name, ErrColumnNotFound)
			}
		}
	}
	return &Message{streamID: b.streamID, row: b.row, eventTS: b.eventTS}, nil
}

func convertAny(v any, out any) error {
	b, err := yson.Marshal(v)
	if err == nil {
		err = yson.Unmarshal(b, out)
	}
	if err != nil {
		return fmt.Errorf("convert %T: %w: %w", v, ErrTypeMismatch, err)
	}
	return nil
}

// normalize turns a Go value into the form payloads hold (int64, uint64, float64, bool,
// string, []byte, nil or a YSON composite).
func normalize(v any) (any, error) {
	switch x := v.(type) {
	case nil, int64, uint64, float64, bool, string, []byte:
		return x, nil
	case int:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case uint:
		return uint64(x), nil
	case uint8:
		return uint64(x), nil
	case uint16:
		return uint64(x), nil
	case uint32:
		return uint64(x), nil
	case float32:
		return float64(x), nil
	}
	var out any
	if err := convertAny(v, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// fits reports whether a normalized value may go into a column of type t.
func fits(t schema.Type, v any) bool {
	switch t {
	case schema.TypeInt64, schema.TypeInt32, schema.TypeInt16, schema.TypeInt8, schema.TypeInterval:
		_, ok := v.(int64)
		return ok
	case schema.TypeUint64, schema.TypeUint32, schema.TypeUint16, schema.TypeUint8, schema.TypeDate, schema.TypeDatetime, schema.TypeTimestamp:
		_, ok := v.(uint64)
		return ok
	case schema.TypeFloat64, schema.TypeFloat32:
		_, ok := v.(float64)
		return ok
	case schema.TypeBoolean:
		_, ok := v.(bool)
		return ok
	case schema.TypeString, schema.TypeBytes:
		switch v.(type) {
		case string, []byte:
			return true
		}
		return false
	}
	return true // any, yson, null
}

func findColumn(s schema.Schema, name string) (schema.Column, bool) {
	for _, c := range s.Columns {
		if c.Name == name {
			return c, true
		}
	}
	return schema.Column{}, false
}

// Parameters are a computation's processing_function_parameters.
type Parameters struct {
	row flow.Row
}

// Get decodes parameter name into v (a pointer); ErrParameterNotFound when it is absent,
// ErrTypeMismatch when it does not decode.
func (p Parameters) Get(name string, v any) error {
	x, ok := p.row[name]
	if !ok {
		return fmt.Errorf("parameter %q: %w", name, ErrParameterNotFound)
	}
	if err := convertAny(x, v); err != nil {
		return fmt.Errorf("parameter %q: %w", name, err)
	}
	return nil
}

// Has reports whether parameter name is set.
func (p Parameters) Has(name string) bool {
	_, ok := p.row[name]
	return ok
}

// Names returns the parameter names, sorted.
func (p Parameters) Names() []string {
	out := make([]string, 0, len(p.row))
	for n := range p.row {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Stream is an output stream a program declares (Pipeline.AddStreams): its id and schema.
type Stream interface {
	ID() string
	Schema() schema.Schema
}

type ysonStream struct {
	id     string
	schema schema.Schema
}

func (s ysonStream) ID() string            { return s.id }
func (s ysonStream) Schema() schema.Schema { return s.schema }

// NewYSONStream declares stream id with the schema of T, a struct whose yson tags name the
// columns (schema.Infer: non-pointer fields are required, omitempty ones optional). It panics
// when T has no schema, a programming error found by the program's first run.
func NewYSONStream[T any](id string) Stream {
	var v T
	s, err := schema.Infer(v)
	if err != nil {
		panic(fmt.Sprintf("flowsdk: NewYSONStream[%T](%q): %v", v, id, err))
	}
	return ysonStream{id: id, schema: s}
}

// StreamSpecs are the streams a computation sees: its inputs' and outputs' schemas by stream
// id, as far as the spec and Pipeline.AddStreams tell.
type StreamSpecs map[string]schema.Schema
