package pgurl

import "testing"

func TestRedacted(t *testing.T) {
	for in, want := range map[string]string{
		"agent.db":                      "agent.db",
		"postgres://u:secret@h:5432/db": "postgres://u:xxxxx@h:5432/db",
		"postgresql://h/db?password=secret&sslmode=x": "postgresql://h/db?password=xxxxx&sslmode=x",
		"postgres://u@h/db":                           "postgres://u@h/db",
		"postgres://%zz":                              "postgres://(unparsable URL)",
	} {
		if got := Redacted(in); got != want {
			t.Errorf("Redacted(%q) = %q, want %q", in, got, want)
		}
	}
	if Is("file.db") || !Is("postgres://h/db") || !Is("postgresql://h/db") {
		t.Error("Is")
	}
}
