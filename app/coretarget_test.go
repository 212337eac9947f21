package app

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/internal/corever"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestVersionPrintsFlowCoreVersion: `yt-flow version` prints this binary's flow core version
// (a test binary has no VCS metadata: its SHA-256).
func TestVersionPrintsFlowCoreVersion(t *testing.T) {
	var out, errb bytes.Buffer
	env := &environ{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	if code := runMain(context.Background(), env, []string{"version"}); code != 0 {
		t.Fatalf("version: exit %d: %s", code, errb.String())
	}
	want, err := corever.Self()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\nflow core version "+want+"\n") || len(want) != 64 {
		t.Errorf("version printed %q, want a line 'flow core version %s'", out.String(), want)
	}
}

// TestFlowCoreTargetCommands: set-flow-core-target stores the target (Flow's JSON argument or
// the flags) and counts its version up, get-flow-core-target prints both; a working pipeline
// refuses a change, a paused one only with allow_update_on_pause; "" resets the target; bad
// arguments are usage errors naming what is wrong. status shows the target and a leader of
// another version.
func TestFlowCoreTargetCommands(t *testing.T) {
	f := newFlowTest(t)
	get := func() map[string]any {
		t.Helper()
		code, out, errs := f.cmd("", "get-flow-core-target", lifecyclePath)
		if code != 0 {
			t.Fatalf("get-flow-core-target: %d %s", code, errs)
		}
		return ysonOf(t, out).(map[string]any)
	}
	if g := get(); g["flow_core_target"] != "" || g["version"] != int64(0) {
		t.Errorf("a new pipeline's target: %v, want empty at version 0", g)
	}
	code, out, errs := f.cmd("", "set-flow-core-target", lifecyclePath, `{"flow_core_target":"abc123"}`)
	if code != 0 || ysonOf(t, out).(map[string]any)["version"] != int64(1) {
		t.Fatalf("set-flow-core-target (unknown state): %d %q %q", code, out, errs)
	}
	if g := get(); g["flow_core_target"] != "abc123" || g["version"] != int64(1) {
		t.Errorf("after set: %v, want abc123 at version 1", g)
	}

	f.setState(ytstore.StateWorking)
	code, out, errs = f.cmd("", "set-flow-core-target", "--flow-core-target", "def", lifecyclePath)
	failsCleanly(t, "set while working", code, out, errs, 1, "can change only while the pipeline is stopped")
	f.setState(ytstore.StatePaused)
	code, out, errs = f.cmd("", "set-flow-core-target", "--flow-core-target", "def", lifecyclePath)
	failsCleanly(t, "set while paused", code, out, errs, 1, "pass allow_update_on_pause")
	code, _, errs = f.cmd("", "set-flow-core-target", lifecyclePath, `{flow_core_target="def"; allow_update_on_pause=%true}`)
	if code != 0 || f.attrs().FlowCoreTarget != "def" || f.attrs().FlowCoreTargetVersion != 2 {
		t.Fatalf("set while paused with allow_update_on_pause: %d %s; attrs %+v", code, errs, f.attrs())
	}

	code, out, errs = f.cmd("", "set-flow-core-target", lifecyclePath, `{"flow_core_target":"x","force":true}`)
	failsCleanly(t, "unknown key", code, out, errs, 2, `unknown key "force"`)
	code, out, errs = f.cmd("", "set-flow-core-target", lifecyclePath)
	failsCleanly(t, "no target", code, out, errs, 2, "no target")
	code, out, errs = f.cmd("", "set-flow-core-target", lifecyclePath, `{"flow_core_target":1}`)
	failsCleanly(t, "target not a string", code, out, errs, 2, "flow_core_target is")

	// status names the target and a leader of another version.
	if err := f.st.SetAttribute(context.Background(), lifecyclePath, "leader_controller_address", "host/pid:1"); err != nil {
		t.Fatal(err)
	}
	if err := f.st.SetAttribute(context.Background(), lifecyclePath, "leader_flow_core_version", "old"); err != nil {
		t.Fatal(err)
	}
	code, out, errs = f.cmd("", "status", "--path", lifecyclePath)
	if code != 0 || !strings.Contains(out, "flow core  target def (version 2)") ||
		!strings.Contains(out, "binary mismatch: the leading controller runs version old, not def") {
		t.Errorf("status: %d %s\n%s", code, errs, out)
	}

	f.setState(ytstore.StateStopped)
	if code, _, errs = f.cmd("", "set-flow-core-target", "--flow-core-target", "", lifecyclePath); code != 0 {
		t.Fatalf("reset: %d %s", code, errs)
	}
	if g := get(); g["flow_core_target"] != "" || g["version"] != int64(3) {
		t.Errorf("after reset: %v, want empty at version 3", g)
	}
	if _, out, _ = f.cmd("", "status", "--path", lifecyclePath); strings.Contains(out, "flow core") {
		t.Errorf("status shows a reset target:\n%s", out)
	}
}

// FuzzCoreTargetDoc feeds arbitrary text to the parser of set-flow-core-target's argument:
// it returns a document or an error, never panics, and accepts only maps whose keys are
// flow_core_target (a string) and allow_update_on_pause (a boolean).
func FuzzCoreTargetDoc(f *testing.F) {
	for _, s := range []string{
		`{"flow_core_target":"abc","allow_update_on_pause":true}`, `{flow_core_target="";allow_update_on_pause=%false}`,
		`{"flow_core_target":1}`, `{"x":1}`, `{}`, `[]`, `"abc"`, `{flow_core_target=<a=b>"x"}`, `{`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseCoreTargetDoc(s)
		if err != nil {
			return
		}
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			if sdkyson.Unmarshal([]byte(s), &v) != nil {
				t.Fatalf("accepted %q, which does not decode", s)
			}
		}
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("accepted %q, which is no map", s)
		}
		for k := range m {
			if k != "flow_core_target" && k != "allow_update_on_pause" {
				t.Fatalf("accepted unknown key %q in %q", k, s)
			}
		}
		if _, has := m["flow_core_target"]; has != (d.target != nil) {
			t.Fatalf("%q: target %v, key present %v", s, d.target, has)
		}
	})
}
