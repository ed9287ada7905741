//go:build !amd64 || race

package atomicx

import "sync/atomic"

// StoreRel64 stores v into *p with at least release ordering (here:
// sync/atomic's sequentially consistent store).
func StoreRel64(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

// StoreRel32 is StoreRel64 for a 32-bit word.
func StoreRel32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }
