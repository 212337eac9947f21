package ytlocal

import (
	"fmt"
	"maps"
	"path"
	"strings"

	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yterrors"
)

// opSpec is the part of a vanilla operation spec that ytlocal acts on. Other keys (pool,
// resources, layers …) are kept in the spec get_operation shows and otherwise ignored.
type opSpec struct {
	tasks map[string]*taskSpec
	// maxFailedJobs is max_failed_job_count (default 10): the operation fails once that
	// many of its jobs have failed.
	maxFailedJobs int
	// failOnJobRestart is fail_on_job_restart: the first failed or aborted job fails the
	// operation.
	failOnJobRestart bool
	alias            string
	// secureVault are the secure_vault entries, given to jobs as YT_SECURE_VAULT_<key>;
	// they are never shown.
	secureVault map[string]string
	// public is the spec as given, without secure_vault; raw is the spec as given (logged
	// for a restart: ops_durable.go).
	public map[string]any
	raw    map[string]any
}

// taskSpec is one entry of spec.tasks.
type taskSpec struct {
	name      string
	command   string
	jobCount  int
	portCount int
	env       map[string]string
	files     []opFile
}

// opFile is one entry of a task's file_paths: the Cypress file and its name in the sandbox.
type opFile struct {
	path       string
	name       string
	executable bool
}

// brief is the brief_spec of an operation.
func (sp opSpec) brief() map[string]any {
	b := map[string]any{}
	for _, k := range []string{"title", "pool", "alias"} {
		if v, ok := sp.public[k]; ok {
			b[k] = v
		}
	}
	return b
}

// specError is the error of a malformed operation spec; path is the YSON path of the
// offending key (e.g. tasks/worker/job_count).
func specError(path, format string, args ...any) *yterrors.Error {
	return withAttrs(ytErr(yterrors.CodeGeneric, "Error parsing operation spec at %q: %s", path, fmt.Sprintf(format, args...)), "path", path)
}

// parseOpSpec checks a vanilla operation spec. It is a pure function of the spec value
// (FuzzParseOpSpec).
func parseOpSpec(raw any) (opSpec, error) {
	m, ok := yson.ValueOf(raw).(map[string]any)
	if !ok {
		return opSpec{}, specError("", "the spec is %s, not a map", ysonTypeName(yson.ValueOf(raw)))
	}
	sp := opSpec{maxFailedJobs: 10, tasks: map[string]*taskSpec{}, public: maps.Clone(m), raw: m}
	delete(sp.public, "secure_vault")
	if v, ok := m["max_failed_job_count"]; ok {
		n, ok := specInt(v)
		if !ok || n < 0 {
			return opSpec{}, specError("max_failed_job_count", "want a non-negative integer, got %v", v)
		}
		sp.maxFailedJobs = int(n)
	}
	if v, ok := m["fail_on_job_restart"]; ok {
		b, ok := yson.ValueOf(v).(bool)
		if !ok {
			return opSpec{}, specError("fail_on_job_restart", "want a boolean, got %s", ysonTypeName(yson.ValueOf(v)))
		}
		sp.failOnJobRestart = b
	}
	if v, ok := m["alias"]; ok {
		s, ok := yson.ValueOf(v).(string)
		if !ok || !strings.HasPrefix(s, "*") {
			return opSpec{}, specError("alias", "want a string starting with \"*\", got %v", v)
		}
		sp.alias = s
	}
	if v, ok := m["secure_vault"]; ok {
		vault, ok := yson.ValueOf(v).(map[string]any)
		if !ok {
			return opSpec{}, specError("secure_vault", "want a map")
		}
		sp.secureVault = map[string]string{}
		for k, x := range vault {
			sp.secureVault[k] = envValue(x)
		}
	}
	tasks, ok := yson.ValueOf(m["tasks"]).(map[string]any)
	if !ok || len(tasks) == 0 {
		return opSpec{}, specError("tasks", "a vanilla operation needs a non-empty map of tasks")
	}
	for name, v := range tasks {
		t, err := parseTaskSpec("tasks/"+name, v)
		if err != nil {
			return opSpec{}, err
		}
		t.name = name
		sp.tasks[name] = t
	}
	return sp, nil
}

