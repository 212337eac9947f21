package ytlocal

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.ytsaurus.tech/library/go/blockcodecs"
	_ "go.ytsaurus.tech/library/go/blockcodecs/all" // register every block codec
	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yterrors"

	"github.com/ytflow/yt-flow/internal/ybin"
)

// response is a fully materialised reply; nothing is written before it exists, so an
// error can always be reported in headers.
type response struct {
	status  int
	headers map[string]string
	body    []byte
}

// ServeHTTP implements the YTsaurus HTTP proxy protocol.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-YT-Proxy", s.Addr())
	w.Header().Set("Cache-Control", "no-store")
	p := r.URL.Path
	switch {
	case p == "/hosts" || strings.HasPrefix(p, "/hosts/"):
		writeJSON(w, []string{s.Addr()})
	case p == "/api" || p == "/api/":
		writeJSON(w, []string{"v4"})
	case p == "/api/v4" || p == "/api/v4/":
		writeJSON(w, commandDescriptors())
	case p == "/auth/whoami":
		user, aerr := s.authenticate(r)
		if aerr != nil {
			writeError(w, http.StatusUnauthorized, aerr)
			return
		}
		writeJSON(w, map[string]string{"login": user, "realm": "ytlocal", "csrf_token": ""})
	case p == "/ping":
		w.WriteHeader(http.StatusOK)
	case strings.HasPrefix(p, "/api/v4/"):
		user, aerr := s.authenticate(r)
		if aerr != nil {
			writeError(w, http.StatusUnauthorized, aerr)
			return
		}
		rsp := s.serveCommand(r, strings.TrimPrefix(p, "/api/v4/"), user)
		for k, v := range rsp.headers {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(rsp.body)))
		w.WriteHeader(rsp.status)
		_, _ = w.Write(rsp.body)
	default:
		writeError(w, http.StatusNotFound, ytErr(yterrors.CodeGeneric, "Unknown HTTP path %q", p))
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	body, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func writeError(w http.ResponseWriter, status int, e *yterrors.Error) {
	rsp := errorResponse(status, e)
	for k, v := range rsp.headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(rsp.status)
	_, _ = w.Write(rsp.body)
}

func errorResponse(status int, e *yterrors.Error) response {
	body, err := e.MarshalJSON()
	if err != nil {
		body = []byte(fmt.Sprintf(`{"code":1,"message":%q}`, e.Message))
	}
	return response{
		status: status,
		headers: map[string]string{
			"X-YT-Error":            string(body),
			"X-YT-Response-Code":    strconv.Itoa(int(e.Code)),
			"X-YT-Response-Message": sanitizeHeader(e.Message),
			"Content-Type":          "application/json",
		},
		body: body,
	}
}

func sanitizeHeader(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r >= 0x7f {
			return '?'
		}
		return r
	}, s)
}

func commandDescriptors() []map[string]any {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]map[string]any, 0, len(names))
	for _, n := range names {
		c := commands[n]
		out = append(out, map[string]any{"name": n, "is_volatile": c.opts.Mutating, "is_heavy": c.opts.Heavy,
			"input_type": "structured", "output_type": "structured"})
	}
	return out
}

// asYTError converts any error into a YTsaurus error.
func asYTError(err error) *yterrors.Error {
	var e *yterrors.Error
	if errors.As(err, &e) {
		return e
	}
	return &yterrors.Error{Code: yterrors.CodeGeneric, Message: err.Error()}
}

// decodedRequest is the protocol-level content of one command request.
type decodedRequest struct {
	params map[string]any
	input  []byte
	inFmt  string
}

// decodeRequest extracts parameters and the decompressed body. It is a pure function of
// the request bytes (FuzzDecodeRequest).
func decodeRequest(method string, header http.Header, body []byte) (*decodedRequest, error) {
	req := &decodedRequest{inFmt: formatName(header.Get("X-YT-Input-Format"))}
	ph := header.Get("X-YT-Parameters")
	if ph == "" && header.Get("X-YT-Parameters0") != "" {
		var b strings.Builder
		for i := 0; ; i++ {
			part := header.Get(fmt.Sprintf("X-YT-Parameters%d", i))
			if part == "" {
				part = header.Get(fmt.Sprintf("X-YT-Parameters-%d", i))
			}
			if part == "" {
				break
			}
			b.WriteString(part)
		}
		dec, err := base64.StdEncoding.DecodeString(b.String())
		if err != nil {
			return nil, ytErr(yterrors.CodeGeneric, "Error decoding split X-YT-Parameters header: %v", err)
		}
		ph = string(dec)
	}
	if ph != "" {
		if err := mergeParams(&req.params, []byte(ph), formatName(header.Get("X-YT-Header-Format"))); err != nil {
			return nil, ytErr(yterrors.CodeGeneric, "Error parsing X-YT-Parameters header: %v", err)
		}
	}
	if req.params == nil {
		req.params = map[string]any{}
	}
	switch method {
	case http.MethodPost:
		if len(bytes.TrimSpace(body)) > 0 {
			if err := mergeParams(&req.params, body, req.inFmt); err != nil {
				return nil, ytErr(yterrors.CodeGeneric, "Error parsing request body as parameters: %v", err)
			}
		}
	case http.MethodPut:
		req.input = body
	}
	return req, nil
}

