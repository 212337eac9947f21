package ytlocal

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"go.ytsaurus.tech/yt/go/yterrors"
)

// fuzzCommands are the commands of the server core exercised by FuzzDecodeRequest.
var fuzzCommands = []string{"get", "set", "list", "exists", "create", "remove", "copy", "move", "link",
	"lock", "unlock", "multiset_attributes", "start_transaction", "ping_transaction",
	"commit_transaction", "abort_transaction", "write_table", "read_table", "write_file",
	"read_file", "execute_batch", "generate_timestamp"}

// FuzzDecodeRequest feeds arbitrary parameters and bodies through request decoding and
// then through a core command on a live in-memory server: the outcome must be a value or
// a YTsaurus error — never a panic, a hang or a non-YT error.
func FuzzDecodeRequest(f *testing.F) {
	seeds := []struct {
		cmd            uint8
		method, params string
		body           string
	}{
		{4, "POST", "", `{path="//tmp/t";type=table;recursive=%true;"ignore_existing"=%false;attributes={schema=<"unique_keys"=%false;>[{name="k";type=utf8;required=%true;"sort_order"=ascending;};];};"mutation_id"="ee924477-61ae4aba-e3496277-6aa0a1f5";retry=%false;}`},
		{0, "GET", `{path="/привет";}`, ""},
		{17, "GET", `{path="//tmp/t[#1:10]{a,b}";}`, ""},
		{16, "PUT", `{path="<append=%true>//tmp/t";"table_writer"=#;}`, "{k=\"a\";};{k=\"b\";};"},
		{16, "PUT", `{path="//tmp/t";}`, "\x01\x02ab"},
		{20, "POST", "", `{requests=[{command=exists;parameters={path="//tmp";};};];concurrency=50;}`},
		{12, "POST", "", `{timeout=15000;sticky=%false;}`},
		{14, "POST", "", `{"transaction_id"="1-2-1-3";}`},
		{0, "GET", `{path="#1-2-3-4/@";}`, ""},
		{1, "PUT", `{path="//tmp/a/@x/y";recursive=%true}`, "{z=1}"},
		{6, "POST", "", `{source_path="//tmp";destination_path="//tmp/x";recursive=%true}`},
		{4, "POST", "", "{"},
		{0, "GET", "[1;2]", ""},
	}
	for _, s := range seeds {
		f.Add(s.cmd, s.method, s.params, []byte(s.body))
	}
	fuzzServer, err := Start(context.Background(), Config{MaxRequestBytes: 1 << 20})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = fuzzServer.Close() })
	f.Fuzz(func(t *testing.T, cmdIndex uint8, method, params string, body []byte) {
		h := http.Header{}
		h.Set("X-YT-Parameters", params)
		req, err := decodeRequest(method, h, body)
		if err != nil {
			if _, ok := err.(*yterrors.Error); !ok {
				t.Fatalf("decodeRequest returned a non-YT error %T: %v", err, err)
			}
			return
		}
		if req.params == nil {
			t.Fatal("decodeRequest returned nil params without an error")
		}
		name := fuzzCommands[int(cmdIndex)%len(fuzzCommands)]
		cmd := commands[name]
		c := &call{s: fuzzServer, name: name, params: req.params, input: req.input, inFmt: req.inFmt, mutates: cmd.opts.Mutating}
		res, err := fuzzServer.execute(cmd, c)
		if err != nil {
			e, ok := err.(*yterrors.Error)
			if !ok {
				t.Fatalf("%s returned a non-YT error %T: %v", name, err, err)
			}
			if e.HasAttr("panic") {
				t.Fatalf("%s panicked: %v", name, e)
			}
			return
		}
		if _, err := encodeResult(res, "yson", "z-zstd_3"); err != nil {
			t.Fatalf("%s result cannot be encoded: %v", name, err)
		}
	})
}

// FuzzParsePath checks the Cypress path parser: no panics, and a parsed path printed
// back with escaped keys parses to the same keys and attribute part.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/", "//tmp", "//tmp/a\\/b/@attr/x", "#1-2-3-4/@", "//a&/b&/@type",
		"//tmp/\\x41\\@", "/@x", "//привет/мир", "//a//b", "//a/@", "#zz", "//a\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := parsePath(raw)
		if err != nil {
			return
		}
		var b strings.Builder
		if p.byID {
			b.WriteString("#" + p.id.String())
		} else {
			b.WriteString("/")
		}
		for _, k := range p.keys {
			b.WriteString("/" + escapeKey(k))
		}
		if p.isAttr() {
			b.WriteString("/@")
			for i, a := range p.attr {
				if i > 0 {
					b.WriteString("/")
				}
				b.WriteString(escapeKey(a))
			}
		}
		q, err := parsePath(b.String())
		if err != nil {
			t.Fatalf("re-parse of %q (from %q): %v", b.String(), raw, err)
		}
		if !slices.Equal(p.keys, q.keys) || p.isAttr() != q.isAttr() || p.isAttr() && !slices.Equal(p.attr, q.attr) {
			t.Fatalf("round trip of %q via %q: keys %q/%q attr %q/%q", raw, b.String(), p.keys, q.keys, p.attr, q.attr)
		}
	})
}
