package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	out := flag.String("o", "fi_psm2go.7", "the page to write")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: mangen -o PAGE docs/config.md docs/compat.md")
		os.Exit(2)
	}
	var docs [2][]byte
	for i := range docs {
		b, err := os.ReadFile(flag.Arg(i))
		if err != nil {
			fmt.Fprintln(os.Stderr, "mangen:", err)
			os.Exit(1)
		}
		docs[i] = b
	}
	page := Page(string(docs[0]), string(docs[1]))
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "mangen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, []byte(page), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "mangen:", err)
		os.Exit(1)
	}
}
