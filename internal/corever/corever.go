// Package corever derives the FlowCoreVersion of a yt-flow binary: the VCS commit it was
// built from ("+dirty" appended when the work tree had changes), or, when the build carries
// no VCS metadata (go build -buildvcs=false, go test, a build outside a repository), the
// SHA-256 of the executable. The controller runs jobs only on workers whose version equals
// the pipeline's FlowCoreTarget, and pauses the pipeline when its own does not.
package corever

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
)

// FromBuildInfo returns the VCS version recorded in bi: vcs.revision, with "+dirty" when
// vcs.modified is true. ok is false when bi is nil or records no revision.
func FromBuildInfo(bi *debug.BuildInfo) (version string, ok bool) {
	if bi == nil {
		return "", false
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "", false
	}
	if modified == "true" {
		rev += "+dirty"
	}
	return rev, true
}

// Checksum returns the hex SHA-256 of what r reads.
func Checksum(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ChecksumFile returns the hex SHA-256 of the file at path.
func ChecksumFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("checksum of %s: %w", path, err)
	}
	defer f.Close()
	sum, err := Checksum(f)
	if err != nil {
		return "", fmt.Errorf("checksum of %s: %w", path, err)
	}
	return sum, nil
}

// OfFile returns the FlowCoreVersion of the binary at path, as that binary derives its own
// (Self): its VCS version when it is a Go binary built with VCS metadata, otherwise its
// checksum.
func OfFile(path string) (string, error) {
	if v, ok := VCSOfFile(path); ok {
		return v, nil
	}
	return ChecksumFile(path)
}

// VCSOfFile returns the VCS version recorded in the Go binary at path; ok is false when the
// file is no Go binary or records no revision (its version is then its checksum).
func VCSOfFile(path string) (version string, ok bool) {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return "", false
	}
	return FromBuildInfo(bi)
}

var self struct {
	once     sync.Once
	version  string
	checksum string
	err      error
}

// Self returns the FlowCoreVersion of the running binary. The checksum, when needed, is
// computed once per process.
func Self() (string, error) {
	if v, ok := FromBuildInfo(readBuildInfo()); ok {
		return v, nil
	}
	return SelfChecksum()
}

// SelfChecksum returns the hex SHA-256 of the running executable, computed once per process.
func SelfChecksum() (string, error) {
	self.once.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			self.err = fmt.Errorf("find the running executable: %w", err)
			return
		}
		self.checksum, self.err = ChecksumFile(exe)
	})
	if self.err != nil {
		return "", errors.Join(errors.New("corever: this binary's version"), self.err)
	}
	return self.checksum, nil
}

func readBuildInfo() *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return bi
}
