package ytlocal

import (
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yterrors"
)

// cmdExecuteBatch runs sub-requests in order, each with its own result or error.
// Sub-requests run inside the same critical section, one after another.
func cmdExecuteBatch(c *call) (any, error) {
	v, ok := c.param("requests")
	if !ok {
		return nil, ytErr(yterrors.CodeGeneric, "Missing required parameter \"requests\" of command \"execute_batch\"")
	}
	reqs, ok := v.([]any)
	if !ok {
		return nil, badParam("requests", "list", v)
	}
	results := make([]any, 0, len(reqs))
	for i, r := range reqs {
		m, ok := yson.ValueOf(r).(map[string]any)
		if !ok {
			return nil, ytErr(yterrors.CodeGeneric, "Error parsing parameter \"requests/%d\": expected a map, got %s", i, ysonTypeName(r))
		}
		name, _ := m["command"].(string)
		params, _ := yson.ValueOf(m["parameters"]).(map[string]any)
		if params == nil {
			params = map[string]any{}
		}
		res, err := c.s.executeSub(c, name, params, m["input"])
		if err != nil {
			e := asYTError(err)
			results = append(results, map[string]any{"error": e})
			continue
		}
		if res == nil {
			res = map[string]any{}
		}
		if _, rows := res.(*rowsResult); rows {
			e := ytErr(yterrors.CodeGeneric, "Command %q cannot run inside execute_batch", name)
			results = append(results, map[string]any{"error": e})
			continue
		}
		results = append(results, map[string]any{"output": res})
	}
	return map[string]any{"results": results}, nil
}

// executeSub runs one batch sub-request with the state lock already held.
func (s *Server) executeSub(parent *call, name string, params map[string]any, input any) (any, error) {
	cmd, ok := commands[name]
	if !ok || name == "execute_batch" {
		return nil, ytErr(yterrors.CodeGeneric, "Command %q is not supported in execute_batch", name)
	}
	sub := &call{s: s, name: name, params: params, now: parent.now, mutates: cmd.opts.Mutating, inFmt: "yson", user: parent.user}
	if b, ok := input.(string); ok {
		sub.input = []byte(b)
	} else if input != nil {
		raw, err := yson.MarshalFormat(input, yson.FormatBinary)
		if err != nil {
			return nil, err
		}
		sub.input = raw
	}
	if cmd.opts.Mutating {
		if id, ok, err := sub.guidp("mutation_id"); err == nil && ok {
			if cached, ok := s.mutations.get(id); ok {
				return cached.result, cached.err
			}
			res, err := s.executeLocked(cmd, sub)
			s.mutations.put(id, res, err)
			return res, err
		}
	}
	return s.executeLocked(cmd, sub)
}

func init() {
	registerCommand("execute_batch", commandOpts{Mutating: true, NoTxCheck: true}, cmdExecuteBatch)
}
