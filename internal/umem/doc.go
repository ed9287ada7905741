// Package umem copies to and from memory the application handed to the
// provider, which the kernel may refuse: a buffer that is PROT_NONE,
// unmapped, read-only, or a file mapping past its end. A plain Go copy
// from or into such memory is a fatal error of the whole process
// ("unexpected fault address"); with this package the fault becomes a
// result the caller turns into an error completion.
//
// It relies on the Go runtime's own SIGSEGV/SIGBUS handler, which turns a
// fault in Go code into a panic when runtime/debug.SetPanicOnFault is set
// for the goroutine; Guard sets it and Catch recovers that panic. If the
// application later replaced that handler without chaining to it, the
// fault is the application's, as it is for memcpy in a C library.
//
// A guarded copy costs 7-10 ns more than a plain one (two calls that flip
// the goroutine's flag, and a deferred recover).
package umem