// mergeParams adds the parameters of the map data encodes to *dst; with *dst nil, the decoded
// map becomes *dst itself.
func mergeParams(dst *map[string]any, data []byte, format string) error {
	var v any
	if err := unmarshalInput(data, format, &v); err != nil {
		return err
	}
	m, ok := yson.ValueOf(v).(map[string]any)
	if !ok {
		return fmt.Errorf("parameters must be a map, got %s", ysonTypeName(yson.ValueOf(v)))
	}
	if *dst == nil {
		*dst = m
		return nil
	}
	for k, val := range m {
		(*dst)[k] = val
	}
	return nil
}

// bodyBuffers recycles the request bodies of row-input commands (rowInputCommands): those are
// the large, frequent ones, and their rows are parsed into fresh values (preparse) that keep
// nothing of the body, so the buffer is free again once the command returned.
var bodyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBody bounds the buffers kept in bodyBuffers: a rare huge body is left to the GC.
const maxPooledBody = 8 << 20

// readBody reads and decompresses the request body into buf.
func readBody(r *http.Request, limit int64, buf *bytes.Buffer) ([]byte, *yterrors.Error, int) {
	var src io.Reader = io.LimitReader(r.Body, limit+1)
	enc := strings.TrimSpace(r.Header.Get("Content-Encoding"))
	switch {
	case enc == "" || enc == "identity":
	case enc == "gzip" || enc == "deflate" && false:
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, ytErr(yterrors.CodeGeneric, "Error decoding gzip request body: %v", err), http.StatusBadRequest
		}
		src = io.LimitReader(zr, limit+1)
	case strings.HasPrefix(enc, "z-"):
		codec := fastCodec(enc)
		if codec == nil {
			return nil, ytErr(yterrors.CodeGeneric, "Unsupported Content-Encoding %q", enc), http.StatusUnsupportedMediaType
		}
		d := blockcodecs.NewDecoderCodec(src, codec)
		d.SetCheckUnderlyingEOF(true)
		src = io.LimitReader(d, limit+1)
	default:
		return nil, ytErr(yterrors.CodeGeneric, "Unsupported Content-Encoding %q", enc), http.StatusUnsupportedMediaType
	}
	// Sized from Content-Length when the body is not encoded (the common case toward a
	// loopback proxy), instead of growing by doubling.
	if (enc == "" || enc == "identity") && r.ContentLength > 0 && r.ContentLength <= limit {
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(src); err != nil {
		return nil, ytErr(yterrors.CodeGeneric, "Error reading request body (Content-Encoding %q): %v", enc, err), http.StatusBadRequest
	}
	body := buf.Bytes()
	if int64(len(body)) > limit {
		return nil, ytErr(yterrors.CodeGeneric, "Request body exceeds %d bytes", limit), http.StatusRequestEntityTooLarge
	}
	return body, nil, 0
}

