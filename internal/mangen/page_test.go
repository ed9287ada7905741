package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gopsm2/libfabric-psm2/provider"
)

func page(t *testing.T) string {
	t.Helper()
	config, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	compat, err := os.ReadFile("../../docs/compat.md")
	if err != nil {
		t.Fatal(err)
	}
	return Page(string(config), string(compat))
}

// TestPageHasEveryParameter: the manual page has an entry for every
// provider parameter (provider/params.go), so a variable added without
// its line in docs/config.md fails here (and in provider's TestConfigDoc).
func TestPageHasEveryParameter(t *testing.T) {
	p := page(t)
	for _, name := range append(provider.ParamNames(), "PSM2_DEVICES", "PSM2_MULTI_EP", "HFI_UNIT", "FI_SHM_DISABLE_CMA") {
		if !strings.Contains(p, ".TP\n\\fB"+strings.ReplaceAll(name, "-", `\-`)+"\\fR\n") {
			t.Errorf("the manual page has no entry for %s", name)
		}
	}
	for _, sec := range []string{".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION", ".SH CONFIGURATION", ".SH DIFFERENCES FROM PSM2", ".SH SEE ALSO"} {
		if !strings.Contains(p, sec+"\n") {
			t.Errorf("no %s section", sec)
		}
	}
}

// TestPageRenders: man renders the page without a warning (when man is
// installed).
func TestPageRenders(t *testing.T) {
	man, err := exec.LookPath("man")
	if err != nil {
		t.Skip("no man here")
	}
	f := filepath.Join(t.TempDir(), "fi_psm2go.7")
	if err := os.WriteFile(f, []byte(page(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(man, "--warnings", "-l", f)
	cmd.Env = append(os.Environ(), "MANWIDTH=80", "MAN_KEEP_FORMATTING=0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("man: %v\n%s", err, stderr.String())
	}
	// Bold and underline come as overstrikes off a terminal: c\bc, _\bc.
	text := regexp.MustCompile(".\x08").ReplaceAllString(string(out), "")
	if !strings.Contains(text, "FI_PSM2_NAME_SERVER") {
		t.Fatalf("rendered page lacks the parameters:\n%.500s", text)
	}
}
