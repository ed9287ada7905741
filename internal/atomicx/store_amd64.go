//go:build amd64 && !race

package atomicx

// StoreRel64 stores v into *p with release ordering: every load and store
// the calling goroutine made before it is visible to another thread (or
// process) that loads v from *p with an acquire (or stronger) load.
//
//go:noescape
func StoreRel64(p *uint64, v uint64)

// StoreRel32 is StoreRel64 for a 32-bit word.
//
//go:noescape
func StoreRel32(p *uint32, v uint32)
