package ybin

import (
	"fmt"
	"math"
	"reflect"
	"testing"
	"unsafe"

	"go.ytsaurus.tech/yt/go/yson"
)

var samples = []map[string]any{
	{},
	{"word": "hello", "n": int64(-3), "u": uint64(math.MaxUint64), "f": 1.25, "t": true, "z": false, "e": nil},
	{"": "", "b": []byte{0, 1}, "i": 7, "i32": int32(-2), "u32": uint32(9), "long": string(make([]byte, 300))},
}

// TestMatchesSDK: the encoding is the SDK's binary encoding, and decoding agrees with the
// SDK's (with []byte and narrow integers read back as the SDK reads them).
func TestMatchesSDK(t *testing.T) {
	for _, m := range samples {
		got, ok := AppendMap(nil, m)
		if !ok {
			t.Fatalf("%v not encoded", m)
		}
		want, err := yson.MarshalFormat(m, yson.FormatBinary)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("map %v:\n got %q\nwant %q", m, got, want)
		}
		dec, ok := DecodeMap(got)
		if !ok {
			t.Fatalf("%q not decoded", got)
		}
		var sdk map[string]any
		if err := yson.Unmarshal(got, &sdk); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(dec, sdk) {
			t.Fatalf("decoded %#v, SDK %#v", dec, sdk)
		}
		list := make([]any, 0, len(m))
		for _, v := range m {
			list = append(list, v)
		}
		lb := []byte{'['}
		for _, v := range list {
			lb, _ = AppendScalar(lb, v)
			lb = append(lb, ';')
		}
		lb = append(lb, ']')
		want, _ = yson.MarshalFormat(list, yson.FormatBinary)
		if string(lb) != string(want) {
			t.Fatalf("list %v:\n got %q\nwant %q", list, lb, want)
		}
		vals, ok := DecodeList(lb)
		var sdkList []any
		if err := yson.Unmarshal(lb, &sdkList); err != nil || !ok {
			t.Fatalf("list decode: %v %v", ok, err)
		}
		if len(vals) != 0 || len(sdkList) != 0 {
			if !reflect.DeepEqual(vals, sdkList) {
				t.Fatalf("decoded %#v, SDK %#v", vals, sdkList)
			}
		}
	}
	if _, ok := AppendMap(nil, map[string]any{"nested": map[string]any{}}); ok {
		t.Fatal("a nested map is not a scalar map")
	}
}

func TestDecodeRejects(t *testing.T) {
	good, _ := AppendMap(nil, map[string]any{"a": int64(1), "b": "x"})
	text, _ := yson.Marshal(map[string]any{"a": int64(1)})
	dupKey := []byte("{\x01\x02a=\x02\x02;\x01\x02a=\x02\x04;}")
	for name, b := range map[string][]byte{
		"text":      text,
		"truncated": good[:len(good)-1],
		"trailing":  append(append([]byte{}, good...), ' '),
		"dup key":   dupKey,
		"nested":    []byte("{\x01\x02a={};}"),
		"empty":     nil,
	} {
		if _, ok := DecodeMap(b); ok {
			t.Errorf("%s: decoded %q", name, b)
		}
		if IsMap(b) != (name == "dup key") { // IsMap does not look for repeated keys
			t.Errorf("%s: IsMap = %v", name, !(name == "dup key"))
		}
	}
	if !IsMap(good) {
		t.Errorf("IsMap(%q) = false", good)
	}
	for name, b := range map[string][]byte{"text": []byte("[1;2]"), "open": []byte("[\x02\x02;"), "no sep": []byte("[\x02\x02]")} {
		if _, ok := DecodeList(b); ok {
			t.Errorf("%s: decoded %q", name, b)
		}
	}
}

