package provider

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/config.md's generated table")

const (
	configDoc = "../docs/config.md"
	genBegin  = "<!-- generated from provider/params.go (paramDefs): go test ./provider -run TestConfigDoc -args -update -->"
	genEnd    = "<!-- end of generated -->"
)

// renderParams is docs/config.md's table of the provider's parameters:
// what fi_info -e shows, from the same table.
func renderParams() string {
	var b strings.Builder
	b.WriteString("| variable | type | what it does, and its default |\n|---|---|---|\n")
	for _, d := range paramDefs {
		t := map[ParamType]string{ParamBool: "bool", ParamInt: "int", ParamString: "string"}[d.typ]
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", envName(d.name), t, strings.ReplaceAll(d.help, "|", "\\|"))
	}
	return b.String()
}

// TestConfigDoc: docs/config.md lists every provider parameter with the
// help fi_info -e prints; it fails when the page is stale (rewrite it
// with -update).
func TestConfigDoc(t *testing.T) {
	raw, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	i, j := strings.Index(s, genBegin), strings.Index(s, genEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no generated block (%q ... %q)", configDoc, genBegin, genEnd)
	}
	want := genBegin + "\n\n" + renderParams() + "\n" + genEnd
	got := s[i : j+len(genEnd)]
	if got == want {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(configDoc, []byte(s[:i]+want+s[j+len(genEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is stale: go test ./provider -run TestConfigDoc -args -update", configDoc)
}
