package bench

import (
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRequestPath reads the table of a write request from each form X-YT-Parameters comes
// in, and refuses a request that names none.
func TestRequestPath(t *testing.T) {
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	split := base64.StdEncoding.EncodeToString([]byte(`{path="//home/t"; input_format=yson}`))
	for name, c := range map[string]struct {
		h    http.Header
		want string
	}{
		"yson":             {h("X-YT-Parameters", `{path="//home/t"; update=%true}`), "//home/t"},
		"json":             {h("X-YT-Parameters", `{"path": "//home/t"}`, "X-YT-Header-Format", `"json"`), "//home/t"},
		"push":             {h("X-YT-Parameters", `{producer_path="//home/p"; queue_path="//home/q"}`), "//home/q"},
		"split base64":     {h("X-YT-Parameters0", split[:10], "X-YT-Parameters1", split[10:]), "//home/t"},
		"yson text format": {h("X-YT-Parameters", `{"path"="//home/t"}`, "X-YT-Header-Format", `<format=text>yson`), "//home/t"},
	} {
		got, err := requestPath(c.h)
		require.NoError(t, err, name)
		assert.Equal(t, c.want, got, name)
	}
	_, err := requestPath(h("X-YT-Parameters", `{update=%true}`))
	assert.Error(t, err, "no path")
	_, err = requestPath(h("X-YT-Parameters", `{path=`))
	assert.Error(t, err, "malformed")
}

// TestTableBreakdown folds small tables into one row and leaves empty cells blank.
func TestTableBreakdown(t *testing.T) {
	got := tableBreakdown([]string{"a", "b"}, []map[TableCommand]float64{
		{{"insert_rows", "//r/pipeline/states"}: 0.5, {"insert_rows", "//r/pipeline/jobs"}: 0.001, {"insert_rows", "//r/pipeline/workers"}: 0.002},
		{{"push_queue_producer", "//r/output"}: 0.02, {"delete_rows", "//r/pipeline/states"}: 0.25},
	})
	assert.Equal(t, "| table | `a` insert | delete | push | `b` insert | delete | push |\n"+
		"|---|---|---|---|---|---|---|\n"+
		"| `states` | 0.500 | | | | 0.250 | |\n"+
		"| `output` | | | | | | 0.020 |\n"+
		"| other tables (coordination) | 0.003 | | | | | |\n", got)
}