// FuzzDecode: whatever the fast decoders accept, the SDK decodes to the same values.
func FuzzDecode(f *testing.F) {
	for _, m := range samples {
		b, _ := AppendMap(nil, m)
		f.Add(b)
	}
	f.Add([]byte("[\x02\x02;\x01\x02ab;]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		// IsMap accepts what DecodeMap decodes, and only documents the SDK reads as a map.
		if _, ok := DecodeMap(b); ok && !IsMap(b) {
			t.Fatalf("DecodeMap decodes %q, IsMap refuses it", b)
		}
		if IsMap(b) {
			var sdk map[string]any
			if err := yson.Unmarshal(b, &sdk); err != nil {
				t.Fatalf("IsMap accepted %q, SDK refused: %v", b, err)
			}
		}
		// A Decoder that decoded other maps before decodes b as DecodeMap does.
		var dec Decoder
		for _, m := range samples {
			sb, _ := AppendMap(nil, m)
			dec.DecodeMap(sb)
		}
		dm, dok := dec.DecodeMap(b)
		if dok && !Decoded(dm) {
			t.Fatalf("%q decodes to %#v, which Decoded refuses", b, dm)
		}
		if vals, ok := DecodeList(b); ok && !DecodedList(vals) {
			t.Fatalf("%q decodes to the list %#v, which DecodedList refuses", b, vals)
		}
		if m, ok := DecodeMap(b); ok != dok || !sameValues(m, dm) {
			t.Fatalf("%q: DecodeMap %#v %v, Decoder %#v %v", b, m, ok, dm, dok)
		}
		// Again, now that the Decoder holds b's own values (repeated values are reused).
		if again, aok := dec.DecodeMap(b); aok != dok || !sameValues(again, dm) {
			t.Fatalf("%q decoded twice: %#v %v, then %#v %v", b, dm, dok, again, aok)
		}
		if m, ok := DecodeMap(b); ok {
			var sdk map[string]any
			if err := yson.Unmarshal(b, &sdk); err != nil {
				t.Fatalf("fast decoder accepted %q, SDK refused: %v", b, err)
			}
			if !sameValues(m, sdk) {
				t.Fatalf("%q: fast %#v, SDK %#v", b, m, sdk)
			}
		}
		// DecodeRow agrees with DecodeMap: the same user columns, the integer system columns
		// handed over unboxed.
		if m, ok := DecodeMap(b); ok {
			row, sys, rok := decodeRow(b)
			if !rok {
				t.Fatalf("%q: DecodeMap decodes it, DecodeRow refuses it", b)
			}
			checkRow(t, m, row, sys)
		}
		if l, ok := DecodeList(b); ok {
			var sdk []any
			if err := yson.Unmarshal(b, &sdk); err != nil {
				t.Fatalf("fast decoder accepted %q, SDK refused: %v", b, err)
			}
			if (len(l) != 0 || len(sdk) != 0) && !sameValues(l, sdk) {
				t.Fatalf("%q: fast %#v, SDK %#v", b, l, sdk)
			}
		}
	})
}

// TestDecoderSharesKeys: a Decoder hands out the same key strings for the rows of a list
// that repeat their column names, and the right keys when the names change.
func TestDecoderSharesKeys(t *testing.T) {
	var dec Decoder
	rows := []map[string]any{
		{"hash": uint64(1), "word": "a", "count": int64(1)},
		{"hash": uint64(2), "word": "b", "count": int64(2)},
		{"hash": uint64(3), "other": "c"},
		{"hash": uint64(4), "word": "d", "count": int64(4), "z": nil},
	}
	var first map[string]string // key -> the key string's data pointer
	for i, row := range rows {
		b, _ := AppendMap(nil, row)
		m, ok := dec.DecodeMap(b)
		if !ok || !reflect.DeepEqual(m, row) {
			t.Fatalf("row %d: %#v %v, want %#v", i, m, ok, row)
		}
		ptrs := map[string]string{}
		for k := range m {
			ptrs[k] = fmt.Sprintf("%p", unsafe.StringData(k))
		}
		if i == 0 {
			first = ptrs
			continue
		}
		if i == 1 && !reflect.DeepEqual(ptrs, first) {
			t.Fatalf("row 1 keys %v, row 0 keys %v: not shared", ptrs, first)
		}
	}
}

