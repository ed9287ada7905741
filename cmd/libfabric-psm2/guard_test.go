package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// TestEveryExportIsGuarded parses this package and checks that each
// //export function begins with `defer guard…(…, "<its name>")`, so that
// no Go panic can reach the C caller (guard.go).
func TestEveryExportIsGuarded(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	exports := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Doc == nil || !isExport(fn) {
				continue
			}
			exports++
			if !guarded(fn) {
				t.Errorf("%s: export %s does not start with a deferred guard naming it",
					fset.Position(fn.Pos()), fn.Name.Name)
			}
		}
	}
	if exports < 50 {
		t.Fatalf("found only %d exports: the test is not looking at the package", exports)
	}
}

func isExport(fn *ast.FuncDecl) bool {
	for _, c := range fn.Doc.List {
		if c.Text == "//export "+fn.Name.Name {
			return true
		}
	}
	return false
}

func guarded(fn *ast.FuncDecl) bool {
	if fn.Body == nil || len(fn.Body.List) == 0 {
		return false
	}
	d, ok := fn.Body.List[0].(*ast.DeferStmt)
	if !ok {
		return false
	}
	id, ok := d.Call.Fun.(*ast.Ident)
	if !ok || !strings.HasPrefix(id.Name, "guard") || len(d.Call.Args) == 0 {
		return false
	}
	lit, ok := d.Call.Args[len(d.Call.Args)-1].(*ast.BasicLit)
	return ok && lit.Value == `"`+fn.Name.Name+`"`
}

// panicUnder panics under guard and returns what the guard made of it.
func panicUnder[T any](guard func(*T, string)) (ret T) {
	defer guard(&ret, "test")
	var m map[int]int
	//lint:ignore SA5000 the panic is the point
	m[1] = 1 // a nil map write panics
	return ret
}

// TestGuardRecovers: a panic under each guard becomes the documented
// failure instead of unwinding further, and is counted.
func TestGuardRecovers(t *testing.T) {
	before := lib.prov.Panics()
	eother := strconv.Itoa(-int(fi.EOTHER))
	for _, got := range []any{panicUnder(guardInt), panicUnder(guardSsize)} {
		if s := fmt.Sprint(got); s != eother {
			t.Errorf("guarded call returned %s, want -FI_EOTHER (%s)", s, eother)
		}
	}
	if s := fmt.Sprint(panicUnder(guardU64)); s != "0" {
		t.Errorf("guardU64: %s, want 0", s)
	}
	func() {
		defer guardVoid("test")
		panic("boom")
	}()
	if n := lib.prov.Panics() - before; n != 4 {
		t.Errorf("%d panics counted, want 4", n)
	}
}
