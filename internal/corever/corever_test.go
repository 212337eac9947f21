package corever

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestFromBuildInfo: the VCS revision is the version, "+dirty" marks a modified work tree,
// and a build without a revision has no VCS version.
func TestFromBuildInfo(t *testing.T) {
	set := func(kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{}
		for i := 0; i < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
		ok   bool
	}{
		{"nil", nil, "", false},
		{"no vcs", set("-ldflags", "-X a.b=c", "GOOS", "linux"), "", false},
		{"clean", set("vcs", "git", "vcs.revision", "4df5938aa", "vcs.modified", "false"), "4df5938aa", true},
		{"dirty", set("vcs.revision", "4df5938aa", "vcs.modified", "true"), "4df5938aa+dirty", true},
		{"no modified flag", set("vcs.revision", "abc"), "abc", true},
		{"modified without revision", set("vcs.modified", "true"), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := FromBuildInfo(tc.bi)
			if got != tc.want || ok != tc.ok {
				t.Errorf("FromBuildInfo = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestChecksumVersion: a file that is no Go binary has its SHA-256 as its version, and two
// files differing in one byte have different versions.
func TestChecksumVersion(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(a, []byte("#!/bin/sh\necho a\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte("#!/bin/sh\necho b\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	va, err := OfFile(a)
	if err != nil {
		t.Fatal(err)
	}
	// sha256 of "#!/bin/sh\necho a\n"
	sum, err := Checksum(strings.NewReader("#!/bin/sh\necho a\n"))
	if err != nil {
		t.Fatal(err)
	}
	if va != sum || len(va) != 64 {
		t.Errorf("OfFile(a) = %q, want its SHA-256 %q", va, sum)
	}
	vb, err := OfFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if va == vb {
		t.Errorf("two different files have one version %q", va)
	}
	if _, err := OfFile(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("OfFile of a missing file: %v, want an error naming it", err)
	}
}

// TestSelfMatchesOfFile: the version a binary derives for itself equals the one OfFile derives
// from its file (what deploy sets as the target for the binary it uploads). A test binary has
// no VCS metadata, so this is the checksum path.
func TestSelfMatchesOfFile(t *testing.T) {
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	of, err := OfFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if self != of || self == "" {
		t.Errorf("Self() = %q, OfFile(%s) = %q", self, exe, of)
	}
}