// decodeRow is DecodeRow of b by a new Decoder, with the system columns it handed over.
func decodeRow(b []byte) (row map[string]any, sys map[string]int64, ok bool) {
	sys = map[string]int64{}
	var dec Decoder
	row, ok = dec.DecodeRow(b, func(k string, v int64) { sys[k] = v })
	return row, sys, ok
}

// checkRow asserts that row and sys split the decoded map m: the columns without '$' in row,
// the integer '$' columns in sys.
func checkRow(t *testing.T, m, row map[string]any, sys map[string]int64) {
	t.Helper()
	wantRow, wantSys := map[string]any{}, map[string]int64{}
	for k, v := range m {
		if len(k) == 0 || k[0] != '$' {
			wantRow[k] = v
			continue
		}
		switch x := v.(type) {
		case int64:
			wantSys[k] = x
		case uint64:
			wantSys[k] = int64(x)
		}
	}
	if !sameValues(row, wantRow) || !reflect.DeepEqual(sys, wantSys) {
		t.Fatalf("DecodeRow: columns %#v system %#v, want %#v and %#v", row, sys, wantRow, wantSys)
	}
}

// TestDecodeRowSplitsSystemColumns: a queue row's system columns go to the callback, not into
// the row; a row the fast path cannot take is refused.
func TestDecodeRowSplitsSystemColumns(t *testing.T) {
	m := map[string]any{"$tablet_index": int64(1), "$row_index": int64(123456), "$timestamp": uint64(1) << 62,
		"$tag": "x", "text": "hello world", "n": int64(5)}
	b, ok := AppendMap(nil, m)
	if !ok {
		t.Fatal("AppendMap refused the sample")
	}
	row, sys, ok := decodeRow(b)
	if !ok {
		t.Fatalf("DecodeRow refused %q", b)
	}
	checkRow(t, m, row, sys)
	if len(row) != 2 || len(sys) != 3 {
		t.Fatalf("row %v, system %v: want 2 user and 3 integer system columns", row, sys)
	}
	var dec Decoder
	for _, bad := range []string{"", "{", "[]", "{\x01\x02a=\x02\x02;", "{\x01\x02a=\x02\x02;\x01\x02a=\x02\x02;}"} {
		if _, ok := dec.DecodeRow([]byte(bad), func(string, int64) {}); ok {
			t.Errorf("DecodeRow accepted %q", bad)
		}
	}
}

// TestAppendMapSmallAllocatesNothing: a payload of a few columns is encoded into the caller's
// buffer without allocating for its sorted keys.
func TestAppendMapSmallAllocatesNothing(t *testing.T) {
	m := map[string]any{"word": "w", "count": int64(3), "hash": uint64(5)}
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { AppendMap(buf[:0], m) }); n != 0 {
		t.Errorf("AppendMap of %d columns: %v allocations, want 0", len(m), n)
	}
}

// sameValues is reflect.DeepEqual, except that a NaN equals a NaN: decoded documents are the
// same when they hold the same values, and a NaN is a value YSON can carry (fmt prints maps
// with sorted keys, so equal documents print the same).
func sameValues(a, b any) bool {
	return reflect.DeepEqual(a, b) || fmt.Sprintf("%#v", a) == fmt.Sprintf("%#v", b)
}

// A map handed back in Spare is reused, cleared: nothing of its earlier entries shows.
func TestDecoderReusesSpareMapsCleared(t *testing.T) {
	var dec Decoder
	enc := func(m map[string]any) []byte {
		b, ok := AppendMap(nil, m)
		if !ok {
			t.Fatalf("%v does not encode", m)
		}
		return b
	}
	first, ok := dec.DecodeMap(enc(map[string]any{"a": int64(1), "b": "x"}))
	if !ok {
		t.Fatal("first map did not decode")
	}
	dec.Spare = append(dec.Spare, first)
	second, ok := dec.DecodeMap(enc(map[string]any{"a": int64(2)}))
	if !ok {
		t.Fatal("second map did not decode")
	}
	if len(dec.Spare) != 0 {
		t.Fatalf("spare not taken: %d left", len(dec.Spare))
	}
	first["marker"] = true // the same map: the second decode reused it
	if second["marker"] != true {
		t.Fatal("the second decode made a new map instead of reusing the spare")
	}
	delete(second, "marker")
	if len(second) != 1 || second["a"] != int64(2) {
		t.Fatalf("reused map = %v, want map[a:2]", second)
	}
}

