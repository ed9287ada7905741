// Command mangen writes the manual page fi_psm2go(7) from the
// documentation: what the library is, every variable it reads
// (docs/config.md, whose provider table a test keeps equal to
// provider/params.go), and how it differs from the real psm2 provider
// (docs/compat.md). make man runs it:
//
//	go run ./internal/mangen -o build/man/fi_psm2go.7 docs/config.md docs/compat.md
package main
