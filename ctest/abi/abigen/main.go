package main

// Over 600 lines: a parser for the C declarations of libfabric's headers and
// the probe generator that uses it; neither is useful without the other.

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// headerList is the set of libfabric headers under test, in the order the
// probe includes them.  fi_ext_psm2.h is last because upstream's copy is
// not self-contained (it needs FI_PROV_SPECIFIC from fabric.h).
var headerList = []string{
	"fabric.h",
	"fi_errno.h",
	"fi_domain.h",
	"fi_endpoint.h",
	"fi_eq.h",
	"fi_cm.h",
	"fi_tagged.h",
	"fi_rma.h",
	"fi_atomic.h",
	"fi_trigger.h",
	"fi_collective.h",
	"fi_ext.h",
	"providers/fi_prov.h",
	"providers/fi_log.h",
	"fi_ext_psm2.h",
}

const (
	numObjWords = 64 // words in the universal object
	numSlots    = 64 // words in each ops table
)

func main() {
	ref := flag.String("ref", "/usr/include/rdma", "directory holding the reference rdma/ headers")
	cc := flag.String("cc", "gcc", "C compiler used to preprocess the reference headers")
	out := flag.String("o", "", "write the probe here (default: standard output)")
	cxx := flag.String("cxx", "", "also write a C++ file referencing every library function (linkage check)")
	list := flag.String("list", "", "also write the names the headers declare, one \"kind name\" a line")
	flag.Parse()

	g, err := newGenerator(*ref, *cc)
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(g.tmp)
	if err := g.load(); err != nil {
		fatal(err)
	}
	src := g.emit()
	if *out == "" {
		os.Stdout.WriteString(src)
	} else if err := os.WriteFile(*out, []byte(src), 0o644); err != nil {
		fatal(err)
	}
	if *list != "" {
		if err := os.WriteFile(*list, []byte(g.names()), 0o644); err != nil {
			fatal(err)
		}
	}
	if *cxx != "" {
		if err := os.WriteFile(*cxx, []byte(g.emitCxx()), 0o644); err != nil {
			fatal(err)
		}
	}
	fmt.Fprintf(os.Stderr, "abigen: %d structs/unions, %d enums (%d enumerators), %d typedefs, %d macros (%d valued, %d textual, %d function-like), %d extern functions, %d inline functions\n",
		len(g.aggs), len(g.enums), g.numEnumerators(), len(g.typedefs),
		len(g.macros), g.countMacros(macroValue), g.countMacros(macroText), g.countMacros(macroFunc),
		len(g.externs()), len(g.inlines()))
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "abigen:", err)
	os.Exit(1)
}

// ---------------------------------------------------------------------
// Tokens

type tokKind byte

const (
	tIdent tokKind = iota
	tNum
	tStr
	tChar
	tPunct
)

type token struct {
	s    string
	kind tokKind
	file string
	line int
}

var punct3 = []string{"...", "<<=", ">>="}
var punct2 = []string{"->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
	"*=", "/=", "%=", "+=", "-=", "&=", "^=", "|=", "##"}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

// tokenize splits one line of preprocessed C into tokens.
func tokenize(line, file string, ln int, out []token) ([]token, error) {
	i := 0
	for i < len(line) {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case isIdentStart(c):
			j := i + 1
			for j < len(line) && isIdentChar(line[j]) {
				j++
			}
			// string/char literal prefixes (L"", u8"", ...)
			if j < len(line) && (line[j] == '"' || line[j] == '\'') {
				switch line[i:j] {
				case "L", "u", "U", "u8":
					k, err := skipQuoted(line, j)
					if err != nil {
						return nil, fmt.Errorf("%s:%d: %v", file, ln, err)
					}
					kind := tStr
					if line[j] == '\'' {
						kind = tChar
					}
					out = append(out, token{line[i:k], kind, file, ln})
					i = k
					continue
				}
			}
			out = append(out, token{line[i:j], tIdent, file, ln})
			i = j
		case c >= '0' && c <= '9' || (c == '.' && i+1 < len(line) && line[i+1] >= '0' && line[i+1] <= '9'):
			j := i + 1
			for j < len(line) {
				d := line[j]
				if (d == '+' || d == '-') && strings.ContainsRune("eEpP", rune(line[j-1])) {
					j++
					continue
				}
				if isIdentChar(d) || d == '.' {
					j++
					continue
				}
				break
			}
			out = append(out, token{line[i:j], tNum, file, ln})
			i = j
		case c == '"' || c == '\'':
			k, err := skipQuoted(line, i)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %v", file, ln, err)
			}
			kind := tStr
			if c == '\'' {
				kind = tChar
			}
			out = append(out, token{line[i:k], kind, file, ln})
			i = k
		default:
			n := 1
			for _, p := range punct3 {
				if strings.HasPrefix(line[i:], p) {
					n = 3
					break
				}
			}
			if n == 1 {
				for _, p := range punct2 {
					if strings.HasPrefix(line[i:], p) {
						n = 2
						break
					}
				}
			}
			out = append(out, token{line[i : i+n], tPunct, file, ln})
			i += n
		}
	}
	return out, nil
}

func skipQuoted(s string, i int) (int, error) {
	q := s[i]
	j := i + 1
	for j < len(s) {
		switch s[j] {
		case '\\':
			j += 2
			continue
		case q:
			return j + 1, nil
		}
		j++
	}
	return 0, errors.New("unterminated literal")
}

// ---------------------------------------------------------------------
// Parsed declarations

type member struct {
	name     string   // "" for an anonymous struct/union member
	typeName string   // abstract type name; "" when not expressible
	bitfield string   // width expression of a bit-field
	flexible bool     // flexible array member
	fnPtr    bool     // pointer to function
	fnParams []param  // its parameters
	children []member // members of an anonymous aggregate type
}

type aggregate struct {
	kind    string // "struct" or "union"
	tag     string
	members []member
	file    string
}

type enumeration struct {
	tag   string // "" for anonymous enums
	names []string
	file  string
}

type typedefDecl struct {
	name     string
	typeName string
	file     string
}

type param struct {
	name     string // may be generated
	typeName string // abstract type name
	decl     string // declaration with a name
	stars    int    // number of '*' in the declarator
	isChar   bool   // (const) char *
	array    bool   // declared with [] (adjusted to a pointer)
}

type function struct {
	name     string
	inline   bool // static inline definition
	file     string
	ptrType  string // pointer-to-function type name
	stubDecl string // declaration head usable for a definition
	params   []param
	variadic bool
	retVoid  bool
	oldStyle bool    // declared with ()
	body     []token // definition body of inline functions
}

type macroClass int

const (
	macroGuard macroClass = iota
	macroEmpty
	macroValue
	macroText
	macroFunc
)

type macro struct {
	name   string
	params string // for function-like macros, "" otherwise
	body   string
	file   string
	class  macroClass
}

// ---------------------------------------------------------------------
// Generator

type generator struct {
	refDir    string // .../rdma
	incDir    string // parent of refDir, given to -I
	cc        string
	tmp       string
	fileSet   map[string]string // cleaned absolute path -> rdma-relative name
	aggs      []*aggregate
	enums     []*enumeration
	typedefs  []*typedefDecl
	funcs     []*function
	macros    []*macro
	typedefOf map[string]string
}

func newGenerator(ref, cc string) (*generator, error) {
	abs, err := filepath.Abs(ref)
	if err != nil {
		return nil, err
	}
	g := &generator{refDir: abs, incDir: filepath.Dir(abs), cc: cc, fileSet: map[string]string{}, typedefOf: map[string]string{}}
	if filepath.Base(abs) != "rdma" {
		return nil, fmt.Errorf("-ref %s: the directory must be named rdma", ref)
	}
	for _, h := range headerList {
		p := filepath.Join(abs, h)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("reference header missing: %v", err)
		}
		g.fileSet[filepath.Clean(p)] = h
		if real, err := filepath.EvalSymlinks(p); err == nil {
			g.fileSet[filepath.Clean(real)] = h
		}
	}
	g.tmp, err = os.MkdirTemp("", "abigen")
	if err != nil {
		return nil, err
	}
	return g, nil
}

func (g *generator) inSet(file string) (string, bool) {
	if !filepath.IsAbs(file) {
		if a, err := filepath.Abs(file); err == nil {
			file = a
		}
	}
	h, ok := g.fileSet[filepath.Clean(file)]
	return h, ok
}

func includeLines() string {
	var b strings.Builder
	for _, h := range headerList {
		fmt.Fprintf(&b, "#include <rdma/%s>\n", h)
	}
	return b.String()
}

