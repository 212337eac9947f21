package sequence

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	_ "github.com/ytflow/yt-flow/connectors/all"
	"github.com/ytflow/yt-flow/spec"
)

func TestSpecValidates(t *testing.T) {
	cfg, err := spec.ParseConfigFile("pipeline.yson")
	require.NoError(t, err)
	src := cfg.Spec.Computations["numbers"].Sources["seq"]
	require.Equal(t, &Params{Count: 500, Partitions: 2}, src.Params)
	require.True(t, src.Finite())
}

// TestDocShowsExample keeps docs/connectors.md's example equal to this package's code.
func TestDocShowsExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/connectors.md")
	require.NoError(t, err)
	code, err := os.ReadFile("sequence.go")
	require.NoError(t, err)
	require.Contains(t, string(doc), "```go\n"+string(code)+"```\n", "docs/connectors.md must show examples/sequence/sequence.go as it is")
}
