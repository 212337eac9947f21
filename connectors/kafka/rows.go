package kafka

import (
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ytflow/yt-flow/connectors/connector"
)

// cells hold the values of one row's columns that the row's map holds as any: the map's
// values point into them (see boxString), so a row costs four allocations (its map's header
// and slot group, its cells, its strings) instead of about ten. Cells are never written once
// boxed; an any pointing into them keeps them alive as any pointer into an object does.
type cells struct {
	key, data                              string
	partition, offset, subOffset, unixTime int64
}

// eface is the layout of an any: its type word and a pointer to its value (for a string or an
// int64, the value is never stored in the word itself).
type eface struct {
	typ, data unsafe.Pointer
}

var (
	stringType = typeOf("")
	int64Type  = typeOf(int64(0))
)

func typeOf(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).typ }

// boxString is any(*p) without copying *p to a new allocation: the any points at p, which the
// caller never writes again (an any's value is immutable; *p lives as long as the any does).
func boxString(p *string) any { return box(stringType, unsafe.Pointer(p)) }

// boxInt64 is any(*p) likewise.
func boxInt64(p *int64) any { return box(int64Type, unsafe.Pointer(p)) }

func box(typ, data unsafe.Pointer) any {
	var v any
	e := (*eface)(unsafe.Pointer(&v))
	e.data = data
	e.typ = typ
	return v
}

// recordRow is the row of record r with Flow's columns: data is frame (null when hasData is
// false), sub_offset sub, unparsed as given. The row's key and data strings share one
// allocation and its other values are its cells. Nothing of r is referenced by the row.
//
// Invariant: a row has the columns, Go types and values of Flow's schema whatever the record,
// and nothing of the record (TestKafkaSourceRowColumns, TestKafkaSourceRecyclesRecords,
// TestKafkaSourceReadsOffsets, TestKafkaSourceMalformedPolicy).
func recordRow(r *kgo.Record, frame []byte, hasData bool, sub int64, unparsed any) connector.Row {
	c := &cells{partition: int64(r.Partition), offset: r.Offset, subOffset: sub, unixTime: r.Timestamp.Unix()}
	if n := len(r.Key) + len(frame); n > 0 {
		var b strings.Builder
		b.Grow(n)
		b.Write(r.Key)
		b.Write(frame)
		all := b.String()
		c.key, c.data = all[:len(r.Key)], all[len(r.Key):]
	}
	var key, data any
	if r.Key != nil {
		key = boxString(&c.key)
	}
	if hasData {
		data = boxString(&c.data)
	}
	cols := make(map[string]any, 7)
	cols["data"] = data
	cols["key"] = key
	cols["unparsed"] = unparsed
	cols["partition"] = boxInt64(&c.partition)
	cols["offset"] = boxInt64(&c.offset)
	cols["sub_offset"] = boxInt64(&c.subOffset)
	cols["timestamp"] = boxInt64(&c.unixTime)
	return connector.Row{Offset: r.Offset, Timestamp: uint64(max(r.Timestamp.UnixMicro(), 0)), Columns: cols}
}

// recordPool takes back the record slabs of a Source's consumer (kgo.PoolRecords): the
// Source recycles every record once its rows are built (they hold copies), and a slab
// whose records are all recycled serves a later fetch instead of a new allocation.
type recordPool struct {
	p    sync.Pool
	puts atomic.Int64 // slabs given back, for tests
}

// GetRecords returns a slab of capacity n or more, or nil (the client allocates one).
func (p *recordPool) GetRecords(n int) []kgo.Record {
	if s, ok := p.p.Get().(*[]kgo.Record); ok && cap(*s) >= n {
		return (*s)[:0]
	}
	return nil
}

// PutRecords takes back a slab whose records were all recycled (and zeroed).
func (p *recordPool) PutRecords(s []kgo.Record) {
	p.puts.Add(1)
	p.p.Put(&s)
}
