// Package fast is the C fast path: the same-host data-path calls the
// library answers in C, with no call into Go (fi_inject, fi_send, fi_tsend,
// fi_recv, fi_trecv, small atomics, and fi_cq_read's delivery, completions
// and idle answer). It has no Go API: the shim (package main, ep.c and
// cq.c) calls the entry points fast.h declares, and importing this
// package links them in.
//
// Each entry point is a translation unit of its own (send.c, deliver.c,
// atomic.c, serve.c, idle.c), and the small pieces they share are inline
// functions in one header per concern (lock.h, page.h, ring.h, cell.h,
// stream.h, match.h, atomic.h). ucopy.c copies user memory without
// faulting. layout.h, every offset, size, flag and tunable C shares with
// Go, is generated from the Go constants (internal/cabi); no number in
// these files is kept by hand.
//
// Where C and Go implement the same rule, a differential test holds them
// together (docs/architecture.md lists the pairs): the cell format
// (shm/fastc_diff_test.go), matching (provider/fastc_diff_test.go), the
// guarded copy (internal/fastc), the ring under hostile contents
// (ctest/fastfuzz.c).
//
// The shim's directory holds links to fast.h and layout.h, and
// internal/fastc links to the headers it tests: the go command rebuilds a
// package when files in its own directory change, not headers it finds
// elsewhere.
//
//go:generate go run ../../../internal/cabi/cabigen -o layout.h
package fast

/*
#cgo CFLAGS: -I${SRCDIR}/../../../include -O2 -Wall
*/
import "C"
