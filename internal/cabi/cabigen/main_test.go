package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestHeaderFresh fails when cmd/libfabric-psm2/fast/layout.h is not what the
// Go constants say: a layout changed in Go without the C side following.
func TestHeaderFresh(t *testing.T) {
	have, err := os.ReadFile("../../../cmd/libfabric-psm2/fast/layout.h")
	if err != nil {
		t.Fatal(err)
	}
	want := header()
	if !bytes.Equal(have, want) {
		hl, wl := strings.Split(string(have), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(hl), len(wl)); i++ {
			var h, w string
			if i < len(hl) {
				h = hl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if h != w {
				t.Fatalf("cmd/libfabric-psm2/fast/layout.h is stale (run go generate ./cmd/libfabric-psm2/fast); line %d:\n have %q\n want %q", i+1, h, w)
			}
		}
	}
}
