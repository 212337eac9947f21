package yson

// stripComments blanks out "// …" line comments and "/* … */" block comments that lie
// outside quoted strings, so that hand-written text YSON can be annotated. Offsets are kept
// (comments become spaces, newlines stay). Binary YSON is returned unchanged: its markers
// (bytes 0x01–0x06) may be followed by arbitrary bytes, so no comment can be recognised there.
func stripComments(data []byte) []byte {
	var out []byte // allocated on the first comment
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch {
		case c >= 0x01 && c <= 0x06:
			return data
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(data) && (data[i+1] == '/' || data[i+1] == '*'):
			if out == nil {
				out = append([]byte(nil), data...)
			}
			end := len(data)
			if data[i+1] == '/' {
				for j := i; j < len(data); j++ {
					if data[j] == '\n' {
						end = j
						break
					}
				}
			} else {
				for j := i + 2; j+1 < len(data); j++ {
					if data[j] == '*' && data[j+1] == '/' {
						end = j + 2
						break
					}
				}
			}
			for j := i; j < end; j++ {
				if out[j] != '\n' {
					out[j] = ' '
				}
			}
			i = end - 1
		}
	}
	if out == nil {
		return data
	}
	return out
}