func (g *generator) run(args ...string) (string, string, error) {
	cmd := exec.Command(g.cc, args...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	return so.String(), se.String(), err
}

var lineMarker = regexp.MustCompile(`^#\s*(\d+)\s+"((?:[^"\\]|\\.)*)"`)
var defineRe = regexp.MustCompile(`^#\s*define\s+([A-Za-z_][A-Za-z0-9_]*)(\([^)]*\))?\s?(.*)$`)

func (g *generator) load() error {
	wrapper := filepath.Join(g.tmp, "all.c")
	if err := os.WriteFile(wrapper, []byte(includeLines()), 0o644); err != nil {
		return err
	}
	pp, se, err := g.run("-std=gnu11", "-E", "-dD", "-I", g.incDir, wrapper)
	if err != nil {
		return fmt.Errorf("preprocessing the reference headers failed: %v\n%s", err, se)
	}
	dm, se, err := g.run("-std=gnu11", "-E", "-dM", "-I", g.incDir, wrapper)
	if err != nil {
		return fmt.Errorf("listing macros failed: %v\n%s", err, se)
	}

	// Final macro definitions (after any #undef / redefinition).
	final := map[string][2]string{}
	for _, l := range strings.Split(dm, "\n") {
		if m := defineRe.FindStringSubmatch(l); m != nil {
			final[m[1]] = [2]string{m[2], strings.TrimSpace(m[3])}
		}
	}

	var toks []token
	cur, curLine := "", 0
	var order []*macro
	seen := map[string]bool{}
	for _, l := range strings.Split(pp, "\n") {
		if m := lineMarker.FindStringSubmatch(l); m != nil {
			cur = unescapeC(m[2])
			curLine, _ = strconv.Atoi(m[1])
			continue
		}
		ln := curLine
		curLine++
		h, ours := g.inSet(cur)
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			if m := defineRe.FindStringSubmatch(strings.TrimSpace(l)); m != nil && ours && !seen[m[1]] {
				seen[m[1]] = true
				order = append(order, &macro{name: m[1], file: h})
			}
			continue
		}
		if !ours {
			continue
		}
		toks, err = tokenize(l, h, ln, toks)
		if err != nil {
			return err
		}
	}

	guards, err := g.findGuards()
	if err != nil {
		return err
	}
	for _, m := range order {
		def, ok := final[m.name]
		if !ok {
			continue // #undef'd later
		}
		m.params, m.body = def[0], def[1]
		switch {
		case guards[m.name]:
			m.class = macroGuard
		case m.params != "":
			m.class = macroFunc
		case m.body == "":
			m.class = macroEmpty
		default:
			m.class = macroValue // refined by classifyMacros
		}
		g.macros = append(g.macros, m)
	}

	p := &parser{t: toks, g: g}
	if err := p.parseTop(); err != nil {
		return err
	}
	for _, td := range g.typedefs {
		g.typedefOf[td.name] = td.typeName
	}
	g.finishParams()
	return g.classifyMacros()
}

