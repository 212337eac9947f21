package docs

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ytflow/yt-flow"

// importRule says what the packages of one folder (and its subfolders, unless a
// longer folder has its own rule) may import, after DESIGN §2 and
// docs/architecture.md.
type importRule struct {
	folder string // module-relative folder
	// modules lists the module folders (besides the rule's own folder) the
	// packages may import; all means any.
	modules []string
	all     bool
	// external, when not nil, lists the only non-standard-library import paths
	// allowed (an entry ending in "/" allows that prefix).
	external []string
	text     string
}

// sdkLeaves are the SDK packages that describe data without talking to a
// cluster.
var sdkLeaves = []string{"go.ytsaurus.tech/yt/go/yson", "go.ytsaurus.tech/yt/go/schema", "go.ytsaurus.tech/yt/go/ypath"}

// leafLibraries are module folders that import no framework package (their own
// rules check it), so the framework folders of DESIGN §2 may use them besides
// the folders its table names. flow/, spec/ and yson/ do not get them: the
// table gives those an exact list.
var leafLibraries = []string{"internal", "ytql"}

var importRules = []importRule{
	{folder: "flow", modules: nil, external: sdkLeaves,
		text: "flow/ imports only the SDK leaf packages yson, schema and ypath"},
	{folder: "spec", modules: []string{"yson", "connectors/registry"},
		text: "spec/ imports only yson/ and connectors/registry of the module"},
	{folder: "yson", modules: nil, external: []string{"go.ytsaurus.tech/yt/go/yson"},
		text: "yson/ imports only the SDK yson package"},
	{folder: "connectors/registry", modules: []string{"yson"},
		text: "connectors/registry is a leaf: it imports only yson/ of the module"},
	{folder: "connectors", modules: append([]string{"ytstore", "flow", "yson"}, leafLibraries...),
		text: "connectors/ imports only ytstore/, flow/, yson/ and the leaf libraries internal/, ytql/"},
	{folder: "connectors/connectortest", all: true,
		text: "connectors/connectortest is the conformance suite, a test tool that runs the whole runtime: it may import everything"},
	{folder: "controller", modules: append([]string{"ytstore", "spec", "flow", "connectors"}, leafLibraries...),
		text: "controller/ imports only ytstore/, spec/, flow/, connectors/ (to list source partitions) and the leaf libraries internal/, ytql/"},
	{folder: "job", modules: append([]string{"ytstore", "connectors", "spec", "flow"}, leafLibraries...),
		text: "job/ imports only ytstore/, connectors/, spec/, flow/ and the leaf libraries internal/, ytql/"},
	{folder: "ytstore", modules: []string{"internal"},
		text: "ytstore/ imports no framework package, only the leaf library internal/"},
	{folder: "ytlocal", modules: leafLibraries,
		text: "ytlocal/ never imports the framework, only the leaf libraries internal/, ytql/"},
	{folder: "internal", modules: nil,
		text: "internal/ packages are leaves: they import only other internal/ packages"},
	{folder: "ytql", modules: []string{"internal"},
		text: "ytql/ is a leaf library: it imports only internal/ of the module"},
	{folder: "examples", modules: []string{"flow", "connectors", "yson", "app"},
		text: "examples/ are user code: they import only flow/ (functions), connectors/ and yson/ (connectors) and app/ (a binary) of the module"},
	{folder: "status", modules: append([]string{"ytstore", "spec", "connectors"}, leafLibraries...),
		text: "status/ imports only ytstore/, spec/, connectors/ (a queue source's end offsets) and the leaf libraries internal/, ytql/"},
	{folder: "statuspage", modules: append([]string{"status", "ytstore", "spec"}, leafLibraries...),
		text: "statuspage/ imports only status/, ytstore/, spec/ and the leaf libraries internal/, ytql/"},
	{folder: "docs", modules: nil, text: "docs/ holds no code"},
	{folder: "monitoring", modules: append([]string{"job", "controller", "spec", "ytstore"}, leafLibraries...),
		text: "monitoring/ (the /metrics and pprof endpoint) imports only job/ and controller/ (whose state its collectors read), spec/, ytstore/ and the leaf libraries internal/, ytql/"},
	{folder: "app", all: true, text: "app/ (the command line as a library) may import everything"},
	{folder: "cmd", all: true, text: "cmd/ may import everything"},
	{folder: "e2e", all: true, text: "e2e/ may import everything"},
	{folder: "bench", all: true, text: "bench/ may import everything"},
}

