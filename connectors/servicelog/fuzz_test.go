package servicelog

import (
	"reflect"
	"testing"
)

// FuzzPosition: a position either does not decode (an error) or encodes back to one that
// decodes equal.
func FuzzPosition(f *testing.F) {
	f.Add([]byte(position{Cycle: 2, Started: 17, After: []any{uint64(5), "a"}, Count: 9}.encode()))
	f.Add([]byte("{cycle=1}"))
	f.Add([]byte("{bad"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, ok, err := decodePosition(raw)
		if err != nil || !ok {
			return
		}
		back, ok, err := decodePosition(p.encode())
		if err != nil || !ok || !reflect.DeepEqual(p, back) {
			t.Fatalf("%+v encodes to one that decodes as %+v (%v)", p, back, err)
		}
	})
}
