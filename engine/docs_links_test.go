//go:build !js && !wasip1

package engine_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsLinksResolve: every relative link of the README and of the pages
// of docs/ (and the package READMEs) names a file or directory of the
// repository, and every #anchor a heading of the page it points to, so the
// README stays a map that leads somewhere after pages move.
func TestDocsLinksResolve(t *testing.T) {
	root := ".."
	pages := []string{"README.md", "python/README.md", "wasm/npm/README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	decisions, err := filepath.Glob(filepath.Join(root, "docs", "decisions", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(docs, decisions...) {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, rel)
	}
	if len(docs) < 5 {
		t.Fatalf("docs/ has %d pages; the README links to more", len(docs))
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for _, page := range pages {
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := filepath.Join(root, page) // an anchor alone points into the page itself
			if file != "" {
				dest = filepath.Join(root, filepath.Dir(page), file)
			}
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s links to %s, which does not exist", page, target)
				continue
			}
			checked++
			if anchor == "" {
				continue
			}
			text, err := os.ReadFile(dest)
			if err != nil {
				t.Fatal(err)
			}
			if !hasAnchor(string(text), anchor) {
				t.Errorf("%s links to %s, but %s has no heading with that anchor", page, target, dest)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link checked")
	}
}

// hasAnchor reports whether a Markdown page has a heading whose GitHub
// anchor is anchor (lower case, punctuation dropped, spaces as hyphens).
func hasAnchor(page, anchor string) bool {
	drop := regexp.MustCompile("[^a-z0-9 _-]")
	for _, l := range strings.Split(page, "\n") {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
		if strings.ReplaceAll(drop.ReplaceAllString(h, ""), " ", "-") == anchor {
			return true
		}
	}
	return false
}