// sdkClient are the SDK packages that talk to a cluster or know its error
// codes. Only ytstore (the framework's I/O), ytlocal (the server side) and the
// tools cmd, e2e and bench may import them.
var (
	sdkClient        = []string{"go.ytsaurus.tech/yt/go/yt", "go.ytsaurus.tech/yt/go/yt/", "go.ytsaurus.tech/yt/go/yterrors", "go.ytsaurus.tech/yt/go/migrate", "go.ytsaurus.tech/yt/go/mapreduce", "go.ytsaurus.tech/yt/go/mapreduce/", "go.ytsaurus.tech/yt/go/ytlock", "go.ytsaurus.tech/yt/go/ytwalk"}
	sdkClientFolders = []string{"ytstore", "ytlocal", "cmd", "e2e", "bench"}
	sdkClientText    = "only ytstore/ (and ytlocal/, cmd/, e2e/, bench/) import SDK yt, ythttp, yterrors and the other client packages"
)

// importException is a known violation, kept visible: the test fails when it
// no longer occurs, so that it is removed with its cause.
type importException struct {
	pkg, imp string // module-relative package folders or import paths
	why      string
}

var importExceptions = []importException{
	// spec validates computed group_by key expressions when it parses the spec
	// (spec/expr.go: ytql.ParseExpression, spec/validate.go), so a bad expression is
	// reported with its YSON path at parse time. ytql is a leaf library (standard
	// library, SDK schema, go-farm, internal/ytvalue). Lifting it means a validation
	// hook that spec's callers supply, or moving the expression parser to a leaf that
	// DESIGN §2 lets spec import.
	{pkg: "spec", imp: "ytql", why: "group_by expressions are parsed during spec validation"},
}

type listedPackage struct {
	ImportPath string
	Imports    []string
}

// listPackages runs go list over the module: each package with the imports of its
// non-test files.
func listPackages(t *testing.T, root string) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// within reports whether the module-relative path rel is folder or inside it.
func within(rel, folder string) bool {
	return rel == folder || strings.HasPrefix(rel, folder+"/")
}

// ruleFor finds the rule of the longest folder holding rel.
func ruleFor(rel string) (importRule, bool) {
	var best importRule
	found := false
	for _, r := range importRules {
		if within(rel, r.folder) && (!found || len(r.folder) > len(best.folder)) {
			best, found = r, true
		}
	}
	return best, found
}

func isStandard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func matchesAny(path string, list []string) bool {
	for _, p := range list {
		if path == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(path, p)) {
			return true
		}
	}
	return false
}

// importViolations checks every package against importRules and the SDK client
// rule, and returns each violation as "pkg imports forbidden X (rule: ...)"
// with the (package, import) pair it is about, module-relative where the path
// is in the module.
func importViolations(pkgs []listedPackage) (msgs []string, pairs [][2]string) {
	report := func(pkg, imp, rule, fullPkg, fullImp string) {
		msgs = append(msgs, fullPkg+" imports forbidden "+fullImp+" (rule: "+rule+")")
		pairs = append(pairs, [2]string{pkg, imp})
	}
	for _, p := range pkgs {
		rel, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			continue
		}
		rule, ok := ruleFor(rel)
		if !ok {
			msgs = append(msgs, p.ImportPath+" has no import rule: add its folder to importRules in docs/imports_test.go")
			pairs = append(pairs, [2]string{rel, ""})
			continue
		}
		for _, imp := range p.Imports {
			if isStandard(imp) {
				continue
			}
			if impRel, inModule := strings.CutPrefix(imp, module+"/"); inModule {
				if rule.all || within(impRel, rule.folder) {
					continue
				}
				if !slices.ContainsFunc(rule.modules, func(f string) bool { return within(impRel, f) }) {
					report(rel, impRel, rule.text, p.ImportPath, imp)
				}
				continue
			}
			if matchesAny(imp, sdkClient) && !slices.ContainsFunc(sdkClientFolders, func(f string) bool { return within(rel, f) }) {
				report(rel, imp, sdkClientText, p.ImportPath, imp)
				continue
			}
			if rule.external != nil && !matchesAny(imp, rule.external) {
				report(rel, imp, rule.text, p.ImportPath, imp)
			}
		}
	}
	return msgs, pairs
}

