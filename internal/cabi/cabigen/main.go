package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gopsm2/libfabric-psm2/internal/cabi"
	"github.com/gopsm2/libfabric-psm2/provider"
	"github.com/gopsm2/libfabric-psm2/shm"
)

// header is the generated text.
func header() []byte {
	groups := append(provider.CLayout(), shm.CLayout()...)
	return cabi.Header("PSM2_LAYOUT_H", "internal/cabi/cabigen", groups...)
}

func main() {
	out := flag.String("o", "layout.h", "the header to write")
	flag.Parse()
	if err := os.WriteFile(*out, header(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "cabigen:", err)
		os.Exit(1)
	}
}
