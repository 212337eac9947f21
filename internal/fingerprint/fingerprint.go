// Package fingerprint computes the FarmHash fingerprints yt-flow keeps of strings (message
// ids) without copying the string into a byte slice first: an id is usually longer than the
// 32 bytes a conversion can keep on the stack, so []byte(id) would allocate for every message.
package fingerprint

import (
	"unsafe"

	farm "github.com/dgryski/go-farm"
)

// bytesOf views s as bytes. The hash functions only read their input.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// String64 is farm.Fingerprint64([]byte(s)).
func String64(s string) uint64 { return farm.Fingerprint64(bytesOf(s)) }

// String128 is farm.Fingerprint128([]byte(s)).
func String128(s string) (lo, hi uint64) { return farm.Fingerprint128(bytesOf(s)) }
