package sequence

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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

// TestSequenceConnectorRuns builds a yt-flow binary with the example connector linked in and
// runs examples/sequence/pipeline.yson on the embedded server: a connector class added
// without a change to the runtime runs, and every row arrives exactly once.
func TestSequenceConnectorRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "yt-flow-sequence")
	build := exec.Command("go", "build", "-o", bin, "./cmd/yt-flow-sequence")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--spec", "pipeline.yson", "--data-dir", filepath.Join(dir, "data"))
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // by pid, also when the test fails
	require.NoError(t, cmd.Wait(), "yt-flow run: %s", output.String())

	text := output.String()
	assert.Contains(t, text, "pipeline //home/sequence/pipeline completed")
	assert.Regexp(t, `(?m)^\s+1000\s*$`, text, "two partitions of 500 rows, each once (the sorted table is keyed by partition and value):\n%s", text)
	assert.Regexp(t, `(?m)^\s+[01]\s+499\s+249001\s*$`, text, "the largest value of each partition:\n%s", text)
}