func (s *Server) serveCommand(r *http.Request, name, user string) response {
	cmd, ok := commands[name]
	if !ok {
		return errorResponse(http.StatusNotFound, ytErr(yterrors.CodeGeneric, "Command %q is not registered", name))
	}
	buf := new(bytes.Buffer)
	if rowInputCommands[name] {
		buf = bodyBuffers.Get().(*bytes.Buffer)
		defer func() {
			if buf.Cap() <= maxPooledBody {
				buf.Reset()
				bodyBuffers.Put(buf)
			}
		}()
	}
	body, yerr, status := readBody(r, s.cfg.MaxRequestBytes, buf)
	if yerr != nil {
		return errorResponse(status, yerr)
	}
	req, err := decodeRequest(r.Method, r.Header, body)
	if err != nil {
		return errorResponse(http.StatusBadRequest, asYTError(err))
	}
	// Query-string parameters come first; the header and body override them.
	for k, vs := range r.URL.Query() {
		if _, ok := req.params[k]; !ok && len(vs) > 0 {
			req.params[k] = vs[len(vs)-1]
		}
	}
	accept := acceptedEncoding(r.Header.Get("Accept-Encoding"))
	if accept != "" && strings.HasPrefix(accept, "z-") && blockcodecs.FindCodecByName(strings.TrimPrefix(accept, "z-")) == nil {
		return errorResponse(http.StatusUnsupportedMediaType, ytErr(yterrors.CodeGeneric, "Unsupported Accept-Encoding %q", accept))
	}
	outFmt := formatName(r.Header.Get("X-YT-Output-Format"))
	c := &call{s: s, name: name, params: req.params, input: req.input, inFmt: req.inFmt, mutates: cmd.opts.Mutating, user: user}
	started := time.Now()
	c.preparse()
	defer c.releaseRows()
	result, err := s.execute(cmd, c)
	// Invariant: no response leaves before every record written up to the end of its
	// handler is fsynced (TestLocalSurvivesKill9, TestRestartKeepsCommittedState).
	if derr := s.waitDurable(c.logSeq); derr != nil {
		// The outcome is applied in memory but its durability is unknown.
		result, err = nil, ytErr(yterrors.CodeGeneric, "Command %q: write-ahead log failed: %v", name, derr)
	}
	if err != nil {
		e := asYTError(err)
		s.log.Debug("command failed", log.String("command", name), log.Int("code", int(e.Code)),
			log.String("message", e.Message), log.Duration("duration", time.Since(started)))
		return errorResponse(http.StatusBadRequest, e)
	}
	s.log.Debug("command done", log.String("command", name), log.Duration("duration", time.Since(started)))
	rsp, err := encodeResult(result, outFmt, accept)
	if err != nil {
		return errorResponse(http.StatusInternalServerError, ytErr(yterrors.CodeGeneric, "Error encoding response of %q: %v", name, err))
	}
	return rsp
}

// execute runs a command under the state lock, with mutation-id deduplication and the
// generic transaction and prerequisite checks.
func (s *Server) execute(cmd *command, c *call) (result any, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var before uint64
	if s.wal != nil {
		before = s.wal.written()
	}
	defer func() {
		if s.wal == nil {
			return
		}
		// Invariant: only an answer that carries no state a crash could take back skips
		// the wait for earlier records (TestVolatileAnswersSkipFsyncWait); one whose
		// handler wrote a record still waits for it.
		if written := s.wal.written(); !c.volatile || written != before {
			c.logSeq = written
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("ytlocal: command panicked", log.String("command", cmd.name), log.Any("panic", r), log.String("stack", string(debug.Stack())))
			result, err = nil, withAttrs(ytErr(yterrors.CodeGeneric, "Internal error in command %q: %v", cmd.name, r), "panic", true)
		}
	}()
	if s.closed {
		return nil, ytErr(yterrors.CodeGeneric, "Server is shutting down")
	}
	c.now = s.now()
	var mutationID guid.GUID
	if cmd.opts.Mutating {
		if id, ok, err := c.guidp("mutation_id"); err != nil {
			return nil, err
		} else if ok {
			mutationID = id
			if cached, ok := s.mutations.get(id); ok {
				return cached.result, cached.err
			}
		}
	}
	result, err = s.executeLocked(cmd, c)
	if !zeroGUID(mutationID) {
		s.mutations.put(mutationID, result, err)
		// Invariant: a retry of an acknowledged mutation gets its original answer, also
		// after a restart (TestMutationRetryAnsweredFromCache, TestMutationRetryAfterRestart).
		// A commit is logged even when it changed nothing durable: its retry must not
		// be answered "no such transaction".
		if err == nil && s.wal != nil && (s.wal.written() > before || cmd.name == "commit_transaction") {
			s.logMutation(mutationID, result)
		}
	}
	s.maybeSnapshot()
	return result, err
}

func (s *Server) executeLocked(cmd *command, c *call) (any, error) {
	prereqs, err := c.guids("prerequisite_transaction_ids")
	if err != nil {
		return nil, err
	}
	// Invariant: a command whose prerequisite transaction is not alive has no effect and
	// fails with code 1000; the check and the command's effects share one critical
	// section (TestDeadPrerequisiteFailsWithCode1000).
	if err := s.checkPrerequisites(prereqs); err != nil {
		return nil, err
	}
	if !cmd.opts.NoTxCheck {
		if id, ok, err := c.guidp("transaction_id"); err != nil {
			return nil, err
		} else if ok && !IsTabletTxID(id) {
			if _, err := s.liveTx(id); err != nil {
				return nil, err
			}
		}
	}
	if err := s.authorize(c); err != nil {
		return nil, err
	}
	return cmd.h(c)
}