func parseTaskSpec(at string, raw any) (*taskSpec, error) {
	m, ok := yson.ValueOf(raw).(map[string]any)
	if !ok {
		return nil, specError(at, "a task is %s, not a map", ysonTypeName(yson.ValueOf(raw)))
	}
	t := &taskSpec{env: map[string]string{}}
	t.command, ok = yson.ValueOf(m["command"]).(string)
	if !ok || strings.TrimSpace(t.command) == "" {
		return nil, specError(at+"/command", "a task needs a command (a non-empty string)")
	}
	n, ok := specInt(m["job_count"])
	if !ok || n < 1 || n > 1000 {
		return nil, specError(at+"/job_count", "want an integer from 1 to 1000, got %v", m["job_count"])
	}
	t.jobCount = int(n)
	if v, ok := m["port_count"]; ok {
		n, ok := specInt(v)
		if !ok || n < 0 || n > 50 {
			return nil, specError(at+"/port_count", "want an integer from 0 to 50, got %v", v)
		}
		t.portCount = int(n)
	}
	if v, ok := m["environment"]; ok {
		env, ok := yson.ValueOf(v).(map[string]any)
		if !ok {
			return nil, specError(at+"/environment", "want a map of strings")
		}
		for k, x := range env {
			s, ok := yson.ValueOf(x).(string)
			if !ok || k == "" || strings.ContainsAny(k, "=\x00") {
				return nil, specError(at+"/environment/"+k, "want a string value under a variable name")
			}
			t.env[k] = s
		}
	}
	if v, ok := m["file_paths"]; ok {
		list, ok := yson.ValueOf(v).([]any)
		if !ok {
			return nil, specError(at+"/file_paths", "want a list of paths")
		}
		seen := map[string]bool{}
		for i, x := range list {
			f, err := parseOpFile(x)
			if err != nil {
				return nil, specError(fmt.Sprintf("%s/file_paths/%d", at, i), "%v", err)
			}
			if seen[f.name] {
				return nil, specError(fmt.Sprintf("%s/file_paths/%d", at, i), "file name %q is used twice", f.name)
			}
			seen[f.name] = true
			t.files = append(t.files, f)
		}
	}
	return t, nil
}

// parseOpFile reads one file_paths entry: a path string, possibly with file_name and
// executable attributes (as attributes of the value or YSON attributes in the string).
func parseOpFile(x any) (opFile, error) {
	var text string
	attrs := yson.AttrsOf(x)
	switch v := yson.ValueOf(x).(type) {
	case string:
		text = v
	default:
		return opFile{}, fmt.Errorf("want a path string, got %s", ysonTypeName(v))
	}
	rich, err := ypath.Parse(text)
	if err != nil {
		return opFile{}, fmt.Errorf("bad path %q: %v", text, err)
	}
	f := opFile{path: string(rich.Path)}
	if rich.FileName != "" {
		f.name = rich.FileName
	}
	if s, ok := attrs["file_name"].(string); ok {
		f.name = s
	}
	if b, ok := attrs["executable"].(bool); ok {
		f.executable = b
	}
	if f.name == "" {
		f.name = path.Base(f.path)
	}
	if f.name == "" || f.name == "." || f.name == ".." || strings.ContainsAny(f.name, "/\x00") {
		return opFile{}, fmt.Errorf("bad file name %q", f.name)
	}
	return f, nil
}

// specInt reads an integer spec value.
func specInt(v any) (int64, bool) {
	switch x := yson.ValueOf(v).(type) {
	case int64:
		return x, true
	case uint64:
		if x <= 1<<62 {
			return int64(x), true
		}
	}
	return 0, false
}

// envValue renders a secure_vault value as an environment value: strings as they are,
// anything else as text YSON (as YTsaurus does).
func envValue(v any) string {
	if s, ok := yson.ValueOf(v).(string); ok {
		return s
	}
	b, err := yson.MarshalFormat(v, yson.FormatText)
	if err != nil {
		return ""
	}
	return string(b)
}
