// Handing payload maps over to reader jobs in this process instead of bytes (handOver).

package job

import (
	"cmp"
	"reflect"
	"slices"
	"unsafe"

	"github.com/ytflow/yt-flow/internal/ybin"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytstore"
)

// memRef is an output's payload map (by address) and the output's index (-1: not a stored
// output).
type memRef struct {
	p unsafe.Pointer
	i int
}

// handOver sets Mem on the rows of outs (rows[i] is outs[i]'s row) whose payload a reader job
// in this process may take as it is instead of decoding the row's bytes: payloads for
// computations whose values all have the types decoding gives (ybin.Decoded), each held by
// no other output of the epoch (others lists the epoch's outputs to sinks), with their keys
// when the key values have the decoded types too (OutputRow.MemKey). A map added
// twice, or sent to two destinations, goes as bytes only, so that no reader ever shares a map
// with another reader or a sink. buf is scratch space, returned for reuse (cleared).
//
// Invariant: a reader gets the payload its message's bytes decode to, type for type,
// whether pushed in memory or over HTTP, and never a map another reader holds
// (TestHandOverUnsharedDecodedPayloads, TestInProcessPushHandsPayloadOverOnce).
func handOver(outs []epoch.Out, rows []ytstore.OutputRow, others [][]epoch.Out, buf []memRef) []memRef {
	buf = buf[:0]
	for _, outs := range others {
		for _, o := range outs {
			if len(o.Message.Payload) > 0 {
				buf = append(buf, memRef{p: reflect.ValueOf(o.Message.Payload).UnsafePointer(), i: -1})
			}
		}
	}
	if len(buf) == 0 && len(outs) == 0 {
		return buf
	}
	for i, o := range outs {
		if o.Destination.Kind == epoch.ToComputation && len(o.Message.Payload) > 0 && ybin.Decoded(o.Message.Payload) {
			buf = append(buf, memRef{p: reflect.ValueOf(o.Message.Payload).UnsafePointer(), i: i})
		}
	}
	slices.SortFunc(buf, func(a, b memRef) int { return cmp.Compare(uintptr(a.p), uintptr(b.p)) })
	for j := 0; j < len(buf); {
		k := j + 1
		for k < len(buf) && buf[k].p == buf[j].p {
			k++
		}
		if i := buf[j].i; k == j+1 && i >= 0 {
			rows[i].Mem = outs[i].Message.Payload
			// The key is the keyer's own, made for this output alone.
			if ybin.DecodedList(outs[i].Message.Key) {
				rows[i].MemKey = outs[i].Message.Key
			}
		}
		j = k
	}
	clear(buf) // keeps no payload alive
	return buf[:0]
}
