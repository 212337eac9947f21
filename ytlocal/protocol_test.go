package ytlocal_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/library/go/blockcodecs"
	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yterrors"

	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
)

type rawReply struct {
	status  int
	header  http.Header
	body    []byte
	errCode int
}

func do(t *testing.T, method, url string, header map[string]string, body []byte) rawReply {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rsp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer rsp.Body.Close()
	b, err := io.ReadAll(rsp.Body)
	require.NoError(t, err)
	r := rawReply{status: rsp.StatusCode, header: rsp.Header, body: b}
	if h := rsp.Header.Get("X-YT-Error"); h != "" {
		var e yterrors.Error
		require.NoError(t, json.Unmarshal([]byte(h), &e), "X-YT-Error must be yterrors JSON: %s", h)
		r.errCode = int(e.Code)
	}
	return r
}

func TestBadRequestsGetYTErrors(t *testing.T) {
	proxy := ytlocaltest.New(t)
	base := "http://" + proxy + "/api/v4/"
	yc := newClient(t, proxy)
	ctx := context.Background()
	_, err := yc.CreateNode(ctx, ypath.Path("//tmp/keep"), yt.NodeTable, nil)
	require.NoError(t, err)
	w, err := yc.WriteTable(ctx, ypath.Path("//tmp/keep"), nil)
	require.NoError(t, err)
	require.NoError(t, w.Write(map[string]any{"a": int64(1)}))
	require.NoError(t, w.Commit())

	cases := []struct {
		name    string
		method  string
		cmd     string
		header  map[string]string
		body    string
		status  int
		code    int
		message string
	}{
		{"unknown command", "GET", "no_such_command", nil, "", 404, 1, "not registered"},
		{"malformed parameters header", "GET", "get", map[string]string{"X-YT-Parameters": "{path=//tmp;"}, "", 400, 1, "X-YT-Parameters"},
		{"malformed POST body", "POST", "create", nil, "{type=map_node;path=", 400, 1, "parameters"},
		{"parameters not a map", "POST", "create", nil, "[1;2]", 400, 1, "must be a map"},
		{"wrong parameter type", "POST", "create", nil, `{type=map_node;path="//tmp/x";recursive=42}`, 400, 1, "recursive"},
		{"missing parameter", "POST", "create", nil, `{path="//tmp/x"}`, 400, 1, "type"},
		{"bad path", "GET", "get", map[string]string{"X-YT-Parameters": `{path="tmp"}`}, "", 400, 1, "YPath"},
		{"missing node", "GET", "get", map[string]string{"X-YT-Parameters": `{path="//tmp/nope"}`}, "", 400, 500, "nope"},
		{"bad transaction id", "GET", "get", map[string]string{"X-YT-Parameters": `{path="//tmp";transaction_id="zz"}`}, "", 400, 1, "transaction_id"},
		{"unknown transaction", "GET", "get", map[string]string{"X-YT-Parameters": `{path="//tmp";transaction_id="1-2-1-3"}`}, "", 400, 11000, "No such transaction"},
		{"malformed rows", "PUT", "write_table", map[string]string{"X-YT-Parameters": `{path="<append=%true>//tmp/keep"}`}, "{a=1;};{b=", 400, 1, "rows"},
		{"row not a map", "PUT", "write_table", map[string]string{"X-YT-Parameters": `{path="<append=%true>//tmp/keep"}`}, "1;2;", 400, 1, "expected a map"},
		{"oversized row", "PUT", "write_table", map[string]string{"X-YT-Parameters": `{path="<append=%true>//tmp/keep";table_writer={max_row_weight=10}}`}, `{a="0123456789abcdef"};`, 400, 308, "Row weight"},
		{"bad compression", "PUT", "write_table", map[string]string{"X-YT-Parameters": `{path="//tmp/keep"}`, "Content-Encoding": "z-zstd_3"}, "not a block stream", 400, 1, "request body"},
		{"unknown encoding", "PUT", "write_table", map[string]string{"X-YT-Parameters": `{path="//tmp/keep"}`, "Content-Encoding": "z-nope"}, "", 415, 1, "Content-Encoding"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, tc.method, base+tc.cmd, tc.header, []byte(tc.body))
			require.Equal(t, tc.status, r.status, "body: %s", r.body)
			require.Equal(t, tc.code, r.errCode, "body: %s", r.body)
			require.Contains(t, string(r.body), tc.message)
		})
	}

	// Committed data is untouched by every rejected request.
	var n int64
	require.NoError(t, yc.GetNode(ctx, ypath.Path("//tmp/keep/@row_count"), &n, nil))
	require.Equal(t, int64(1), n)
	ok, err := yc.NodeExists(ctx, ypath.Path("//tmp/x"), nil)
	require.NoError(t, err)
	require.False(t, ok)
}

