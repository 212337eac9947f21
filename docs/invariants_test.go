package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// testRef is a test named by a document or a comment, where it is named.
type testRef struct {
	name string // the test function, without a /subtest suffix
	pos  string // file:line, relative to the repository root
}

// testNameRE finds a test name in free text: Test followed by an upper-case
// letter, digit or underscore. A "/subtest" suffix is not part of the match.
var testNameRE = regexp.MustCompile(`\bTest[A-Z0-9_]\w*`)

// repoRoot is the folder holding go.mod, found from the test's directory up.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// goFiles lists the repository's .go files (relative paths), skipping hidden
// folders and testdata.
func goFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// testFuncs returns the names of the top-level func TestX( declarations in the
// repository's _test.go files.
func testFuncs(t *testing.T, root string, files []string) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	tests := map[string]bool{}
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, filepath.Join(root, f), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", f, err)
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				tests[fn.Name.Name] = true
			}
		}
	}
	return tests
}

// invariant is one "Invariant:" comment of the code.
type invariant struct {
	pos  string // file:line of the "Invariant:" line
	text string // the statement, comment markers removed
	refs []testRef
}

// codeInvariants collects the "Invariant:" comments of the non-test .go files.
// An invariant runs from its "Invariant:" line over the following lines of the
// same comment until an empty comment line, a list item or the next
// "Invariant:"; the tests it names are the Test… words in that text, each
// recorded at the line that holds it.
func codeInvariants(t *testing.T, root string, files []string) []invariant {
	t.Helper()
	fset := token.NewFileSet()
	var out []invariant
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, filepath.Join(root, f), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", f, err)
		}
		for _, g := range file.Comments {
			var cur *invariant
			for _, c := range g.List {
				line := fset.Position(c.Slash).Line
				for i, text := range strings.Split(c.Text, "\n") {
					text = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(strings.TrimSuffix(text, "*/"), "//"), "/*"))
					at, ok := strings.CutPrefix(strings.TrimPrefix(text, "- "), "Invariant:")
					switch {
					case ok:
						if cur != nil {
							out = append(out, *cur)
						}
						cur = &invariant{pos: pathLine(f, line+i)}
						text = strings.TrimSpace(at)
					case cur != nil && (text == "" || strings.HasPrefix(text, "- ")):
						out = append(out, *cur)
						cur = nil
					}
					if cur == nil {
						continue
					}
					cur.text = strings.TrimSpace(cur.text + " " + text)
					for _, name := range testNameRE.FindAllString(text, -1) {
						cur.refs = append(cur.refs, testRef{name: name, pos: pathLine(f, line+i)})
					}
				}
			}
			if cur != nil {
				out = append(out, *cur)
			}
		}
	}
	return out
}

func pathLine(file string, line int) string {
	return file + ":" + strconv.Itoa(line)
}

// docInvariant is one "### name" section of docs/invariants.md.
type docInvariant struct {
	name string
	pos  string
	refs []testRef
}

// docTestRE finds a test name written as code in the document: `TestX` or
// `TestX/subtest`.
var docTestRE = regexp.MustCompile("`(Test[A-Z0-9_]\\w*)(/[^`]*)?`")

// docInvariants reads the "### name" sections of docs/invariants.md and the
// tests each names; loose are the tests named outside those sections.
func docInvariants(t *testing.T, root string) (invs []docInvariant, loose []testRef) {
	t.Helper()
	const doc = "docs/invariants.md"
	data, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	in := false // inside a ### section
	for i, line := range strings.Split(string(data), "\n") {
		if name, ok := strings.CutPrefix(line, "### "); ok {
			invs = append(invs, docInvariant{name: strings.TrimSpace(name), pos: pathLine(doc, i+1)})
			in = true
			continue
		}
		if strings.HasPrefix(line, "#") {
			in = false // a higher heading ends the invariant
			continue
		}
		for _, m := range docTestRE.FindAllStringSubmatch(line, -1) {
			ref := testRef{name: m[1], pos: pathLine(doc, i+1)}
			if !in {
				loose = append(loose, ref)
				continue
			}
			invs[len(invs)-1].refs = append(invs[len(invs)-1].refs, ref)
		}
	}
	return invs, loose
}

// TestInvariantsNameExistingTests: every test named by an "Invariant:" comment
// in the code or by docs/invariants.md is a func TestX( in some _test.go file
// of the repository, every invariant names at least one, and the invariants of
// docs/invariants.md have distinct names.
func TestInvariantsNameExistingTests(t *testing.T) {
	root := repoRoot(t)
	files := goFiles(t, root)
	tests := testFuncs(t, root, files)
	if len(tests) == 0 {
		t.Fatal("no tests found: wrong repository root?")
	}

	code := codeInvariants(t, root, files)
	if len(code) == 0 {
		t.Fatal(`no "Invariant:" comments found`)
	}
	for _, inv := range code {
		if len(inv.refs) == 0 {
			t.Errorf("%s: invariant names no test: %q", inv.pos, inv.text)
		}
		for _, r := range inv.refs {
			if !tests[r.name] {
				t.Errorf("%s: invariant names %s, but no _test.go file declares func %s(", r.pos, r.name, r.name)
			}
		}
	}

	doc, loose := docInvariants(t, root)
	for _, r := range loose {
		if !tests[r.name] {
			t.Errorf("%s: names %s, but no _test.go file declares func %s(", r.pos, r.name, r.name)
		}
	}
	if len(doc) == 0 {
		t.Fatal("docs/invariants.md has no ### sections")
	}
	seen := map[string]string{}
	for _, inv := range doc {
		if prev, ok := seen[inv.name]; ok {
			t.Errorf("%s: invariant %q is already defined at %s", inv.pos, inv.name, prev)
		}
		seen[inv.name] = inv.pos
		if len(inv.refs) == 0 {
			t.Errorf("%s: invariant %q names no test", inv.pos, inv.name)
		}
		for _, r := range inv.refs {
			if !tests[r.name] {
				t.Errorf("%s: invariant %q names %s, but no _test.go file declares func %s(", r.pos, inv.name, r.name, r.name)
			}
		}
	}
	t.Logf("%d invariants in the code, %d in docs/invariants.md, %d tests in the repository", len(code), len(doc), len(tests))
}
