package all

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/connectors/registry"
)

// TestClassesComplete checks every registered class: Flow names, a guarantee, and for each
// class that claims to run, the constructors its role and kind need.
func TestClassesComplete(t *testing.T) {
	for _, role := range []registry.Role{registry.Source, registry.Sink} {
		classes := registry.Classes(role)
		require.NotEmpty(t, classes, role)
		for _, c := range classes {
			assert.NotEmpty(t, c.FlowNames, "%s %s", role, c.Name)
			assert.NotEmpty(t, c.Summary, "%s %s", role, c.Name)
			for _, n := range c.FlowNames {
				assert.True(t, strings.HasPrefix(n, registry.FlowNamespace), "%s %s: %q", role, c.Name, n)
			}
			if !c.Runs {
				continue
			}
			if role == registry.Source {
				ctors, ok := connector.SourceOf(c.Name)
				assert.True(t, ok && ctors.Source != nil, "source %s runs but has no reader", c.Name)
				continue
			}
			ctors, ok := connector.SinkOf(c.Name)
			require.True(t, ok, "sink %s runs but registered no constructors", c.Name)
			switch c.Kind {
			case registry.SyncSink:
				assert.NotNil(t, ctors.SyncSink, c.Name)
			case registry.AtLeastOnceSyncSink:
				assert.NotNil(t, ctors.AtLeastOnceSyncSink, c.Name)
			case registry.AsyncSink:
				assert.NotNil(t, ctors.AsyncSink, c.Name)
				if c.AtMostOnce {
					assert.NotNil(t, ctors.BestEffort, "%s accepts at_most_once_strategy but has no best-effort writer", c.Name)
				}
			}
		}
	}
}

// ConnectorTable renders the README's connector table from the registry.
func connectorTable() string {
	var b strings.Builder
	b.WriteString("| class (Flow name) | role | guarantee | runs |\n|---|---|---|---|\n")
	for _, role := range []registry.Role{registry.Source, registry.Sink} {
		for _, c := range registry.Classes(role) {
			kind := role.String()
			if role == registry.Sink {
				kind = c.Kind.String() + " sink"
			}
			runs := "not yet (validated only)"
			if c.Runs {
				runs = "yes"
			}
			names := make([]string, len(c.FlowNames))
			for i, n := range c.FlowNames {
				names[i] = "`" + n + "`"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", strings.Join(names, ", "), kind, c.Guarantee, runs)
		}
	}
	return b.String()
}

// TestReadmeConnectorTable keeps the README's connector table equal to the registry.
func TestReadmeConnectorTable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	want := connectorTable()
	if !strings.Contains(string(readme), want) {
		t.Errorf("README.md's connector table differs from the registry; it should read:\n\n%s", want)
	}
}
