// Package pgurl recognises PostgreSQL URLs where a file path is also
// accepted, and shows them without their password.
package pgurl

import (
	"net/url"
	"strings"
)

// Is reports whether path names a PostgreSQL database (postgres:// or
// postgresql://) rather than a file.
func Is(path string) bool {
	return strings.HasPrefix(path, "postgres://") || strings.HasPrefix(path, "postgresql://")
}

// Redacted is path as messages show it: a URL with its password (in the
// user part or the query) replaced; any other path unchanged.
func Redacted(path string) string {
	if !Is(path) {
		return path
	}
	u, err := url.Parse(path)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}