// acceptedEncoding picks the response encoding: the first z-* entry, else gzip, else none.
func acceptedEncoding(h string) string {
	var gz bool
	for _, part := range strings.Split(h, ",") {
		e := strings.TrimSpace(strings.SplitN(part, ";", 2)[0])
		if strings.HasPrefix(e, "z-") {
			return e
		}
		if e == "gzip" {
			gz = true
		}
	}
	if gz {
		return "gzip"
	}
	return ""
}

func encodeResult(result any, outFmt, accept string) (response, error) {
	rsp := response{status: http.StatusOK, headers: map[string]string{}}
	var body []byte
	var err error
	switch v := result.(type) {
	case *rowsResult:
		body, err = encodeRows(v.Rows, outFmt)
		if v.Params != nil {
			p, perr := yson.MarshalFormat(v.Params, yson.FormatText)
			if perr != nil {
				return rsp, perr
			}
			rsp.headers["X-YT-Response-Parameters"] = string(p)
		}
	case rawResult:
		body = v
	case nil:
		body, err = encodeValue(map[string]any{}, outFmt)
	default:
		body, err = encodeValue(v, outFmt)
	}
	if err != nil {
		return rsp, err
	}
	if strings.HasPrefix(outFmt, "json") {
		rsp.headers["Content-Type"] = "application/json"
	} else {
		rsp.headers["Content-Type"] = "application/x-yt-yson-binary"
	}
	switch {
	case strings.HasPrefix(accept, "z-"):
		codec := fastCodec(accept)
		var buf bytes.Buffer
		enc := blockcodecs.NewEncoder(&buf, codec)
		if _, err := enc.Write(body); err != nil {
			return rsp, err
		}
		if err := enc.Close(); err != nil {
			return rsp, err
		}
		body = buf.Bytes()
		rsp.headers["Content-Encoding"] = accept
	case accept == "gzip" && len(body) >= 4096:
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(body)
		if err := zw.Close(); err != nil {
			return rsp, err
		}
		body = buf.Bytes()
		rsp.headers["Content-Encoding"] = "gzip"
	default:
		rsp.headers["Content-Encoding"] = "identity"
	}
	rsp.body = body
	return rsp, nil
}

func encodeValue(v any, outFmt string) ([]byte, error) {
	switch outFmt {
	case "json":
		return marshalJSONValue(v)
	case "yson-text":
		return yson.MarshalFormat(v, yson.FormatText)
	default:
		// Most answers are a scalar or a map of scalars (a timestamp, a transaction id, {}):
		// those without the SDK's writer, which allocates a 4 KiB buffer per call
		// (byte-identical: TestEncodeValueMatchesSDK).
		if b, ok := ybin.AppendScalar(nil, v); ok {
			return b, nil
		}
		if m, ok := v.(map[string]any); ok {
			if b, ok := ybin.AppendMap(nil, m); ok {
				return b, nil
			}
		}
		return yson.MarshalFormat(v, yson.FormatBinary)
	}
}

// appendBinaryRows appends rows as the binary YSON list fragment the SDK's writer produces,
// without its reflection, when every row is a rowValues of scalars or nil (lookups, pulls,
// selects); ok is false for anything else (TestBinaryRowsMatchWriter).
func appendBinaryRows(b []byte, rows []any) ([]byte, bool) {
	for _, row := range rows {
		switch r := row.(type) {
		case nil:
			b = append(b, '#')
		case rowValues:
			var ok bool
			if b, ok = ybin.AppendPairs(b, r.cols, r.vals); !ok {
				return nil, false
			}
		default:
			return nil, false
		}
		b = append(b, ';')
	}
	return b, true
}

func encodeRows(rows []any, outFmt string) ([]byte, error) {
	var buf bytes.Buffer
	if outFmt == "json" {
		for _, row := range rows {
			b, err := marshalJSONValue(row)
			if err != nil {
				return nil, err
			}
			buf.Write(b)
			buf.WriteByte('\n')
		}
		return buf.Bytes(), nil
	}
	format := yson.FormatBinary
	if outFmt == "yson-text" {
		format = yson.FormatText
	} else if b, ok := appendBinaryRows(nil, rows); ok {
		return b, nil
	}
	w := yson.NewWriterConfig(&buf, yson.WriterConfig{Format: format, Kind: yson.StreamListFragment})
	for _, row := range rows {
		w.Any(row)
	}
	if err := w.Finish(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
