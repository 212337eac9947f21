package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// readmeFiles returns the fenced blocks of the README section title that carry a file name
// in their info string ("```go file=main.go"), by file name.
func readmeFiles(t *testing.T, readme, title string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## "+title+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", readme, title)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	files := map[string]string{}
	fence := regexp.MustCompile("(?m)^```[a-z]* file=(\\S+)\n((?s:.*?))^```$")
	for _, m := range fence.FindAllStringSubmatch(section, -1) {
		if _, dup := files[m[1]]; dup {
			t.Fatalf("%s: section %q has two blocks for %s", readme, title, m[1])
		}
		files[m[1]] = m[2]
	}
	return files
}

// goCmd is `go args...` in dir, offline: modules come from the module cache only
// (`go mod download` fills it for the repository, whose dependencies are the user module's).
func goCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(userEnv(), "GOFLAGS=-mod=mod -buildvcs=false", "GOPROXY=off", "GOSUMDB=off", "GOWORK=off", "GOTOOLCHAIN=local")
	return cmd
}

// userEnv is the environment without anything that would point yt-flow at a cluster or
// configure it: the user's binary must run on its embedded server.
func userEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "YT_") || name == "GOFLAGS" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// TestUserBinaryFromDocs follows docs/own-binary.md's "Writing your own computation" as a user
// would: a module of its own with the files of that section, yt-flow required through a
// replace pointing at this checkout (instead of `go get`), built and run with `run --spec
// pipeline.yson` on a fresh data folder; the printed clicks per user must be those of the
// section's input.txt.
func TestUserBinaryFromDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module and runs a pipeline")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	files := readmeFiles(t, filepath.Join(root, "docs", "own-binary.md"), "Writing your own computation")
	for _, f := range []string{"main.go", "clicks.go", "pipeline.yson", "local.yson", "input.txt"} {
		if files[f] == "" {
			t.Fatalf("docs/own-binary.md has no block for %s (blocks: %v)", f, keysOf(files))
		}
	}

	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// `go get github.com/ytflow/yt-flow`, against this checkout and the module cache; the
	// checkout's go.sum has the sums of every module the user's build needs.
	sums, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sums, 0o644); err != nil {
		t.Fatal(err)
	}
	// After `go get` and `go mod tidy` the user's go.mod lists yt-flow's requirements too
	// (as indirect ones); with them there, the build reads no go.mod beyond those in the cache.
	edit := []string{"mod", "edit", "-require=github.com/ytflow/yt-flow@v0.0.0", "-replace=github.com/ytflow/yt-flow=" + root}
	for _, r := range requirements(t, root) {
		edit = append(edit, "-require="+r)
	}
	bin := filepath.Join(dir, "mycount")
	for _, args := range [][]string{
		{"mod", "init", "example.com/mycount"},
		edit,
		{"build", "-o", bin, "."},
	} {
		if out, err := goCmd(dir, args...).CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--spec", "pipeline.yson", "--data-dir", filepath.Join(dir, "data"), "--progress", "0")
	cmd.Dir = dir
	cmd.Env = userEnv()
	var out, errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	// Whatever happens to the test, the process does not outlive it.
	t.Cleanup(func() {
		select {
		case <-waited:
		default:
			_ = cmd.Process.Kill()
			<-waited
		}
	})
	var runErr error
	select {
	case runErr = <-waited:
		waited <- runErr // for the cleanup
	case <-ctx.Done():
		t.Fatalf("%s run did not finish within 2 minutes\nstdout:\n%s\nstderr:\n%s", bin, out.String(), errb.String())
	}
	var exit *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exit) {
		t.Fatal(runErr)
	}
	if runErr != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", runErr, out.String(), errb.String())
	}
	stdout := out.String()
	for _, s := range []string{"pipeline //home/mycount/pipeline completed", "results: //home/mycount/clicks"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, stdout)
		}
	}
	want := clicksPerUser(files["input.txt"])
	if got := printedRows(t, stdout, "clicks per user"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("clicks per user\n got %q\nwant %q\nstdout:\n%s", got, want, stdout)
	}
	// The document shows the same table.
	for _, row := range want {
		user, n, _ := strings.Cut(row, " ")
		if !regexp.MustCompile(`(?m)^\s+` + user + `\s+` + n + `$`).MatchString(readmeSection(t, root)) {
			t.Errorf("docs/own-binary.md's expected output lacks the row %q", row)
		}
	}
}

// requirements returns the requirements of the module in root as path@version.
func requirements(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	var mod struct {
		Require []struct{ Path, Version string }
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatal(err)
	}
	var reqs []string
	for _, r := range mod.Require {
		reqs = append(reqs, r.Path+"@"+r.Version)
	}
	return reqs
}

// clicksPerUser counts the lines "USER PAGE" of input per user, as "user clicks" rows in the
// order of the result query (clicks descending, then user).
func clicksPerUser(input string) []string {
	counts := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(input))
	for sc.Scan() {
		if user, _, ok := strings.Cut(strings.TrimSpace(sc.Text()), " "); ok {
			counts[user]++
		}
	}
	users := keysOf(counts)
	sort.SliceStable(users, func(i, j int) bool { return counts[users[i]] > counts[users[j]] })
	rows := make([]string, len(users))
	for i, u := range users {
		rows[i] = fmt.Sprintf("%s %d", u, counts[u])
	}
	return rows
}

func readmeSection(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "own-binary.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, s, _ := strings.Cut(string(data), "\n## Writing your own computation\n")
	return s
}

func keysOf[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
