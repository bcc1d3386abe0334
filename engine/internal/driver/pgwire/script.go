package pgwire

import "strings"

// SplitScript cuts an SQL script into statements (without the semicolons),
// dropping empty ones.
func SplitScript(script string) []string {
	var out []string
	start := 0
	flush := func(end int) {
		if s := strings.TrimSpace(script[start:end]); s != "" && !onlyComments(s) {
			out = append(out, s)
		}
	}
	for i := 0; i < len(script); i++ {
		switch ch := script[i]; {
		case ch == '\'' || ch == '"':
			j := strings.IndexByte(script[i+1:], ch)
			if j < 0 {
				i = len(script)
			} else {
				i += j + 1
			}
		case ch == '-' && strings.HasPrefix(script[i:], "--"):
			j := strings.IndexByte(script[i:], '\n')
			if j < 0 {
				i = len(script)
			} else {
				i += j
			}
		case ch == '/' && strings.HasPrefix(script[i:], "/*"):
			j := strings.Index(script[i+2:], "*/")
			if j < 0 {
				i = len(script)
			} else {
				i += j + 3
			}
		case ch == '$':
			// A dollar quote: $tag$ ... $tag$.
			j := i + 1
			for j < len(script) && (script[j] == '_' || script[j] >= 'a' && script[j] <= 'z' || script[j] >= 'A' && script[j] <= 'Z' || script[j] >= '0' && script[j] <= '9') {
				j++
			}
			if j < len(script) && script[j] == '$' && (j == i+1 || !(script[i+1] >= '0' && script[i+1] <= '9')) {
				tag := script[i : j+1]
				k := strings.Index(script[j+1:], tag)
				if k < 0 {
					i = len(script)
				} else {
					i = j + 1 + k + len(tag) - 1
				}
			}
		case ch == ';':
			flush(i)
			start = i + 1
		}
	}
	flush(len(script))
	return out
}

func onlyComments(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "--") {
			return false
		}
	}
	return true
}