func unescapeC(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// findGuards returns the include guard macro of every header: the first
// two directives of the file being "#ifndef X" and "#define X".
func (g *generator) findGuards() (map[string]bool, error) {
	guards := map[string]bool{}
	dir := regexp.MustCompile(`^\s*#\s*(\w+)\s*(\w*)`)
	for _, h := range headerList {
		data, err := os.ReadFile(filepath.Join(g.refDir, h))
		if err != nil {
			return nil, err
		}
		var ds [][2]string
		for _, l := range strings.Split(stripComments(string(data)), "\n") {
			if m := dir.FindStringSubmatch(l); m != nil {
				ds = append(ds, [2]string{m[1], m[2]})
				if len(ds) == 2 {
					break
				}
			}
		}
		if len(ds) == 2 && ds[0][0] == "ifndef" && ds[1][0] == "define" && ds[0][1] == ds[1][1] {
			guards[ds[0][1]] = true
		}
	}
	return guards, nil
}

func stripComments(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return b.String()
			}
			// keep newlines so that line structure survives
			b.WriteString(strings.Repeat("\n", strings.Count(s[i:i+2+end+2], "\n")))
			i += 2 + end + 1
		case strings.HasPrefix(s[i:], "//"):
			end := strings.IndexByte(s[i:], '\n')
			if end < 0 {
				return b.String()
			}
			i += end - 1
		case s[i] == '"' || s[i] == '\'':
			j, err := skipQuoted(s, i)
			if err != nil {
				b.WriteString(s[i:])
				return b.String()
			}
			b.WriteString(s[i:j])
			i = j - 1
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func (g *generator) numEnumerators() int {
	n := 0
	for _, e := range g.enums {
		n += len(e.names)
	}
	return n
}

func (g *generator) countMacros(c macroClass) int {
	n := 0
	for _, m := range g.macros {
		if m.class == c {
			n++
		}
	}
	return n
}

func (g *generator) externs() []*function {
	var r []*function
	for _, f := range g.funcs {
		if !f.inline {
			r = append(r, f)
		}
	}
	return r
}

func (g *generator) inlines() []*function {
	var r []*function
	for _, f := range g.funcs {
		if f.inline {
			r = append(r, f)
		}
	}
	return r
}

// isPointerType reports whether an abstract type name denotes a pointer,
// looking through the typedefs of the headers.
func (g *generator) isPointerType(tn string) bool {
	if strings.Contains(tn, "*") || strings.Contains(tn, "[") {
		return true
	}
	for _, w := range strings.Fields(tn) {
		if t, ok := g.typedefOf[w]; ok && t != tn {
			return g.isPointerType(t)
		}
	}
	return false
}

func (g *generator) finishParams() {
	for _, f := range g.funcs {
		for i := range f.params {
			p := &f.params[i]
			if p.stars == 0 {
				for _, w := range strings.Fields(p.typeName) {
					if t, ok := g.typedefOf[w]; ok {
						p.stars += strings.Count(t, "*")
					}
				}
			}
		}
	}
}

// classifyMacros separates object-like macros whose expansion is a value
// (number or string) from the ones that expand to something else
// (attributes, declarations).  It test-compiles one use per macro and
// drops the ones the compiler rejects, until the file compiles.
func (g *generator) classifyMacros() error {
	var cand []*macro
	for _, m := range g.macros {
		if m.class == macroValue {
			cand = append(cand, m)
		}
	}
	trial := filepath.Join(g.tmp, "trial.c")
	for round := 0; round < 50 && len(cand) > 0; round++ {
		var b strings.Builder
		b.WriteString(includeLines())
		b.WriteString(macroPrelude)
		b.WriteString("void abi_trial(void)\n{\n")
		hdr := strings.Count(b.String(), "\n")
		lineOf := map[int]*macro{}
		for i, m := range cand {
			fmt.Fprintf(&b, "\tABI_MACRO(%q, %s);\n", m.name, m.name)
			lineOf[hdr+i+1] = m
		}
		b.WriteString("}\n")
		if err := os.WriteFile(trial, []byte(b.String()), 0o644); err != nil {
			return err
		}
		_, se, err := g.run("-std=gnu11", "-Wall", "-Werror", "-fsyntax-only", "-fmax-errors=0",
			"-ftrack-macro-expansion=0", "-I", g.incDir, trial)
		if err == nil {
			return nil
		}
		bad := map[*macro]bool{}
		re := regexp.MustCompile(regexp.QuoteMeta(trial) + `:(\d+):\d+: (?:error|warning)`)
		for _, m := range re.FindAllStringSubmatch(se, -1) {
			n, _ := strconv.Atoi(m[1])
			if mc, ok := lineOf[n]; ok {
				bad[mc] = true
			}
		}
		if len(bad) == 0 {
			return fmt.Errorf("macro trial compile failed for an unknown reason:\n%s", se)
		}
		var keep []*macro
		for _, m := range cand {
			if bad[m] {
				m.class = macroText
			} else {
				keep = append(keep, m)
			}
		}
		cand = keep
	}
	return nil
}

// ---------------------------------------------------------------------
// Parser for the preprocessed libfabric declarations

type parser struct {
	t []token
	p int
	g *generator
}

func (p *parser) eof() bool { return p.p >= len(p.t) }

func (p *parser) peek(off int) string {
	if p.p+off < len(p.t) && p.p+off >= 0 {
		return p.t[p.p+off].s
	}
	return ""
}

func (p *parser) is(s string) bool { return p.peek(0) == s }

func (p *parser) errf(format string, a ...any) error {
	where := "end of input"
	if !p.eof() {
		t := p.t[p.p]
		where = fmt.Sprintf("%s:%d near %q", t.file, t.line, t.s)
	}
	return fmt.Errorf("parse error at %s: %s", where, fmt.Sprintf(format, a...))
}

func (p *parser) expect(s string) error {
	if !p.is(s) {
		return p.errf("expected %q", s)
	}
	p.p++
	return nil
}

// skipBalanced skips from an opening bracket to just after its match.
func (p *parser) skipBalanced() error {
	open := p.peek(0)
	if open != "(" && open != "[" && open != "{" {
		return p.errf("expected bracket")
	}
	depth := 0
	for !p.eof() {
		switch p.peek(0) {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		}
		p.p++
		if depth == 0 {
			return nil
		}
	}
	return p.errf("unbalanced %q", open)
}

var storageWords = map[string]bool{
	"typedef": true, "extern": true, "static": true, "auto": true, "register": true,
	"_Thread_local": true, "__thread": true, "inline": true, "__inline": true, "__inline__": true,
	"_Noreturn": true, "__extension__": true,
}

var qualifierWords = map[string]bool{
	"const": true, "volatile": true, "restrict": true, "__restrict": true, "__restrict__": true,
	"__const": true, "__volatile__": true, "__volatile": true, "_Atomic": true,
}

var typeWords = map[string]bool{
	"void": true, "char": true, "short": true, "int": true, "long": true, "float": true,
	"double": true, "signed": true, "unsigned": true, "_Bool": true, "_Complex": true,
	"__int128": true, "__signed__": true, "__signed": true, "__unsigned__": true,
	"_Float128": true, "__float128": true, "__builtin_va_list": true,
}

func isAttrWord(s string) bool {
	return s == "__attribute__" || s == "__attribute" || s == "__declspec"
}

func isAsmWord(s string) bool { return s == "__asm__" || s == "__asm" || s == "asm" }

type specInfo struct {
	words   []string // rendered type specifier/qualifier words
	storage map[string]bool
	anon    *aggregate // anonymous struct/union defined in the specifiers
	inexpr  bool       // type cannot be named (anonymous aggregate or enum)
}

func (s *specInfo) text() string { return strings.Join(s.words, " ") }

func (p *parser) skipAttrs() error {
	for isAttrWord(p.peek(0)) || isAsmWord(p.peek(0)) {
		p.p++
		if p.is("volatile") || p.is("__volatile__") {
			p.p++
		}
		if p.is("(") {
			if err := p.skipBalanced(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *parser) specifiers() (*specInfo, error) {
	s := &specInfo{storage: map[string]bool{}}
	typeSeen := false
	for !p.eof() {
		w := p.peek(0)
		switch {
		case isAttrWord(w):
			if err := p.skipAttrs(); err != nil {
				return nil, err
			}
		case storageWords[w]:
			s.storage[w] = true
			p.p++
		case qualifierWords[w]:
			if w == "_Atomic" && p.peek(1) == "(" {
				return nil, p.errf("_Atomic(type) is not supported")
			}
			s.words = append(s.words, w)
			p.p++
		case typeWords[w]:
			s.words = append(s.words, w)
			typeSeen = true
			p.p++
		case w == "struct" || w == "union":
			p.p++
			if err := p.skipAttrs(); err != nil {
				return nil, err
			}
			tag := ""
			if !p.eof() && p.t[p.p].kind == tIdent && !isAttrWord(p.peek(0)) {
				tag = p.peek(0)
				p.p++
			}
			if err := p.skipAttrs(); err != nil {
				return nil, err
			}
			if p.is("{") {
				a := &aggregate{kind: w, tag: tag, file: p.t[p.p].file}
				if err := p.aggregateBody(a); err != nil {
					return nil, err
				}
				if tag != "" {
					p.g.aggs = append(p.g.aggs, a)
				} else {
					s.anon = a
					s.inexpr = true
				}
			}
			if tag != "" {
				s.words = append(s.words, w, tag)
			}
			typeSeen = true
		case w == "enum":
			p.p++
			if err := p.skipAttrs(); err != nil {
				return nil, err
			}
			tag := ""
			if !p.eof() && p.t[p.p].kind == tIdent {
				tag = p.peek(0)
				p.p++
			}
			if err := p.skipAttrs(); err != nil {
				return nil, err
			}
			if p.is("{") {
				e := &enumeration{tag: tag, file: p.t[p.p].file}
				if err := p.enumBody(e); err != nil {
					return nil, err
				}
				p.g.enums = append(p.g.enums, e)
			}
			if tag != "" {
				s.words = append(s.words, "enum", tag)
			} else {
				s.inexpr = true
			}
			typeSeen = true
		case w == "__typeof__" || w == "typeof" || w == "__typeof" || w == "_Alignas":
			start := p.p
			p.p++
			if err := p.skipBalanced(); err != nil {
				return nil, err
			}
			if w != "_Alignas" {
				s.words = append(s.words, render(p.t[start:p.p]))
				typeSeen = true
			}
		case !typeSeen && p.t[p.p].kind == tIdent && !isAsmWord(w):
			s.words = append(s.words, w) // typedef name
			typeSeen = true
			p.p++
		default:
			return s, nil
		}
	}
	return s, nil
}

func render(ts []token) string {
	var parts []string
	for _, t := range ts {
		parts = append(parts, t.s)
	}
	return strings.Join(parts, " ")
}

func (p *parser) enumBody(e *enumeration) error {
	if err := p.expect("{"); err != nil {
		return err
	}
	for !p.is("}") {
		if p.eof() || p.t[p.p].kind != tIdent {
			return p.errf("expected enumerator")
		}
		e.names = append(e.names, p.peek(0))
		p.p++
		if err := p.skipAttrs(); err != nil {
			return err
		}
		if p.is("=") {
			depth := 0
			for !p.eof() {
				s := p.peek(0)
				if depth == 0 && (s == "," || s == "}") {
					break
				}
				if s == "(" || s == "[" || s == "{" {
					depth++
				} else if s == ")" || s == "]" || s == "}" {
					depth--
				}
				p.p++
			}
		}
		if p.is(",") {
			p.p++
		}
	}
	p.p++
	return nil
}

// declarator describes one parsed (possibly abstract) declarator.
type declarator struct {
	start, end int // token range in p.t
	nameAt     int // index of the declared identifier, -1 if abstract
	insertAt   int // for abstract declarators: where a name would go
	isFunc     bool
	lparen     int // for functions: index of '(' of the parameter list
	rparen     int // and of its ')'
	params     []param
	variadic   bool
	oldStyle   bool
	flexible   bool
	array      bool    // outermost derivation is an array
	fnPtr      bool    // pointer to function: (*name)(params)
	fpParams   []param // parameters of that function type
}

func (d *declarator) name(p *parser) string {
	if d.nameAt < 0 {
		return ""
	}
	return p.t[d.nameAt].s
}

func (p *parser) declarator() (*declarator, error) {
	d := &declarator{start: p.p, nameAt: -1, insertAt: -1}
	if err := p.declaratorInner(d); err != nil {
		return nil, err
	}
	d.end = p.p
	return d, nil
}

func (p *parser) declaratorInner(d *declarator) error {
	for p.is("*") || qualifierWords[p.peek(0)] || isAttrWord(p.peek(0)) {
		if isAttrWord(p.peek(0)) {
			if err := p.skipAttrs(); err != nil {
				return err
			}
			continue
		}
		p.p++
	}
	direct, nested := false, false
	switch {
	case p.is("(") && (p.peek(1) == "*" || p.peek(1) == "(" || isAttrWord(p.peek(1)) || p.peek(1) == "^"):
		nested = true
		p.p++
		if err := p.declaratorInner(d); err != nil {
			return err
		}
		if err := p.expect(")"); err != nil {
			return err
		}
	case !p.eof() && p.t[p.p].kind == tIdent && !isAttrWord(p.peek(0)) && !isAsmWord(p.peek(0)):
		d.nameAt = p.p
		p.p++
		direct = true
	default:
		if d.insertAt < 0 && d.nameAt < 0 {
			d.insertAt = p.p
		}
	}
	first := true
	for p.is("(") || p.is("[") {
		if p.is("(") {
			if first && (direct || (d.nameAt < 0 && d.insertAt == p.p)) && !d.isFunc {
				if direct {
					d.isFunc = true
					d.lparen = p.p
				}
				if err := p.paramList(d, direct); err != nil {
					return err
				}
				if direct {
					d.rparen = p.p - 1
				}
			} else if first && nested && !d.fnPtr {
				var tmp declarator
				if err := p.paramList(&tmp, true); err != nil {
					return err
				}
				d.fnPtr, d.fpParams = true, tmp.params
			} else if err := p.skipBalanced(); err != nil {
				return err
			}
		} else {
			if first && p.peek(1) == "]" {
				d.flexible = true
			}
			if first {
				d.array = true
			}
			if err := p.skipBalanced(); err != nil {
				return err
			}
		}
		first = false
	}
	return nil
}

// paramList parses "( parameter-type-list )".  When record is set, the
// parameters are stored in d.
func (p *parser) paramList(d *declarator, record bool) error {
	if err := p.expect("("); err != nil {
		return err
	}
	if p.is(")") {
		p.p++
		if record {
			d.oldStyle = true
		}
		return nil
	}
	var ps []param
	variadic := false
	for {
		if p.is("...") {
			variadic = true
			p.p++
		} else {
			s, err := p.specifiers()
			if err != nil {
				return err
			}
			pd, err := p.declarator()
			if err != nil {
				return err
			}
			if err := p.skipAttrs(); err != nil {
				return err
			}
			ps = append(ps, p.makeParam(s, pd, len(ps)))
		}
		if p.is(",") {
			p.p++
			continue
		}
		if err := p.expect(")"); err != nil {
			return err
		}
		break
	}
	if len(ps) == 1 && ps[0].typeName == "void" && ps[0].name == "" {
		ps = nil
	}
	if record {
		d.params, d.variadic = ps, variadic
	}
	return nil
}

func (p *parser) makeParam(s *specInfo, d *declarator, idx int) param {
	pr := param{name: d.name(p), array: d.array}
	pr.typeName = p.typeText(s, d, "")
	for i := d.start; i < d.end; i++ {
		if p.t[i].s == "*" {
			pr.stars++
		}
	}
	sp := strings.Join(s.words, " ")
	pr.isChar = pr.stars == 1 && (sp == "char" || sp == "const char" || sp == "char const")
	if pr.name == "" {
		if pr.typeName == "void" {
			return pr
		}
		pr.name = fmt.Sprintf("abi_p%d", idx)
	}
	pr.decl = p.typeText(s, d, pr.name)
	return pr
}

// declText renders tokens [from,to) skipping attributes, replacing the
// declared name (or inserting at the abstract insertion point) by repl.
func (p *parser) declText(d *declarator, from, to int, repl string) string {
	var parts []string
	for i := from; i < to; i++ {
		if i == d.insertAt && d.nameAt < 0 && repl != "" {
			parts = append(parts, repl)
		}
		t := p.t[i].s
		if isAttrWord(t) || isAsmWord(t) {
			// skip the attribute and its parenthesised argument
			i++
			depth := 0
			for ; i < to; i++ {
				if p.t[i].s == "(" {
					depth++
				} else if p.t[i].s == ")" {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			continue
		}
		if i == d.nameAt {
			if repl != "" {
				parts = append(parts, repl)
			}
			continue
		}
		parts = append(parts, t)
	}
	if d.insertAt == to && d.nameAt < 0 && repl != "" {
		parts = append(parts, repl)
	}
	return strings.Join(parts, " ")
}

func (p *parser) typeText(s *specInfo, d *declarator, repl string) string {
	dt := p.declText(d, d.start, d.end, repl)
	if dt == "" {
		return s.text()
	}
	return s.text() + " " + dt
}

func (p *parser) aggregateBody(a *aggregate) error {
	if err := p.expect("{"); err != nil {
		return err
	}
	for !p.is("}") {
		if p.eof() {
			return p.errf("unterminated struct")
		}
		if p.is(";") {
			p.p++
			continue
		}
		if p.is("_Static_assert") {
			for !p.eof() && !p.is(";") {
				p.p++
			}
			continue
		}
		s, err := p.specifiers()
		if err != nil {
			return err
		}
		if p.is(";") {
			if s.anon != nil {
				a.members = append(a.members, member{children: s.anon.members})
			}
			p.p++
			continue
		}
		for {
			d, err := p.declarator()
			if err != nil {
				return err
			}
			m := member{name: d.name(p), flexible: d.flexible, fnPtr: d.fnPtr, fnParams: d.fpParams}
			if m.name == "" && !p.is(":") {
				return p.errf("member without a name")
			}
			if !s.inexpr {
				m.typeName = p.typeText(s, d, "")
			}
			if s.anon != nil {
				m.children = s.anon.members
			}
			if p.is(":") {
				p.p++
				start := p.p
				for !p.eof() && !p.is(",") && !p.is(";") && !isAttrWord(p.peek(0)) {
					p.p++
				}
				m.bitfield = render(p.t[start:p.p])
			}
			if err := p.skipAttrs(); err != nil {
				return err
			}
			if m.name != "" {
				a.members = append(a.members, m)
			}
			if p.is(",") {
				p.p++
				continue
			}
			break
		}
		if err := p.expect(";"); err != nil {
			return err
		}
	}
	p.p++
	return p.skipAttrs()
}

func (p *parser) parseTop() error {
	for !p.eof() {
		if p.is(";") {
			p.p++
			continue
		}
		if p.is("_Static_assert") {
			for !p.eof() && !p.is(";") {
				p.p++
			}
			continue
		}
		s, err := p.specifiers()
		if err != nil {
			return err
		}
		if p.is(";") {
			p.p++
			continue
		}
		for {
			d, err := p.declarator()
			if err != nil {
				return err
			}
			if err := p.skipAttrs(); err != nil {
				return err
			}
			name := d.name(p)
			if name == "" {
				return p.errf("declaration without a name")
			}
			file := p.t[d.start].file
			if d.isFunc && p.is("{") {
				f := p.makeFunc(s, d, file, true)
				start := p.p
				if err := p.skipBalanced(); err != nil {
					return err
				}
				f.body = p.t[start:p.p]
				p.g.funcs = append(p.g.funcs, f)
				break
			}
			switch {
			case s.storage["typedef"]:
				if !s.inexpr {
					p.g.typedefs = append(p.g.typedefs, &typedefDecl{name: name, typeName: p.typeText(s, d, ""), file: file})
				}
			case d.isFunc:
				p.g.funcs = append(p.g.funcs, p.makeFunc(s, d, file, false))
			}
			if p.is("=") {
				depth := 0
				for !p.eof() {
					t := p.peek(0)
					if depth == 0 && (t == "," || t == ";") {
						break
					}
					if t == "(" || t == "[" || t == "{" {
						depth++
					} else if t == ")" || t == "]" || t == "}" {
						depth--
					}
					p.p++
				}
			}
			if p.is(",") {
				p.p++
				continue
			}
			if err := p.expect(";"); err != nil {
				return err
			}
			break
		}
	}
	return nil
}

func (p *parser) makeFunc(s *specInfo, d *declarator, file string, def bool) *function {
	f := &function{
		name:     d.name(p),
		inline:   def && (s.storage["inline"] || s.storage["__inline"] || s.storage["__inline__"]),
		file:     file,
		params:   d.params,
		variadic: d.variadic,
		oldStyle: d.oldStyle,
	}
	f.ptrType = p.typeText(s, d, "(*)")
	before := p.declText(d, d.start, d.lparen, "")
	f.retVoid = s.text() == "void" && strings.TrimSpace(before) == ""
	var ps []string
	for _, pr := range d.params {
		ps = append(ps, pr.decl)
	}
	if d.variadic {
		ps = append(ps, "...")
	}
	if len(ps) == 0 && !d.oldStyle {
		ps = []string{"void"}
	}
	head := s.text() + " " + p.declText(d, d.start, d.lparen, d.name(p)) + "(" + strings.Join(ps, ", ") + ")"
	if tail := p.declText(d, d.rparen+1, d.end, ""); tail != "" {
		head += " " + tail
	}
	f.stubDecl = head
	return f
}

// ---------------------------------------------------------------------
// Probe emission

// macroPrelude is shared by the trial compile and the probe.
const macroPrelude = `
void abi_pnum(const char *name, unsigned long long v, unsigned long size, int sgn);
void abi_pstr(const char *name, const char *s, unsigned long size, int sgn);
#define ABI_MACRO(name, ...) \
	_Generic((__VA_ARGS__), char *: abi_pstr, const char *: abi_pstr, default: abi_pnum) \
	(name, (__VA_ARGS__), (unsigned long)sizeof(__VA_ARGS__), ((__VA_ARGS__) - (__VA_ARGS__) - 1 < 0))
`

const probeHeader = `/*
 * Generated by ctest/abi/abigen -- do not edit.
 *
 * Prints one line per ABI fact of the libfabric headers it is compiled
 * against.  Build it once against the reference headers and once against
 * the headers under test and diff the two outputs.
 */
`

const probeRuntime = `
#include <stdio.h>
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <unistd.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define ABI_NOBJ %d
#define ABI_NSLOT %d
#define ABI_SIZE_WORD ((void *)(uintptr_t)0x100000)
#define ABI_STR_(...) #__VA_ARGS__
#define ABI_XSTR(...) ABI_STR_(__VA_ARGS__)

/* The universal object: word k points to ops table k.  Word 0 of every
 * table is a large size (so FI_CHECK_OP passes), word j >= 1 points to a
 * stub that records (k, j). */
static void *abi_U[ABI_NOBJ];
static void *abi_T[ABI_NOBJ][ABI_NSLOT];
static char abi_trace[8192];

static void abi_append(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#include <stdarg.h>
static void abi_append(const char *fmt, ...)
{
	size_t n = strlen(abi_trace);
	va_list ap;
	va_start(ap, fmt);
	if (n < sizeof(abi_trace) - 1)
		vsnprintf(abi_trace + n, sizeof(abi_trace) - n, fmt, ap);
	va_end(ap);
}

#define ABI_NARGS 16
#define ABI_STUB(k, j) \
	static long abi_s##k##_##j(long a0, long a1, long a2, long a3, long a4, long a5, \
				   long a6, long a7, long a8, long a9, long a10, long a11, \
				   long a12, long a13, long a14, long a15) \
	{ \
		const long a[ABI_NARGS] = { a0, a1, a2, a3, a4, a5, a6, a7, \
					    a8, a9, a10, a11, a12, a13, a14, a15 }; \
		return abi_hit(k, j, a); \
	}
typedef long (*abi_stub_fn)(long, long, long, long, long, long, long, long,
			    long, long, long, long, long, long, long, long);
static const abi_stub_fn abi_stub_tab[ABI_NOBJ][ABI_NSLOT];

enum { ABI_INT, ABI_PTR, ABI_WORD };

/* Describes a value symbolically when it points into the universal
 * object, an ops table or at a stub. */
static const char *abi_decode(uintptr_t v, int cls, char *buf, size_t n)
{
	uintptr_t u = (uintptr_t)abi_U, t = (uintptr_t)abi_T;
	if (v == 0) {
		snprintf(buf, n, "0");
	} else if (v >= u && v < u + sizeof(abi_U)) {
		snprintf(buf, n, "U+%%lu", (unsigned long)(v - u));
	} else if (v >= t && v < t + sizeof(abi_T)) {
		unsigned long off = (unsigned long)(v - t);
		unsigned long w = off / sizeof(void *);
		if (off %% sizeof(void *))
			snprintf(buf, n, "T%%lu[%%lu]+%%lu", w / ABI_NSLOT, w %% ABI_NSLOT, off %% sizeof(void *));
		else
			snprintf(buf, n, "&T%%lu[%%lu]", w / ABI_NSLOT, w %% ABI_NSLOT);
	} else {
		for (int k = 0; k < ABI_NOBJ; k++)
			for (int j = 1; j < ABI_NSLOT; j++)
				if (v == (uintptr_t)abi_stub_tab[k][j]) {
					snprintf(buf, n, "stub%%d.%%d", k, j);
					return buf;
				}
		long long s = (long long)v;
		if (s >= -65536 && s <= 65536)
			snprintf(buf, n, "%%lld", s);
		else if (cls == ABI_PTR)
			snprintf(buf, n, "ptr");
		else if (cls == ABI_WORD)
			snprintf(buf, n, "?");
		else
			snprintf(buf, n, "0x%%llx", (unsigned long long)v);
	}
	return buf;
}

/* Argument kinds of the ops-table slots the function under test is
 * expected to call, " slot=kinds ...", kinds being p (pointer) or the
 * byte size of an integer.  Unknown slots only show their first argument. */
static const char *abi_spec = "";

static long abi_hit(int k, int j, const long *a)
{
	char b[64], key[16];
	const char *s;

	snprintf(key, sizeof(key), " %%d=", j);
	s = strstr(abi_spec, key);
	if (!s) {
		abi_append(" obj_word=%%d slot=%%d a0=%%s", k, j, abi_decode((uintptr_t)a[0], ABI_WORD, b, sizeof(b)));
		return 0;
	}
	abi_append(" obj_word=%%d slot=%%d args=(", k, j);
	s += strlen(key);
	for (int i = 0; s[i] && s[i] != ' '; i++) {
		long v = a[i < ABI_NARGS ? i : 0];
		int cls = ABI_INT;
		if (i >= ABI_NARGS) {
			abi_append(",...");
			break;
		}
		switch (s[i]) {
		case 'p': cls = ABI_PTR; break;
		case '1': v = (unsigned char)v; break;
		case '2': v = (unsigned short)v; break;
		case '4': v = (int)v; break;
		}
		abi_append("%%s%%s", i ? "," : "", abi_decode((uintptr_t)v, cls, b, sizeof(b)));
	}
	abi_append(")");
	return 0;
}

/* Extern functions are replaced by stubs that log their arguments. */
static void abi_ext_begin(const char *name)
{
	abi_append(" ext=%%s(", name);
}

static void abi_ext_arg(const char *name, uintptr_t v, int isptr, int ischar)
{
	char b[64];
	const char *sep = abi_trace[strlen(abi_trace) - 1] == '(' ? "" : ",";
	abi_decode(v, isptr ? ABI_PTR : ABI_INT, b, sizeof(b));
	if (ischar && strcmp(b, "ptr") == 0)
		abi_append("%%s%%s=\"%%.40s\"", sep, name, (const char *)v);
	else
		abi_append("%%s%%s=%%s", sep, name, b);
}

static void abi_ext_end(void)
{
	abi_append(")");
	errno = 77;
}

static void abi_reset(void)
{
	for (int k = 0; k < ABI_NOBJ; k++) {
		abi_U[k] = abi_T[k];
		abi_T[k][0] = ABI_SIZE_WORD;
		for (int j = 1; j < ABI_NSLOT; j++)
			abi_T[k][j] = (void *)abi_stub_tab[k][j];
	}
	abi_trace[0] = 0;
}

/* Fill the stack below us with a pattern so that uninitialised locals
 * of the functions under test read the same garbage in every build. */
static void __attribute__((noinline)) abi_scribble(void)
{
	volatile unsigned char buf[32768];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = 0x5a;
}

static sigjmp_buf abi_jb;
static volatile sig_atomic_t abi_armed;
static volatile int abi_crashed, abi_hasret, abi_retcls;
static volatile uintptr_t abi_retv;

static void abi_signal(int sig)
{
	if (abi_armed) {
		abi_armed = 0;
		abi_crashed = sig;
		siglongjmp(abi_jb, sig);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void abi_begin(void)
{
	abi_reset();
	abi_crashed = abi_hasret = 0;
	abi_spec = "";
	abi_retv = 0;
	errno = 0;
}

static void abi_report(const char *kind, const char *name)
{
	char b[64];
	printf("%%s %%s%%s", kind, name, abi_trace[0] ? abi_trace : " none");
	if (abi_crashed)
		printf(" CRASH(signal %%d)", abi_crashed);
	else if (abi_hasret)
		printf(" ret=%%s", abi_decode(abi_retv, abi_retcls == 5 ? ABI_PTR : ABI_INT, b, sizeof(b)));
	for (int k = 0; k < ABI_NOBJ; k++) {
		if (abi_U[k] != (void *)abi_T[k])
			printf(" wrote U[%%d]=%%s", k, abi_decode((uintptr_t)abi_U[k], ABI_WORD, b, sizeof(b)));
		for (int j = 0; j < ABI_NSLOT; j++) {
			void *want = j ? (void *)abi_stub_tab[k][j] : ABI_SIZE_WORD;
			if (abi_T[k][j] != want)
				printf(" wrote T%%d[%%d]=%%s", k, j, abi_decode((uintptr_t)abi_T[k][j], ABI_WORD, b, sizeof(b)));
		}
	}
	printf("\n");
	abi_reset();
}

static void abi_num(const char *item, long long v)
{
	printf("%%s %%lld\n", item, v);
}

static void abi_line(const char *item)
{
	printf("%%s\n", item);
}

void abi_pnum(const char *name, unsigned long long v, unsigned long size, int sgn)
{
	printf("macro %%s 0x%%llx size=%%lu signed=%%d\n", name, v, size, sgn);
}

void abi_pstr(const char *name, const char *s, unsigned long size, int sgn)
{
	(void)sgn;
	printf("macro %%s \"%%s\" size=%%lu\n", name, s, size);
}

/* Prints a macro expansion with all white space removed. */
static void abi_text(const char *item, const char *s)
{
	printf("%%s ", item);
	for (; *s; s++)
		if (*s != ' ' && *s != '\t' && *s != '\n')
			putchar(*s);
	printf("\n");
}
`

type emitter struct {
	b strings.Builder
}

func (e *emitter) f(format string, a ...any) { fmt.Fprintf(&e.b, format, a...) }

func cstr(s string) string { return strconv.Quote(s) }

func (g *generator) emit() string {
	e := &emitter{}
	e.f("%s", probeHeader)
	e.f("\n/* The headers under test come first, so that a header relying on\n * something the probe includes would be noticed. */\n")
	e.f("%s", includeLines())
	e.f(probeRuntime, numObjWords, numSlots)
	e.f("%s", macroPrelude)

	// ops-table stubs
	e.f("\n/* ops-table stubs */\n")
	for k := 0; k < numObjWords; k++ {
		for j := 1; j < numSlots; j++ {
			e.f("ABI_STUB(%d, %d)\n", k, j)
		}
	}
	e.f("static const abi_stub_fn abi_stub_tab[ABI_NOBJ][ABI_NSLOT] = {\n")
	for k := 0; k < numObjWords; k++ {
		e.f("\t{ 0")
		for j := 1; j < numSlots; j++ {
			e.f(", abi_s%d_%d", k, j)
		}
		e.f(" },\n")
	}
	e.f("};\n")

	g.emitProtoChecks(e)
	g.emitExternStubs(e)
	g.emitFnMacroDecls(e)

	e.f("\nstatic void abi_types(void)\n{\n")
	g.emitTypedefs(e)
	g.emitAggregates(e)
	g.emitEnums(e)
	e.f("}\n")

	e.f("\nstatic void abi_macros(void)\n{\n")
	g.emitMacros(e)
	e.f("}\n")

	e.f("\nstatic void abi_fnmacros(void)\n{\n")
	g.emitFnMacros(e)
	e.f("}\n")

	e.f("\nstatic void abi_protos(void)\n{\n")
	for _, f := range g.funcs {
		kind := "extern"
		if f.inline {
			kind = "inline"
		}
		if f.oldStyle {
			continue
		}
		e.f("\tabi_line(%s);\n", cstr(fmt.Sprintf("proto %s %s ok", f.name, kind)))
	}
	e.f("}\n")

	e.f("\nstatic void abi_inlines(void)\n{\n")
	g.emitInlineCalls(e)
	e.f("}\n")

	e.f(`
int main(void)
{
	static char altstack[65536];
	stack_t ss;
	struct sigaction sa;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ss.ss_sp = altstack;
	ss.ss_size = sizeof(altstack);
	ss.ss_flags = 0;
	sigaltstack(&ss, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = abi_signal;
	sa.sa_flags = SA_ONSTACK | SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGILL, &sa, NULL);
	sigaction(SIGFPE, &sa, NULL);
	alarm(120);

	abi_reset();
	abi_types();
	abi_macros();
	abi_fnmacros();
	abi_protos();
	abi_inlines();
	return 0;
}
`)
	return e.b.String()
}

func (g *generator) emitProtoChecks(e *emitter) {
	e.f("\n/* Every function must have exactly the reference prototype.  These\n * come before the stub definitions so that a missing declaration is an\n * error. */\n")
	for _, f := range g.funcs {
		if f.oldStyle {
			continue
		}
		e.f("_Static_assert(__builtin_types_compatible_p(__typeof__(&%s), %s),\n\t%s);\n",
			f.name, f.ptrType, cstr(fmt.Sprintf("%s: prototype differs from the reference: %s", f.name, f.ptrType)))
	}
}

// extRet lists the values returned by extern stubs that need to return
// something other than 0 for the macros using them to do anything.
var extRet = map[string]string{
	"fi_log_enabled": "1",
	"fi_log_ready":   "1",
}

func (g *generator) emitExternStubs(e *emitter) {
	e.f("\n/* Stubs for the library functions the headers declare. */\n")
	for _, f := range g.externs() {
		if f.oldStyle {
			continue
		}
		e.f("%s\n{\n\tabi_ext_begin(%s);\n", f.stubDecl, cstr(f.name))
		for _, pr := range f.params {
			e.f("\tabi_ext_arg(%s, (uintptr_t)(%s), __builtin_classify_type(%s) == 5, %d);\n",
				cstr(pr.name), pr.name, pr.name, b2i(pr.isChar))
		}
		e.f("\tabi_ext_end();\n")
		for _, pr := range f.params {
			if pr.stars >= 2 && !pr.array {
				e.f("\tif (%s)\n\t\t*(void **)(%s) = (void *)abi_U;\n", pr.name, pr.name)
			}
		}
		if !f.retVoid {
			r := extRet[f.name]
			if r == "" {
				r = "0"
			}
			e.f("\treturn %s;\n", r)
		}
		e.f("}\n\n")
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (g *generator) emitTypedefs(e *emitter) {
	for _, t := range g.typedefs {
		e.f("\tabi_num(%s, sizeof(%s));\n", cstr("typesize "+t.name), t.name)
		e.f("\tabi_num(%s, __builtin_types_compatible_p(%s, %s));\n", cstr("typecompat "+t.name), t.name, t.typeName)
	}
}

func (g *generator) emitAggregates(e *emitter) {
	for _, a := range g.aggs {
		tn := a.kind + " " + a.tag
		e.f("\t/* %s (%s) */\n", tn, a.file)
		e.f("\tabi_num(%s, sizeof(%s));\n", cstr("sizeof "+tn), tn)
		e.f("\tabi_num(%s, _Alignof(%s));\n", cstr("alignof "+tn), tn)
		g.emitMembers(e, tn, "", a.members)
	}
}

func (g *generator) emitMembers(e *emitter, tn, prefix string, ms []member) {
	for _, m := range ms {
		if m.name == "" { // anonymous member: its fields belong to the parent
			g.emitMembers(e, tn, prefix, m.children)
			continue
		}
		path := prefix + m.name
		label := tn + "." + path
		acc := fmt.Sprintf("((%s *)0)->%s", tn, path)
		if m.bitfield != "" {
			e.f("\tabi_line(%s);\n", cstr(fmt.Sprintf("bitfield %s width=%s (offset not checked)", label, m.bitfield)))
			if m.typeName != "" {
				e.f("\tabi_num(%s, __builtin_types_compatible_p(__typeof__(%s), %s));\n",
					cstr("fieldtype "+label), acc, m.typeName)
			}
			continue
		}
		e.f("\tabi_num(%s, offsetof(%s, %s));\n", cstr("offsetof "+label), tn, path)
		if m.flexible {
			e.f("\tabi_line(%s);\n", cstr("flexible "+label+" 1"))
		} else {
			e.f("\tabi_num(%s, sizeof(%s));\n", cstr("fieldsize "+label), acc)
		}
		if m.typeName != "" {
			e.f("\tabi_num(%s, __builtin_types_compatible_p(__typeof__(%s), %s));\n",
				cstr("fieldtype "+label), acc, m.typeName)
		} else {
			e.f("\tabi_num(%s, __alignof__(%s));\n", cstr("fieldalign "+label), acc)
		}
		if len(m.children) > 0 {
			g.emitMembers(e, tn, path+".", m.children)
		}
	}
}

func (g *generator) emitEnums(e *emitter) {
	for _, en := range g.enums {
		if en.tag != "" {
			tn := "enum " + en.tag
			e.f("\tabi_num(%s, sizeof(%s));\n", cstr("enumsize "+tn), tn)
			e.f("\tabi_num(%s, (%s)-1 < 0);\n", cstr("enumsigned "+tn), tn)
		}
		for _, n := range en.names {
			e.f("\tabi_num(%s, (long long)(%s));\n", cstr("enum "+n), n)
		}
	}
}

func (g *generator) emitMacros(e *emitter) {
	for _, m := range g.macros {
		if m.class == macroGuard {
			continue
		}
		e.f("#ifdef %s\n\tabi_line(%s);\n", m.name, cstr("defined "+m.name+" 1"))
		switch m.class {
		case macroValue:
			e.f("\tABI_MACRO(%s, %s);\n", cstr(m.name), m.name)
		case macroText:
			e.f("\tabi_text(%s, ABI_XSTR(%s));\n", cstr("macrotext "+m.name), m.name)
		}
		e.f("#else\n\tabi_line(%s);\n", cstr("defined "+m.name+" 0"))
		switch m.class {
		case macroValue:
			e.f("\tabi_line(%s);\n", cstr("macro "+m.name+" undefined"))
		case macroText:
			e.f("\tabi_line(%s);\n", cstr("macrotext "+m.name+" undefined"))
		}
		e.f("#endif\n")
	}
}

// fnMacroEval holds, for each function-like macro of the headers that the
// probe knows how to exercise, C statements that print its behaviour.
// ABI_FV(label, expr) prints a value.  ABI_FT(label, stmt) runs a
// statement and prints the calls it made to the library.
var fnMacroEval = map[string][]string{
	"FI_VERSION": {
		`ABI_FV("FI_VERSION(1,17)", FI_VERSION(1, 17));`,
		`ABI_FV("FI_VERSION(0,0)", FI_VERSION(0, 0));`,
		`ABI_FV("FI_VERSION(2,5)", FI_VERSION(2, 5));`,
		`ABI_FV("FI_VERSION(0x7fff,0xffff)", FI_VERSION(0x7fff, 0xffff));`,
		`ABI_FV("FI_VERSION(FI_MAJOR_VERSION,FI_MINOR_VERSION)", FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION));`,
	},
	"FI_MAJOR": {
		`ABI_FV("FI_MAJOR(0x10011)", FI_MAJOR(0x10011));`,
		`ABI_FV("FI_MAJOR(0)", FI_MAJOR(0));`,
		`ABI_FV("FI_MAJOR(0x7fffabcd)", FI_MAJOR(0x7fffabcd));`,
		`ABI_FV("FI_MAJOR(FI_VERSION(3,4))", FI_MAJOR(FI_VERSION(3, 4)));`,
	},
	"FI_MINOR": {
		`ABI_FV("FI_MINOR(0x10011)", FI_MINOR(0x10011));`,
		`ABI_FV("FI_MINOR(0)", FI_MINOR(0));`,
		`ABI_FV("FI_MINOR(0x7fffabcd)", FI_MINOR(0x7fffabcd));`,
		`ABI_FV("FI_MINOR(FI_VERSION(3,4))", FI_MINOR(FI_VERSION(3, 4)));`,
	},
	"FI_VERSION_GE": {
		`ABI_FV("FI_VERSION_GE(1.17,1.5)", FI_VERSION_GE(FI_VERSION(1, 17), FI_VERSION(1, 5)));`,
		`ABI_FV("FI_VERSION_GE(1.5,1.17)", FI_VERSION_GE(FI_VERSION(1, 5), FI_VERSION(1, 17)));`,
		`ABI_FV("FI_VERSION_GE(1.17,1.17)", FI_VERSION_GE(FI_VERSION(1, 17), FI_VERSION(1, 17)));`,
		`ABI_FV("FI_VERSION_GE(2.0,1.17)", FI_VERSION_GE(FI_VERSION(2, 0), FI_VERSION(1, 17)));`,
	},
	"FI_VERSION_LT": {
		`ABI_FV("FI_VERSION_LT(1.17,1.5)", FI_VERSION_LT(FI_VERSION(1, 17), FI_VERSION(1, 5)));`,
		`ABI_FV("FI_VERSION_LT(1.5,1.17)", FI_VERSION_LT(FI_VERSION(1, 5), FI_VERSION(1, 17)));`,
		`ABI_FV("FI_VERSION_LT(1.17,1.17)", FI_VERSION_LT(FI_VERSION(1, 17), FI_VERSION(1, 17)));`,
		`ABI_FV("FI_VERSION_LT(1.17,2.0)", FI_VERSION_LT(FI_VERSION(1, 17), FI_VERSION(2, 0)));`,
	},
	"container_of": {
		`ABI_FP("container_of(fid_ep.cm)", container_of(&((struct fid_ep *)abi_U)->cm, struct fid_ep, cm));`,
		`ABI_FP("container_of(fid_ep.collective)", container_of(&((struct fid_ep *)abi_U)->collective, struct fid_ep, collective));`,
		`ABI_FP("container_of(fi_info.nic)", container_of(&((struct fi_info *)abi_U)->nic, struct fi_info, nic));`,
	},
	"count_of": {
		`{ int a7[7]; ABI_FV("count_of(int[7])", count_of(a7)); }`,
		`{ struct fi_context c; ABI_FV("count_of(fi_context.internal)", count_of(c.internal)); }`,
		`{ struct fi_context2 c; ABI_FV("count_of(fi_context2.internal)", count_of(c.internal)); }`,
	},
	"FI_CHECK_OP": {
		`{ struct fi_ops_cntr o, *po = &o; memset(&o, 0, sizeof(o)); o.adderr = (void *)abi_stub_tab[1][1];
	  o.size = sizeof(o); ABI_FV("FI_CHECK_OP(full)", !!FI_CHECK_OP(po, struct fi_ops_cntr, adderr));
	  o.size = offsetof(struct fi_ops_cntr, adderr); ABI_FV("FI_CHECK_OP(short)", !!FI_CHECK_OP(po, struct fi_ops_cntr, adderr));
	  o.size = offsetof(struct fi_ops_cntr, adderr) + 1; ABI_FV("FI_CHECK_OP(short+1)", !!FI_CHECK_OP(po, struct fi_ops_cntr, adderr));
	  o.size = sizeof(o); o.adderr = NULL; ABI_FV("FI_CHECK_OP(null op)", !!FI_CHECK_OP(po, struct fi_ops_cntr, adderr));
	  po = NULL; ABI_FV("FI_CHECK_OP(null ops)", !!FI_CHECK_OP(po, struct fi_ops_cntr, adderr)); }`,
	},
	"FI_FORMAT_PRINTF": {
		`abi_text("fnmacro FI_FORMAT_PRINTF(6,7)", ABI_XSTR(FI_FORMAT_PRINTF(6, 7)));`,
	},
	"FI_LOG": {
		`ABI_FT("FI_LOG(INFO,EP_DATA)", FI_LOG((const struct fi_provider *)abi_U, FI_LOG_INFO, FI_LOG_EP_DATA, "log %d", 1));`,
	},
	"FI_LOG_SPARSE": {
		`ABI_FT("FI_LOG_SPARSE(DEBUG,CQ)", FI_LOG_SPARSE((const struct fi_provider *)abi_U, FI_LOG_DEBUG, FI_LOG_CQ, "sparse %d", 2));`,
	},
	"FI_WARN": {
		`ABI_FT("FI_WARN(CORE)", FI_WARN((const struct fi_provider *)abi_U, FI_LOG_CORE, "warn %d", 3));`,
	},
	"FI_WARN_SPARSE": {
		`ABI_FT("FI_WARN_SPARSE(AV)", FI_WARN_SPARSE((const struct fi_provider *)abi_U, FI_LOG_AV, "warn sparse %d", 4));`,
	},
	"FI_TRACE": {
		`ABI_FT("FI_TRACE(MR)", FI_TRACE((const struct fi_provider *)abi_U, FI_LOG_MR, "trace %d", 5));`,
	},
	"FI_INFO": {
		`ABI_FT("FI_INFO(DOMAIN)", FI_INFO((const struct fi_provider *)abi_U, FI_LOG_DOMAIN, "info %d", 6));`,
	},
	"FI_DBG": {
		`ABI_FT("FI_DBG(FABRIC)", FI_DBG((const struct fi_provider *)abi_U, FI_LOG_FABRIC, "dbg %d", 7));`,
	},
	"FI_DBG_TRACE": {
		`ABI_FT("FI_DBG_TRACE(EQ)", FI_DBG_TRACE((const struct fi_provider *)abi_U, FI_LOG_EQ, "dbg trace %d", 8));`,
	},
	"FI_WARN_ONCE": {
		`ABI_FT("FI_WARN_ONCE(CNTR)x2", for (int i = 0; i < 2; i++) FI_WARN_ONCE((const struct fi_provider *)abi_U, FI_LOG_CNTR, "once %d", i));`,
	},
}

// fnMacroDecls are file-scope checks for macros that expand to parts of
// declarations.
var fnMacroDecls = map[string]string{
	"FI_FORMAT_PRINTF": "void abi_fmt_check(const char *fmt, ...) FI_FORMAT_PRINTF(1, 2);\n",
}

// objMacroDecls: file-scope checks for object-like macros that expand to
// declarations.
var objMacroDecls = map[string]struct{ decl, check string }{
	"FI_EXT_INI": {
		decl: "FI_EXT_INI\n{\n\treturn (struct fi_provider *)abi_U;\n}\n",
		check: `abi_num("macrodecl FI_EXT_INI", __builtin_types_compatible_p(__typeof__(&fi_prov_ini), struct fi_provider *(*)(void)));
	abi_begin(); abi_retv = (uintptr_t)fi_prov_ini(); abi_retcls = 5; abi_hasret = 1; abi_report("call", "fi_prov_ini");`,
	},
}

func (g *generator) emitFnMacroDecls(e *emitter) {
	e.f("\n/* Declarations built from macros. */\n")
	for _, m := range g.macros {
		if d, ok := fnMacroDecls[m.name]; ok && m.class == macroFunc {
			e.f("#ifdef %s\n%s#endif\n", m.name, d)
		}
		if d, ok := objMacroDecls[m.name]; ok && m.class != macroFunc {
			e.f("#ifdef %s\n%s#endif\n", m.name, d.decl)
		}
	}
}

func (g *generator) emitFnMacros(e *emitter) {
	e.f(`#define ABI_FV(label, ...) printf("fnmacro %%s 0x%%llx\n", label, (unsigned long long)(__VA_ARGS__))
#define ABI_FP(label, ...) do { char b_[64]; printf("fnmacro %%s %%s\n", label, abi_decode((uintptr_t)(__VA_ARGS__), ABI_PTR, b_, sizeof(b_))); } while (0)
#define ABI_FT(label, ...) do { abi_begin(); errno = 5; __VA_ARGS__; abi_append(" errno=%%d", errno); abi_report("fnmacro", label); } while (0)
`)
	for _, m := range g.macros {
		if d, ok := objMacroDecls[m.name]; ok && m.class != macroFunc {
			e.f("#ifdef %s\n\t%s\n#else\n\tabi_line(%s);\n#endif\n", m.name, d.check, cstr("macrodecl "+m.name+" undefined"))
		}
		if m.class != macroFunc {
			continue
		}
		evals := fnMacroEval[m.name]
		if len(evals) == 0 {
			continue
		}
		e.f("#ifdef %s\n", m.name)
		for _, s := range evals {
			e.f("\t%s\n", s)
		}
		e.f("#else\n\tabi_line(%s);\n#endif\n", cstr("fnmacro "+m.name+" undefined"))
	}
}

func (g *generator) emitInlineCalls(e *emitter) {
	for _, f := range g.inlines() {
		if f.oldStyle {
			e.f("\tabi_line(%s);\n", cstr("inline "+f.name+" skipped (no prototype)"))
			continue
		}
		allScalar := true
		for _, pr := range f.params {
			if g.isPointerType(pr.typeName) {
				allScalar = false
			}
		}
		spec := opSpecString(g.opSpec(f, map[string]bool{}))
		variants := 2
		if allScalar && len(f.params) > 0 {
			variants = 3
		}
		for v := 0; v < variants; v++ {
			var args []string
			for i, pr := range f.params {
				val := "0"
				switch v {
				case 1:
					val = strconv.Itoa(i + 1)
				case 2:
					if strings.Contains(pr.name, "bits") {
						val = strconv.Itoa(i + 1)
					} else {
						val = fmt.Sprintf("0x%x", 0x1a5+0x111*i)
					}
				}
				if pr.array {
					args = append(args, "(void *)abi_U")
					continue
				}
				args = append(args, fmt.Sprintf("(%s)(__builtin_classify_type((%s)0) == 5 ? (uintptr_t)abi_U : (uintptr_t)%s)",
					pr.typeName, pr.typeName, val))
			}
			call := fmt.Sprintf("%s(%s)", f.name, strings.Join(args, ", "))
			label := fmt.Sprintf("%s/v%d", f.name, v)
			e.f("\tabi_begin();\n\tabi_spec = %s;\n\tabi_armed = 1;", cstr(spec))
			e.f("\n\tif (sigsetjmp(abi_jb, 1) == 0) {\n\t\tabi_scribble();\n")
			if f.retVoid {
				e.f("\t\t%s;\n", call)
			} else {
				e.f("\t\t__auto_type r = %s;\n", call)
				e.f("\t\tabi_retv = (uintptr_t)r;\n\t\tabi_retcls = __builtin_classify_type(r);\n\t\tabi_hasret = 1;\n")
			}
			e.f("\t} else if (!abi_crashed) {\n\t\tabi_crashed = -1;\n\t}\n\tabi_armed = 0;\n")
			e.f("\tabi_report(\"inline\", %s);\n", cstr(label))
		}
	}
}

// ---------------------------------------------------------------------
// Which ops-table call an inline function makes, and with what arguments

// argKind returns how the probe decodes an argument of the given type:
// 'p' pointer, or the size in bytes of an integer ('1', '2', '4', '8').
func (g *generator) argKind(tn string) byte {
	if g.isPointerType(tn) {
		return 'p'
	}
	var ws []string
	for _, w := range strings.Fields(tn) {
		if !qualifierWords[w] {
			ws = append(ws, w)
		}
	}
	t := strings.Join(ws, " ")
	if len(ws) == 1 {
		if td, ok := g.typedefOf[t]; ok && td != tn {
			return g.argKind(td)
		}
	}
	if strings.HasPrefix(t, "enum ") {
		return '4'
	}
	switch t {
	case "int", "signed", "signed int", "unsigned", "unsigned int", "int32_t", "uint32_t":
		return '4'
	case "short", "unsigned short", "short int", "unsigned short int", "int16_t", "uint16_t":
		return '2'
	case "char", "signed char", "unsigned char", "int8_t", "uint8_t", "_Bool", "bool":
		return '1'
	}
	return '8'
}

// baseType removes qualifiers from a type name.
func baseType(tn string) string {
	var ws []string
	for _, w := range strings.Fields(tn) {
		if !qualifierWords[w] {
			ws = append(ws, w)
		}
	}
	return strings.Join(ws, " ")
}

// deref returns the type a pointer type points to.
func (g *generator) deref(tn string) (string, bool) {
	t := baseType(tn)
	if strings.HasSuffix(t, "*") {
		return baseType(strings.TrimSuffix(t, "*")), true
	}
	if td, ok := g.typedefOf[t]; ok && td != tn {
		return g.deref(td)
	}
	return "", false
}

func (g *generator) aggregateOf(tn string) *aggregate {
	t := baseType(tn)
	if td, ok := g.typedefOf[t]; ok {
		t = baseType(td)
	}
	for _, a := range g.aggs {
		if a.kind+" "+a.tag == t {
			return a
		}
	}
	return nil
}

// opSpec returns, for each ops-table slot an inline function may call
// through, the argument kinds of that slot's function type (from the
// reference headers).  Slots reached with conflicting types are left out.
func (g *generator) opSpec(f *function, seen map[string]bool) map[int]string {
	spec := map[int]string{}
	conflict := map[int]bool{}
	add := func(slot int, kinds string) {
		if conflict[slot] {
			return
		}
		if old, ok := spec[slot]; ok && old != kinds {
			delete(spec, slot)
			conflict[slot] = true
			return
		}
		spec[slot] = kinds
	}
	if seen[f.name] {
		return spec
	}
	seen[f.name] = true
	defer delete(seen, f.name)

	env := map[string]string{}
	for _, pr := range f.params {
		env[pr.name] = pr.typeName
	}
	t := f.body
	// local variables of the form "struct tag *name =" or "... ;"
	for i := 0; i+2 < len(t); i++ {
		if (t[i].s == "struct" || t[i].s == "union") && t[i+1].kind == tIdent {
			j, stars := i+2, ""
			for j < len(t) && t[j].s == "*" {
				stars += " *"
				j++
			}
			if j+1 < len(t) && t[j].kind == tIdent && (t[j+1].s == "=" || t[j+1].s == ";" || t[j+1].s == ",") {
				env[t[j].s] = t[i].s + " " + t[i+1].s + stars
			}
		}
	}
	inl := map[string]*function{}
	for _, h := range g.inlines() {
		inl[h.name] = h
	}
	for i := 0; i < len(t); i++ {
		if t[i].kind != tIdent || (i > 0 && (t[i-1].s == "->" || t[i-1].s == ".")) {
			continue
		}
		if callee, ok := inl[t[i].s]; ok && i+1 < len(t) && t[i+1].s == "(" && callee != f {
			for s, k := range g.opSpec(callee, seen) {
				add(s, k)
			}
			continue
		}
		typ, ok := env[t[i].s]
		if !ok {
			continue
		}
		for pos := i + 1; pos+1 < len(t) && (t[pos].s == "->" || t[pos].s == ".") && t[pos+1].kind == tIdent; pos += 2 {
			base := typ
			if t[pos].s == "->" {
				if base, ok = g.deref(typ); !ok {
					break
				}
			}
			a := g.aggregateOf(base)
			if a == nil {
				break
			}
			idx := -1
			for k, m := range a.members {
				if m.name == t[pos+1].s {
					idx = k
					break
				}
			}
			if idx < 0 {
				break
			}
			m := a.members[idx]
			if m.fnPtr && pos+2 < len(t) && t[pos+2].s == "(" {
				var kinds []byte
				for _, pr := range m.fnParams {
					kinds = append(kinds, g.argKind(pr.typeName))
				}
				add(idx, string(kinds))
				break
			}
			if m.typeName == "" {
				break
			}
			typ = m.typeName
		}
	}
	return spec
}

// opSpecString renders an opSpec for the probe: " slot=kinds ...".
func opSpecString(spec map[int]string) string {
	var slots []int
	for s := range spec {
		slots = append(slots, s)
	}
	sort.Ints(slots)
	var b strings.Builder
	for _, s := range slots {
		fmt.Fprintf(&b, " %d=%s", s, spec[s])
	}
	b.WriteString(" ")
	return b.String()
}

// emitCxx writes a C++ translation unit that takes the address of every
// library function, so that the symbols it references show whether the
// headers give them C linkage.  Each function is listed in a comment
// "// abi-extern NAME" for the runner.
func (g *generator) emitCxx() string {
	var b strings.Builder
	b.WriteString("// Generated by ctest/abi/abigen -- do not edit.\n")
	b.WriteString(includeLines())
	var refs []string
	for _, f := range g.externs() {
		fmt.Fprintf(&b, "// abi-extern %s\n", f.name)
		refs = append(refs, fmt.Sprintf("\t(void *)&%s,\n", f.name))
	}
	b.WriteString("void *abi_cxx_refs[] = {\n" + strings.Join(refs, "") + "};\n")
	return b.String()
}

// names lists every name the headers declare, sorted.
func (g *generator) names() string {
	var ls []string
	for _, a := range g.aggs {
		ls = append(ls, a.kind+" "+a.tag)
	}
	for _, e := range g.enums {
		if e.tag != "" {
			ls = append(ls, "enum "+e.tag)
		}
		for _, n := range e.names {
			ls = append(ls, "enumerator "+n)
		}
	}
	for _, t := range g.typedefs {
		ls = append(ls, "typedef "+t.name)
	}
	for _, m := range g.macros {
		if m.class != macroGuard {
			ls = append(ls, "macro "+m.name)
		}
	}
	for _, f := range g.funcs {
		kind := "function"
		if f.inline {
			kind = "inline"
		}
		ls = append(ls, kind+" "+f.name)
	}
	sort.Strings(ls)
	return strings.Join(ls, "\n") + "\n"
}
