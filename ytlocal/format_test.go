package ytlocal

import (
	"net/http"
	"testing"
)

// TestFormatName: format header values name their format, from the cache as when parsed.
func TestFormatName(t *testing.T) {
	for h, want := range map[string]string{
		"": "yson", "yson": "yson", "<format=binary>yson": "yson", "<format=text>yson": "yson-text",
		"<format=pretty>yson": "yson-text", " json ": "json", `<"encode_utf8"=%false>json`: "json",
		"{": "{", "<format=text>": "<format=text>",
	} {
		for range 2 { // parsed, then cached
			if got := formatName(h); got != want {
				t.Errorf("formatName(%q) = %q, want %q", h, got, want)
			}
		}
	}
}

// FuzzFormatName: a header value's format name is the same parsed and cached.
func FuzzFormatName(f *testing.F) {
	for _, h := range []string{"", "yson", "<format=text>yson", "json", "<a=[1;2]>json", "<format=text"} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, h string) {
		want := parseFormatName(h)
		if a, b := formatName(h), formatName(h); a != want || b != want {
			t.Fatalf("formatName(%q) = %q then %q, parsed %q", h, a, b, want)
		}
	})
}

// TestDecodeRequestParams: the header's parameters, then a POST body's, make the request's
// parameters; a body overrides the header.
func TestDecodeRequestParams(t *testing.T) {
	h := http.Header{}
	h.Set("X-YT-Parameters", `{path="//tmp/a";recursive=%true;}`)
	req, err := decodeRequest(http.MethodPost, h, []byte(`{path="//tmp/b";force=%true;}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(req.params) != 3 || req.params["path"] != "//tmp/b" || req.params["recursive"] != true || req.params["force"] != true {
		t.Fatalf("params %v", req.params)
	}
	req, err = decodeRequest(http.MethodGet, http.Header{}, nil)
	if err != nil || req.params == nil || len(req.params) != 0 {
		t.Fatalf("no parameters: %v, %v", req.params, err)
	}
	req, err = decodeRequest(http.MethodPut, h, []byte("{a=1};"))
	if err != nil || len(req.params) != 2 || string(req.input) != "{a=1};" || req.inFmt != "yson" {
		t.Fatalf("put: %+v, %v", req, err)
	}
}