func TestMutationRetryAnsweredFromCache(t *testing.T) {
	proxy := ytlocaltest.New(t)
	url := "http://" + proxy + "/api/v4/create"
	id := guid.New().String()
	body := func(retry bool) []byte {
		b, err := yson.MarshalFormat(map[string]any{"path": "//tmp/once", "type": "map_node", "mutation_id": id, "retry": retry}, yson.FormatText)
		require.NoError(t, err)
		return b
	}
	first := do(t, "POST", url, nil, body(false))
	require.Equal(t, 200, first.status, "%s", first.body)
	again := do(t, "POST", url, nil, body(true))
	require.Equal(t, 200, again.status, "a retried mutation must not fail with 501: %s", again.body)
	require.Equal(t, first.body, again.body)

	fresh := do(t, "POST", url, nil, []byte(`{path="//tmp/once";type=map_node}`))
	require.Equal(t, 501, fresh.errCode)
}

func TestCompressedResponseEchoesEncoding(t *testing.T) {
	proxy := ytlocaltest.New(t)
	yc := newClient(t, proxy)
	ctx := context.Background()
	_, err := yc.CreateNode(ctx, ypath.Path("//tmp/t"), yt.NodeTable, nil)
	require.NoError(t, err)
	for _, codec := range []string{"zstd_3", "snappy", "brotli_6", "lz4-fast14-safe", "zstd_1"} {
		c := blockcodecs.FindCodecByName(codec)
		require.NotNil(t, c, codec)
		var in bytes.Buffer
		enc := blockcodecs.NewEncoder(&in, c)
		_, err := enc.Write([]byte(`{a=1;};{a=2;};`))
		require.NoError(t, err)
		require.NoError(t, enc.Close())
		w := do(t, "PUT", "http://"+proxy+"/api/v4/write_table",
			map[string]string{"X-YT-Parameters": `{path="//tmp/t"}`, "Content-Encoding": "z-" + codec}, in.Bytes())
		require.Equal(t, 200, w.status, "%s: %s", codec, w.body)

		r := do(t, "GET", "http://"+proxy+"/api/v4/read_table",
			map[string]string{"X-YT-Parameters": `{path="//tmp/t"}`, "Accept-Encoding": "z-" + codec}, nil)
		require.Equal(t, 200, r.status)
		require.Equal(t, "z-"+codec, r.header.Get("Content-Encoding"))
		dec := blockcodecs.NewDecoder(bytes.NewReader(r.body))
		dec.SetCheckUnderlyingEOF(true)
		out, err := io.ReadAll(dec)
		require.NoError(t, err, codec)
		var rows []map[string]any
		rr := yson.NewReaderKindFromBytes(out, yson.StreamListFragment)
		for {
			ok, err := rr.NextListItem()
			require.NoError(t, err)
			if !ok {
				break
			}
			raw, err := rr.NextRawValue()
			require.NoError(t, err)
			var m map[string]any
			require.NoError(t, yson.Unmarshal(raw, &m))
			rows = append(rows, m)
		}
		require.Equal(t, []map[string]any{{"a": int64(1)}, {"a": int64(2)}}, rows, codec)
	}
}

