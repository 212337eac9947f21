package ytlocal

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
	"go.ytsaurus.tech/library/go/blockcodecs"
)

// pooledZstd is the block codec of `z-zstd_N` with the same framing and codec id as the
// registered one (blockcodecs/blockzstd), but with its encoders and decoders reused: the
// registered codec builds a new zstd encoder or decoder for every block, which costs more
// CPU than the request itself. Only the server side uses it; blocks are byte-compatible.
type pooledZstd struct {
	blockcodecs.Codec // the registered codec: ID, Name, DecodedLen
	level             int
	enc               sync.Pool // *zstd.Encoder
}

var zstdDecoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		panic(fmt.Sprintf("ytlocal: zstd decoder: %v", err)) // only on invalid options
	}
	return d
}}

var pooledZstdCodecs = func() map[string]*pooledZstd {
	m := map[string]*pooledZstd{}
	for _, level := range []int{1, 3, 7} {
		base := blockcodecs.FindCodecByName(fmt.Sprintf("zstd_%d", level))
		if base == nil {
			continue
		}
		p := &pooledZstd{Codec: base, level: level}
		m[fmt.Sprintf("zstd_%d", level)] = p
		m[base.Name()] = p
	}
	return m
}()

// fastCodec returns the pooled implementation of a `z-…` codec name when there is one,
// else the registered codec (nil when unknown).
func fastCodec(name string) blockcodecs.Codec {
	name = strings.TrimPrefix(name, "z-")
	if p, ok := pooledZstdCodecs[name]; ok {
		return p
	}
	return blockcodecs.FindCodecByName(name)
}

func (z *pooledZstd) Encode(dst, src []byte) ([]byte, error) {
	if cap(dst) < 8 {
		dst = make([]byte, 8)
	}
	dst = dst[:8]
	binary.LittleEndian.PutUint64(dst, uint64(len(src)))
	e, _ := z.enc.Get().(*zstd.Encoder)
	if e == nil {
		var err error
		e, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(z.level)), zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, err
		}
	}
	out := e.EncodeAll(src, dst)
	z.enc.Put(e)
	return out, nil
}

func (z *pooledZstd) Decode(dst, src []byte) ([]byte, error) {
	if len(src) < 8 {
		return nil, fmt.Errorf("short block: %d < 8", len(src))
	}
	d := zstdDecoders.Get().(*zstd.Decoder)
	out, err := d.DecodeAll(src[8:], dst[:0])
	zstdDecoders.Put(d)
	return out, err
}
