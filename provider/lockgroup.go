package provider

import (
	"sync/atomic"
	"unsafe"
)

// Lock slots. The domain lock is a set of futex words, the slots of the
// domain page (fastpath.go: domSlots). Go takes all of them (domLock); a
// C fast path takes only the slot its endpoint page or CQ page names
// (epfLock, cqLock), so threads that each drive their own endpoints and
// CQs, the threads of a scalable endpoint's contexts above all, do not
// serialize on one word.
//
// That is sound because of what C touches under a slot: the pages of its
// endpoints and CQs, the rings and peer descriptors those endpoints own,
// and the words of the slot itself (receives and completions C queued,
// atomics C completed or posted: the counters Go checks when it takes the
// lock). What several endpoints share C either only reads (the MR table,
// the domain's busy word and endpoint list, all written by Go under every
// slot) or reaches through atomics that already serve other processes (a
// peer's ring, a bounce buffer's busy bits). An endpoint and the CQs it is
// bound to must therefore share a slot: a CQ read delivers for every
// endpoint whose receive CQ it is and hands out the send completions C
// queued for any endpoint whose transmit CQ it is. So the slots follow
// the connected components of the graph of enabled endpoints and CQs,
// joined by their bindings: the first component takes slot 0, the next
// ones slots 1 to maxSlots-1, and components past those share the last
// (sharing a slot is always correct, only slower). A domain with one
// component (any domain of one endpoint) has slot 0 alone, so Go takes one
// word, as when there was one lock.
//
// A page's slot changes only while Go holds every slot; a C thread that
// read the old one and then took it finds that the page names another
// and starts again (fast/page.h: psm2_slot_lock).
//
// Each slot also lists the rings of its endpoints, so that an idle check
// on a CQ looks only at the rings it would deliver from: a thread polling
// its own CQ does not call into Go for a message another thread's
// endpoint received.

// slotAddr is the address of slot i of the domain page (0 without one).
func (d *Domain) slotAddr(i int) uint64 {
	if d.fast == nil {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(&d.fast[domSlots+i*slotSize])))
}

// slotsSay reports whether the word at offset off of some slot in use is
// nonzero. The caller holds the lock.
func (d *Domain) slotsSay(off int) bool {
	for i := range d.slotsUsed {
		if atomic.LoadUint64(fastWord(d.fast, domSlots+i*slotSize+off)) != 0 {
			return true
		}
	}
	return false
}

// clearSlots zeroes the word at offset off of every slot in use. The
// caller holds the lock.
func (d *Domain) clearSlots(off int) {
	for i := range d.slotsUsed {
		if w := fastWord(d.fast, domSlots+i*slotSize+off); atomic.LoadUint64(w) != 0 {
			atomic.StoreUint64(w, 0)
		}
	}
}

// regroupLocked puts the domain's endpoints and CQs into slots after a
// binding, an enable or a close, and takes or lets go of the words of the
// slots that came into use or went out of it. The caller holds the lock
// (every slot in use); Domain.unlock calls it before it lets go.
func (d *Domain) regroupLocked() {
	d.regroup = false
	if !d.fastLock {
		return
	}
	eps := make([]*Endpoint, 0, len(d.eps))
	for _, ep := range d.eps {
		if ep.fast.page != nil {
			eps = append(eps, ep)
		}
	}
	// Union-find over the endpoints (0..len(eps)-1) and the CQs after
	// them.
	node := make(map[*CQ]int, len(d.cqs))
	for i, cq := range d.cqs {
		node[cq] = len(eps) + i
	}
	parent := make([]int, len(eps)+len(d.cqs))
	for i := range parent {
		parent[i] = i
	}
	find := func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	for i, ep := range eps {
		for _, cq := range [2]*CQ{ep.rxCQ, ep.txCQ} {
			if j, ok := node[cq]; ok {
				parent[find(j)] = find(i)
			}
		}
	}
	// A slot per component of endpoints, in endpoint order; one slot
	// for all when C delivers for none of them (more endpoints than the
	// domain page lists).
	slot := make([]int, len(parent))
	for i := range slot {
		slot[i] = -1
	}
	next := 0
	for i := range eps {
		if r := find(i); slot[r] < 0 {
			if len(eps) > maxFastEPs {
				slot[r] = 0
			} else {
				slot[r] = min(next, maxSlots-1)
				next++
			}
		}
	}
	used := max(1, min(next, maxSlots))
	slotOf := func(x int) int { return max(slot[find(x)], 0) }
	hasCQ := make([]bool, len(parent))
	for i := range d.cqs {
		hasCQ[find(len(eps)+i)] = true
	}
	// Each slot lists its endpoints' rings, and every slot the rings of
	// the endpoints whose messages only Go takes because no CQ of
	// theirs is read in C (no page, or no CQ): a read of any CQ calls
	// Go for those, as it did when the domain had one list.
	var rings [maxSlots][]uint64
	var orphans []uint64
	for i, ep := range eps {
		s := slotOf(i)
		atomic.StoreUint64(fastWord(ep.fast.page, epfLock), d.slotAddr(s))
		if hasCQ[find(i)] {
			rings[s] = probes(ep.tp, rings[s])
		} else {
			orphans = probes(ep.tp, orphans)
		}
	}
	for _, ep := range d.eps {
		if ep.fast.page == nil {
			orphans = probes(ep.tp, orphans)
		}
	}
	for i, cq := range d.cqs {
		atomic.StoreUint64(fastWord(cq.fast, cqLock), d.slotAddr(slotOf(len(eps)+i)))
	}
	for s := range maxSlots {
		base := domSlots + s*slotSize
		rings[s] = append(rings[s], orphans...)
		n := uint64(len(rings[s]))
		if n > slotMaxRings {
			n = slotBlind
		}
		for k := range slotMaxRings {
			w := uint64(0)
			if n != slotBlind && k < len(rings[s]) {
				w = rings[s][k]
			}
			atomic.StoreUint64(fastWord(d.fast, base+slotRings+8*k), w)
		}
		atomic.StoreUint64(fastWord(d.fast, base+slotNRings), n)
	}
	d.setSlotsUsed(used)
}

// setSlotsUsed makes slots 0..n-1 the ones Go takes: those coming into use
// are taken now (a C thread may hold one for a moment, having read a page
// before it moved), those going out of use let go. The caller holds the
// lock.
func (d *Domain) setSlotsUsed(n int) {
	old := d.slotsUsed
	for i := n; i < old; i++ {
		if d.locking {
			unlockWord(d.mu.more[i-1])
		}
	}
	if n < old {
		d.mu.more = d.mu.more[:n-1]
	}
	for i := old; i < n; i++ {
		w := (*uint32)(unsafe.Pointer(&d.fast[domSlots+i*slotSize+slotLock]))
		if d.locking {
			lockWord(w)
		}
		d.mu.more = append(d.mu.more, w)
	}
	d.slotsUsed = n
}