func TestDiscoveryAndWhoami(t *testing.T) {
	proxy := ytlocaltest.New(t)
	r := do(t, "GET", "http://"+proxy+"/hosts?address_type=http&type=http", nil, nil)
	require.Equal(t, 200, r.status)
	var hosts []string
	require.NoError(t, json.Unmarshal(r.body, &hosts))
	require.Equal(t, []string{proxy}, hosts)
	r = do(t, "GET", "http://"+proxy+"/auth/whoami", nil, nil)
	require.Equal(t, 200, r.status)
	require.True(t, strings.Contains(string(r.body), `"login"`))
	r = do(t, "GET", "http://"+proxy+"/api", nil, nil)
	require.Equal(t, 200, r.status)
	require.Contains(t, string(r.body), "v4")
}

func TestGzipBodyAndJSONOutput(t *testing.T) {
	proxy := ytlocaltest.New(t)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write([]byte(`{a=1;b="x";};{a=2;b="y";};`))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	r := do(t, "POST", "http://"+proxy+"/api/v4/create", nil, []byte(`{path="//tmp/t";type=table}`))
	require.Equal(t, 200, r.status, "%s", r.body)
	r = do(t, "PUT", "http://"+proxy+"/api/v4/write_table",
		map[string]string{"X-YT-Parameters": `{path="//tmp/t"}`, "Content-Encoding": "gzip"}, gz.Bytes())
	require.Equal(t, 200, r.status, "%s", r.body)

	r = do(t, "PUT", "http://"+proxy+"/api/v4/write_table",
		map[string]string{"X-YT-Parameters": `{path="<append=%true>//tmp/t"}`, "X-YT-Input-Format": "json"},
		[]byte("{\"a\":3,\"b\":\"z\"}\n"))
	require.Equal(t, 200, r.status, "%s", r.body)

	r = do(t, "GET", "http://"+proxy+"/api/v4/get",
		map[string]string{"X-YT-Parameters": `{path="//tmp/t/@row_count"}`, "X-YT-Output-Format": "json"}, nil)
	require.Equal(t, 200, r.status, "%s", r.body)
	require.JSONEq(t, `{"value":3}`, string(r.body))

	r = do(t, "GET", "http://"+proxy+"/api/v4/read_table",
		map[string]string{"X-YT-Parameters": `{path="//tmp/t[#1:#2]"}`, "X-YT-Output-Format": "json"}, nil)
	require.Equal(t, 200, r.status, "%s", r.body)
	require.JSONEq(t, `{"a":2,"b":"y"}`, strings.TrimSpace(string(r.body)))
	require.Contains(t, r.header.Get("X-YT-Response-Parameters"), `"start_row_index"=1`)
}

func TestMutationRetryAfterRestart(t *testing.T) {
	cfg := ytlocal.Config{DataDir: t.TempDir()}
	s1, err := ytlocal.Start(context.Background(), cfg)
	require.NoError(t, err)
	post := func(addr, cmd string, params map[string]any) rawReply {
		b, err := yson.MarshalFormat(params, yson.FormatText)
		require.NoError(t, err)
		return do(t, "POST", "http://"+addr+"/api/v4/"+cmd, nil, b)
	}
	start := post(s1.Addr(), "start_transaction", map[string]any{})
	require.Equal(t, 200, start.status)
	var started struct {
		ID string `yson:"transaction_id"`
	}
	require.NoError(t, yson.Unmarshal(start.body, &started))
	createID, commitID := guid.New().String(), guid.New().String()
	create := post(s1.Addr(), "create", map[string]any{"path": "//tmp/once", "type": "map_node", "mutation_id": createID})
	require.Equal(t, 200, create.status, "%s", create.body)
	commit := post(s1.Addr(), "commit_transaction", map[string]any{"transaction_id": started.ID, "mutation_id": commitID})
	require.Equal(t, 200, commit.status, "%s", commit.body)
	require.NoError(t, s1.Close())

	// The responses were lost; the client retries against the restarted server.
	s2 := ytlocaltest.Start(t, cfg)
	again := post(s2.Addr(), "create", map[string]any{"path": "//tmp/once", "type": "map_node", "mutation_id": createID, "retry": true})
	require.Equal(t, 200, again.status, "a retried create must not fail with 501: %s", again.body)
	require.Equal(t, create.body, again.body)
	again = post(s2.Addr(), "commit_transaction", map[string]any{"transaction_id": started.ID, "mutation_id": commitID, "retry": true})
	require.Equal(t, 200, again.status, "a retried commit must not fail with 11000: %s", again.body)

	other := post(s2.Addr(), "commit_transaction", map[string]any{"transaction_id": started.ID, "mutation_id": guid.New().String()})
	require.Equal(t, 11000, other.errCode, "a new commit of the finished transaction still fails")
}

