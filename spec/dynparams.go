package spec

import (
	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// DynamicParams parses the dynamic parameters of a source stream or sink of class c, as
// written in the dynamic spec (params; path is their YSON path, for errors), with the class's
// dynamic parser; static is what its static parser returned. A class without a dynamic
// parser gets (nil, nil), and so does a nil class. at_most_once_strategy is not the class's:
// it is left to the runtime.
func DynamicParams(c *registry.Class, static any, params map[string]any, path string) (any, error) {
	if c == nil || c.ParseDynamic == nil {
		return nil, nil
	}
	w := yson.Walker{Suggest: true}
	out := dynamicParams(&w, c, static, params, path)
	if !w.OK() {
		return nil, &ValidationError{Problems: w.Problems()}
	}
	return out, nil
}

func dynamicParams(w *yson.Walker, c *registry.Class, static any, params map[string]any, path string) any {
	if params == nil {
		params = map[string]any{}
	}
	data, err := sdkyson.Marshal(params)
	if err != nil {
		w.Errorf(path, "cannot encode: %v", err)
		return nil
	}
	n, err := yson.Decode(data)
	if err != nil {
		w.Errorf(path, "cannot decode: %v", err)
		return nil
	}
	f := w.Fields(n, path)
	f.Skip("at_most_once_strategy")
	out := c.ParseDynamic(f, static)
	f.Close()
	return out
}