// TestImportRules: the non-test files of every package import only what the
// rules of DESIGN §2 (importRules above, described in docs/architecture.md)
// allow. Known violations are listed in importExceptions with their reason; an
// exception that no longer occurs fails the test too.
func TestImportRules(t *testing.T) {
	root := repoRoot(t)
	pkgs := listPackages(t, root)
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages")
	}
	msgs, pairs := importViolations(pkgs)
	used := make([]bool, len(importExceptions))
	for i, m := range msgs {
		excepted := false
		for j, e := range importExceptions {
			if within(pairs[i][0], e.pkg) && (pairs[i][1] == e.imp || within(pairs[i][1], e.imp)) {
				used[j], excepted = true, true
			}
		}
		if excepted {
			t.Logf("known exception: %s", m)
			continue
		}
		t.Error(m)
	}
	for j, e := range importExceptions {
		if !used[j] {
			t.Errorf("exception %s → %s (%s) no longer occurs: remove it from importExceptions", e.pkg, e.imp, e.why)
		}
	}
}

// TestImportRulesCatchViolations feeds the checker made-up packages that break
// each kind of rule, so that a rule cannot silently stop matching.
func TestImportRulesCatchViolations(t *testing.T) {
	m := func(rel string) string { return module + "/" + rel }
	for _, tc := range []struct {
		pkg  string
		imp  string
		want bool
	}{
		{m("flow"), m("ytstore"), true},
		{m("flow"), "go.ytsaurus.tech/yt/go/yson", false},
		{m("flow"), "github.com/dgryski/go-farm", true},
		{m("flow/flowtest"), m("flow"), false},
		{m("spec"), m("yson"), false},
		{m("spec"), m("connectors/registry"), false},
		{m("spec"), m("connectors/queue"), true},
		{m("spec"), m("flow"), true},
		{m("yson"), "go.ytsaurus.tech/yt/go/schema", true},
		{m("ytlocal/tablet"), m("job"), true},
		{m("ytlocal"), m("internal/ybin"), false},
		{m("ytlocal"), "go.ytsaurus.tech/yt/go/yterrors", false},
		{m("job"), "go.ytsaurus.tech/yt/go/yterrors", true},
		{m("job"), "go.ytsaurus.tech/yt/go/yt/ythttp", true},
		{m("job"), "go.ytsaurus.tech/yt/go/ytsaurus-other", false},
		{m("job"), m("controller"), true},
		{m("job/epoch"), m("job"), false},
		{m("controller"), "go.ytsaurus.tech/yt/go/yt", true},
		{m("ytstore"), "go.ytsaurus.tech/yt/go/yt", false},
		{m("ytstore"), m("flow"), true},
		{m("connectors/registry"), m("flow"), true},
		{m("connectors/kafka"), m("flow"), false},
		{m("internal/ytvalue"), m("ytql"), true},
		{m("examples/word_count"), m("job"), true},
		{m("cmd/yt-flow"), m("job"), false},
		{m("newfolder"), "fmt", true},
	} {
		msgs, _ := importViolations([]listedPackage{{ImportPath: tc.pkg, Imports: []string{tc.imp}}})
		if got := len(msgs) > 0; got != tc.want {
			t.Errorf("%s importing %s: violation = %v, want %v (%v)", tc.pkg, tc.imp, got, tc.want, msgs)
		}
	}
}