func TestSortedWriteViolations(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))
	p := ypath.Path("//tmp/sorted")
	_, err := yc.CreateNode(ctx, p, yt.NodeTable, nil)
	require.NoError(t, err)
	write := func(rich *ypath.Rich, rows ...kv) error {
		w, err := yc.WriteTable(ctx, rich, nil)
		require.NoError(t, err)
		for _, r := range rows {
			require.NoError(t, w.Write(r))
		}
		return w.Commit()
	}
	require.NoError(t, write(ypath.NewRich(string(p)).SetSortedBy([]string{"key"}), kv{"a", 1}, kv{"b", 2}))
	err = write(ypath.NewRich(string(p)).SetAppend(), kv{"a", 3})
	require.True(t, yterrors.ContainsErrorCode(err, yterrors.CodeSortOrderViolation), "%v", err)
	err = write(ypath.NewRich(string(p)).SetSortedBy([]string{"key"}), kv{"b", 1}, kv{"a", 2})
	require.True(t, yterrors.ContainsErrorCode(err, yterrors.CodeSortOrderViolation), "%v", err)
	require.NoError(t, write(ypath.NewRich(string(p)).SetAppend(), kv{"c", 3}))
	require.Equal(t, []kv{{"a", 1}, {"b", 2}, {"c", 3}}, readAll(t, yc, p))
	var sortedBy []string
	require.NoError(t, yc.GetNode(ctx, p.Attr("sorted_by"), &sortedBy, nil))
	require.Equal(t, []string{"key"}, sortedBy)
}

func TestQueryStringParameters(t *testing.T) {
	proxy := ytlocaltest.New(t)
	r := do(t, "POST", "http://"+proxy+"/api/v4/create?path=//tmp/q/r&type=map_node&recursive=true", nil, nil)
	require.Equal(t, 200, r.status, "%s", r.body)
	r = do(t, "GET", "http://"+proxy+"/api/v4/list?path=//tmp/q&max_size=5", map[string]string{"X-YT-Output-Format": "json"}, nil)
	require.Equal(t, 200, r.status, "%s", r.body)
	require.JSONEq(t, `{"value":["r"]}`, string(r.body))
}

func TestDocumentValuesByPath(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))
	doc := ypath.Path("//tmp/doc")
	_, err := yc.CreateNode(ctx, doc, yt.NodeDocument, &yt.CreateNodeOptions{
		Attributes: map[string]any{"value": map[string]any{"a": map[string]any{"b": int64(1)}}}})
	require.NoError(t, err)
	var b int64
	require.NoError(t, yc.GetNode(ctx, doc.Child("a").Child("b"), &b, nil))
	require.Equal(t, int64(1), b)
	require.NoError(t, yc.SetNode(ctx, doc.Child("a").Child("c"), int64(2), nil))
	ok, err := yc.NodeExists(ctx, doc.Child("a").Child("x"), nil)
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, yc.RemoveNode(ctx, doc.Child("a").Child("b"), nil))
	var all map[string]map[string]int64
	require.NoError(t, yc.GetNode(ctx, doc, &all, nil))
	require.Equal(t, map[string]map[string]int64{"a": {"c": 2}}, all)
	var typ string
	require.NoError(t, yc.GetNode(ctx, doc.Attr("type"), &typ, nil))
	require.Equal(t, "document", typ)
}
