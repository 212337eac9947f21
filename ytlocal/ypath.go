package ytlocal

import (
	"strconv"
	"strings"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yterrors"
)

// pathRef is a parsed Cypress path: a root (/ or #<id>), keys, and an optional
// attribute part (/@name/sub...).
type pathRef struct {
	raw     string
	byID    bool
	id      guid.GUID
	keys    []string
	amp     []bool // amp[i]: key i carried & (do not resolve a link there)
	rootAmp bool
	attr    []string // nil: not an attribute path; []string{""}: /@ (all attributes)
}

func (p *pathRef) isAttr() bool { return p.attr != nil }

// lastAmp reports whether the final path element carried &.
func (p *pathRef) lastAmp() bool {
	if len(p.amp) == 0 {
		return p.rootAmp
	}
	return p.amp[len(p.amp)-1]
}

func pathError(raw, format string, args ...any) error {
	return withAttrs(ytErr(yterrors.CodeGeneric, "Error parsing YPath %q: %s", raw, strings.TrimSpace(sprintf(format, args...))), "path", raw)
}

// parsePath parses a plain YPath. Rich suffixes ([ranges], {columns}) must be stripped
// by the caller (parseRichPath).
func parsePath(raw string) (*pathRef, error) {
	p := &pathRef{raw: raw}
	s := raw
	switch {
	case strings.HasPrefix(s, "#"):
		end := strings.IndexAny(s, "/&")
		if end < 0 {
			end = len(s)
		}
		id, err := guid.ParseString(s[1:end])
		if err != nil {
			return nil, pathError(raw, "invalid object id %q", s[1:end])
		}
		p.byID, p.id = true, id
		s = s[end:]
	case strings.HasPrefix(s, "/"):
		s = s[1:]
		if strings.HasPrefix(s, "@") {
			s = "/" + s
		}
	default:
		return nil, pathError(raw, "path must start with / or #")
	}
	if strings.HasPrefix(s, "&") {
		p.rootAmp = true
		s = s[1:]
	}
	for len(s) > 0 {
		if s[0] != '/' {
			return nil, pathError(raw, "expected / at %q", s)
		}
		s = s[1:]
		if strings.HasPrefix(s, "@") {
			p.attr = []string{}
			for _, part := range splitUnescaped(s[1:]) {
				k, err := unescapeKey(part)
				if err != nil {
					return nil, pathError(raw, "%v", err)
				}
				p.attr = append(p.attr, k)
			}
			if len(p.attr) == 0 {
				p.attr = []string{""}
			}
			return p, nil
		}
		end, amp := scanKey(s)
		key, err := unescapeKey(s[:end])
		if err != nil {
			return nil, pathError(raw, "%v", err)
		}
		if key == "" {
			return nil, pathError(raw, "empty key")
		}
		p.keys = append(p.keys, key)
		p.amp = append(p.amp, amp)
		s = s[end:]
		if amp {
			s = s[1:]
		}
	}
	return p, nil
}

// scanKey returns the end of the key at the start of s and whether & follows.
func scanKey(s string) (int, bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '/':
			return i, false
		case '&':
			return i, true
		}
	}
	return len(s), false
}

func splitUnescaped(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '/':
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if start < len(s) || len(out) > 0 {
		out = append(out, s[start:])
	}
	return out
}

func unescapeKey(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			return "", errorf("dangling escape in %q", s)
		}
		i++
		if s[i] == 'x' {
			if i+2 >= len(s) {
				return "", errorf("bad \\x escape in %q", s)
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return "", errorf("bad \\x escape in %q", s)
			}
			b.WriteByte(byte(v))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String(), nil
}

// escapeKey escapes a key for use in a path.
func escapeKey(k string) string {
	if !strings.ContainsAny(k, `\/@&*[{`) {
		return k
	}
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		switch k[i] {
		case '\\', '/', '@', '&', '*', '[', '{':
			b.WriteByte('\\')
		}
		b.WriteByte(k[i])
	}
	return b.String()
}
