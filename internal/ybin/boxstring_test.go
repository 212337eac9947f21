package ybin

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestDecoderStringIsOneAllocation: a string value the previous map did not hold costs one
// allocation (boxString), not two; its value and type are those of the string.
func TestDecoderStringIsOneAllocation(t *testing.T) {
	var dec Decoder
	bodies := make([][]byte, 2)
	for i := range bodies {
		b, ok := AppendMap(nil, map[string]any{"payload": fmt.Sprintf("a payload of some length, number %d", i)})
		if !ok {
			t.Fatal("map does not encode")
		}
		bodies[i] = b
	}
	spare := map[string]any{}
	i := 0
	allocs := testing.AllocsPerRun(100, func() {
		i++
		dec.Spare = append(dec.Spare[:0], spare)
		if m, ok := dec.DecodeMap(bodies[i%2]); !ok || len(m) != 1 {
			t.Fatalf("decode = %v, %v", m, ok)
		}
	})
	if allocs != 1 {
		t.Errorf("decoding a new string value allocates %.1f times, want 1", allocs)
	}
	if s, ok := spare["payload"].(string); !ok || s != fmt.Sprintf("a payload of some length, number %d", i%2) {
		t.Fatalf("payload = %#v", spare["payload"])
	}
	for _, s := range []string{"", "a", "1234567", "12345678", "123456789", strings.Repeat("x", 1000)} {
		v := boxString([]byte(s))
		if got, ok := v.(string); !ok || got != s || len(got) != len(s) {
			t.Fatalf("boxString(%q) = %#v", s, v)
		}
		if v != any(s) {
			t.Fatalf("boxString(%q) != any(%q)", s, s)
		}
	}
}

// TestBoxStringSurvivesCollection: strings decoded into blocks that hold their own header
// keep their bytes through collections while the memory around them is reused, whether
// held as interface values or as strings taken from them, and substrings too.
func TestBoxStringSurvivesCollection(t *testing.T) {
	const n = 20000
	want := func(i int) string { return fmt.Sprintf("value-%d-%s", i, strings.Repeat("z", i%97)) }
	vals := make([]any, n)
	strs := make([]string, n)
	for i := range n {
		vals[i] = boxString([]byte(want(i)))
		if i%2 == 0 {
			s := vals[i].(string)
			strs[i] = s[6:] // only an interior pointer keeps this block
			vals[i] = nil
		}
	}
	for range 3 {
		runtime.GC()
		garbage := make([][]byte, 0, n)
		for i := range n {
			garbage = append(garbage, []byte(strings.Repeat("#", 8+i%97)))
		}
		runtime.KeepAlive(garbage)
	}
	for i := range n {
		if i%2 == 0 {
			if strs[i] != want(i)[6:] {
				t.Fatalf("substring %d = %q, want %q", i, strs[i], want(i)[6:])
			}
			continue
		}
		if s, ok := vals[i].(string); !ok || s != want(i) {
			t.Fatalf("value %d = %#v, want %q", i, vals[i], want(i))
		}
	}
}
