package sys

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// unixOwners are the files, besides this package, that import
// golang.org/x/sys/unix, and why: each is the one owner of a kernel
// interface whose calls are its whole content, so wrapping them here would
// only move the file. Tests may import it to build hostile memory
// (PROT_NONE pages, foreign mappings) for the code they test.
var unixOwners = map[string]string{
	"hfi/udp.go":            "the UDP socket layer: sendmmsg/recvmmsg, UDP_SEGMENT/UDP_GRO, path MTU, poll",
	"hfi/backend.go":        "the raw sockaddr the UDP layer sends to",
	"hfi/ports.go":          "the port-cursor file under an flock",
	"shm/segment.go":        "the segment's file: create, stat, size",
	"shm/segment_unsafe.go": "the segment's file and shared mapping: open, fallocate, mmap, unlink",
	"shm/dir.go":            "the per-user segment directory: mkdir, O_NOFOLLOW, fstat checks",
	"shm/stale.go":          "stale segment detection: fstat of a segment's file",
	"shm/vm.go":             "the address-space reservations peers' segments are mapped into",
}

// TestUnixImports fails when a file outside this package and the owners
// above imports golang.org/x/sys/unix: its system calls belong here.
func TestUnixImports(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "build" || strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || filepath.Dir(rel) == "internal/sys" {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); p == "golang.org/x/sys/unix" {
				seen[rel] = true
				if unixOwners[rel] == "" {
					t.Errorf("%s imports golang.org/x/sys/unix: use internal/sys (or list it in unixOwners, with the reason)", rel)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for f := range unixOwners {
		if !seen[f] {
			t.Errorf("unixOwners lists %s, which no longer imports golang.org/x/sys/unix", f)
		}
	}
}
