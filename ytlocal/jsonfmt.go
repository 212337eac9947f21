package ytlocal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"go.ytsaurus.tech/yt/go/yson"
)

// marshalJSONValue writes a generic YSON value in YTsaurus JSON format: attributes as
// {"$attributes":{...},"$value":...}, entity as null.
func marshalJSONValue(v any) ([]byte, error) {
	return json.Marshal(toJSONable(v))
}

func toJSONable(v any) any {
	switch x := v.(type) {
	case *yson.ValueWithAttrs:
		attrs := map[string]any{}
		for k, a := range x.Attrs {
			attrs[k] = toJSONable(a)
		}
		return map[string]any{"$attributes": attrs, "$value": toJSONable(x.Value)}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = toJSONable(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toJSONable(e)
		}
		return out
	case []byte:
		return string(x)
	case nil, string, int64, uint64, float64, bool:
		return x
	default:
		raw, err := yson.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		var g any
		if err := yson.Unmarshal(raw, &g); err != nil {
			return fmt.Sprint(x)
		}
		return toJSONable(g)
	}
}

// unmarshalJSONValue parses YTsaurus JSON into generic YSON values.
func unmarshalJSONValue(data []byte, v *any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var raw any
	if err := d.Decode(&raw); err != nil {
		return err
	}
	*v = fromJSON(raw)
	return nil
}

func fromJSON(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(string(x), 10, 64); err == nil {
			return u
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		if val, ok := x["$value"]; ok {
			attrs, _ := x["$attributes"].(map[string]any)
			conv := map[string]any{}
			for k, a := range attrs {
				conv[k] = fromJSON(a)
			}
			if len(conv) == 0 {
				return fromJSON(val)
			}
			return &yson.ValueWithAttrs{Attrs: conv, Value: fromJSON(val)}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = fromJSON(e)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = fromJSON(e)
		}
		return x
	}
	return v
}