// TestDecoderReusesRepeatedValues: a value equal to the previous map's value at the same
// position (same type and value) is that value, not a new allocation: decoding a map equal
// to the previous one into a spare map allocates nothing. Values that differ in type, length,
// bytes or sign decode as themselves.
func TestDecoderReusesRepeatedValues(t *testing.T) {
	var dec Decoder
	row := map[string]any{"computation_id": "count", "system_timestamp": uint64(1796427696968423), "n": int64(-7), "name": "count"}
	b, ok := AppendMap(nil, row)
	if !ok {
		t.Fatal("row does not encode")
	}
	first, ok := dec.DecodeMap(b)
	if !ok || !reflect.DeepEqual(first, row) {
		t.Fatalf("first = %v, %v", first, ok)
	}
	spare := map[string]any{}
	allocs := testing.AllocsPerRun(100, func() {
		dec.Spare = append(dec.Spare[:0], spare)
		m, ok := dec.DecodeMap(b)
		if !ok || len(m) != 4 {
			t.Fatalf("repeat = %v, %v", m, ok)
		}
	})
	if allocs != 0 {
		t.Errorf("decoding a repeated map allocates %.1f times, want 0", allocs)
	}
	if !reflect.DeepEqual(spare, row) {
		t.Fatalf("repeat = %v, want %v", spare, row)
	}
	for i, next := range []map[string]any{
		{"computation_id": "counT", "system_timestamp": uint64(1796427696968424), "n": int64(7), "name": "cnt"},
		{"computation_id": int64(5), "system_timestamp": int64(1796427696968423), "n": uint64(7), "name": "count"},
		{"computation_id": "count", "system_timestamp": "1796427696968423", "n": nil, "name": "count!"},
		{"computation_id": "", "system_timestamp": uint64(0), "n": int64(0), "name": true},
		row,
	} {
		b, ok := AppendMap(nil, next)
		if !ok {
			t.Fatalf("map %d does not encode", i)
		}
		m, ok := dec.DecodeMap(b)
		if !ok || !reflect.DeepEqual(m, next) {
			t.Fatalf("map %d = %#v, %v; want %#v", i, m, ok, next)
		}
	}
}

// TestDecodedMatchesRoundTrip: Decoded accepts exactly the maps that decode from their own
// encoding to themselves, type for type (what lets a reader in the same process take the
// producer's map instead of its bytes).
func TestDecodedMatchesRoundTrip(t *testing.T) {
	maps := append([]map[string]any{
		{"word": "hello"},
		{"n": int64(1), "u": uint64(2), "f": math.Inf(-1), "nan": math.NaN(), "b": true, "e": nil},
		{"i": 1},
		{"bytes": []byte("x")},
		{"list": []any{"a"}},
	}, samples...)
	for i, m := range maps {
		b, ok := AppendMap(nil, m)
		if !ok {
			if Decoded(m) {
				t.Errorf("map %d (%#v) does not encode, Decoded accepts it", i, m)
			}
			continue
		}
		back, ok := DecodeMap(b)
		if !ok {
			t.Fatalf("map %d: its encoding does not decode", i)
		}
		same := len(m) == len(back)
		for k, v := range m {
			w, ok := back[k]
			// Type for type; NaN equals NaN here.
			same = same && ok && reflect.TypeOf(v) == reflect.TypeOf(w) && (reflect.DeepEqual(v, w) || fmt.Sprint(v) == fmt.Sprint(w))
		}
		if same != Decoded(m) {
			t.Errorf("map %d (%#v): round trip equal %v, Decoded %v", i, m, same, Decoded(m))
		}
	}
}
