package spec

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/invalid/*.golden from the current output")

// TestBrokenSpecs parses every testdata/invalid/*.yson runner config and compares the
// reported problems, one "path: message" per line, with the .golden file next to it.
func TestBrokenSpecs(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yson")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yson")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			cfg, err := ParseConfig(data)
			require.Error(t, err)
			assert.Nil(t, cfg)
			var ve *ValidationError
			require.True(t, errors.As(err, &ve), "error is %T", err)
			for i := 1; i < len(ve.Problems); i++ {
				assert.LessOrEqual(t, ve.Problems[i-1].Path, ve.Problems[i].Path, "problems are sorted by path")
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(file, ".yson") + ".golden"
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			assert.Equal(t, string(want), got)
		})
	}
}

// TestValidSpecs parses every testdata/valid/*.yson runner config and the examples.
func TestValidSpecs(t *testing.T) {
	files, err := filepath.Glob("testdata/valid/*.yson")
	require.NoError(t, err)
	examples, err := filepath.Glob("../examples/*/pipeline.yson")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(examples), 2)
	for _, file := range append(files, examples...) {
		t.Run(file, func(t *testing.T) {
			cfg, err := ParseConfigFile(file)
			require.NoError(t, err)
			require.NotNil(t, cfg.Spec)
			require.NotNil(t, cfg.Dynamic)
		})
	}
}
