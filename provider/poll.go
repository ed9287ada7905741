package provider

import (
	"sync"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// PollAttr is struct fi_poll_attr.
type PollAttr struct {
	Flags uint64
}

type pollMember struct {
	w   waitable
	ctx uintptr // the member fid's context, returned by fi_poll
}

// PollSet is a poll set (fi_poll_open): CQs and counters whose progress
// fi_poll drives and whose contexts it returns when they have events. It
// follows libfabric's util poll set, which psm2 uses: adding a member twice
// keeps one entry, and removing one that is not a member succeeds.
type PollSet struct {
	dom *Domain

	mu      sync.Mutex
	members []pollMember // replaced, never modified in place
	closed  bool
}

// OpenPollSet opens a poll set on the domain; attr.Flags must be 0.
func (d *Domain) OpenPollSet(attr *PollAttr) (*PollSet, error) {
	if d == nil || attr == nil {
		return nil, fi.EINVAL
	}
	if attr.Flags != 0 {
		return nil, fi.EINVAL
	}
	d.refs.Add(1)
	return &PollSet{dom: d}, nil
}

// Add makes w (a CQ or counter) a member; ctx is what fi_poll returns for
// it. EQs and wait sets cannot be members of a domain's poll set.
func (ps *PollSet) Add(w Waitable, ctx uintptr, flags uint64) error {
	switch w.(type) {
	case nil, *EQ, *WaitSet:
		return fi.EINVAL
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return fi.EINVAL
	}
	for _, m := range ps.members {
		if m.w == w {
			return nil
		}
	}
	m := make([]pollMember, len(ps.members), len(ps.members)+1)
	copy(m, ps.members)
	ps.members = append(m, pollMember{w: w, ctx: ctx})
	return nil
}

// Del removes w from the set. Removing an object that is not a member
// succeeds, as in libfabric.
func (ps *PollSet) Del(w Waitable, flags uint64) error {
	if w == nil {
		return fi.EINVAL
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	m := make([]pollMember, 0, len(ps.members))
	for _, x := range ps.members {
		if x.w != w {
			m = append(m, x)
		}
	}
	ps.members = m
	return nil
}

// Poll is fi_poll: it drives every member's progress and writes the
// contexts of the members that have events into ctxs, returning how many
// it wrote (0 when none has one). Every member is polled even when ctxs
// is full.
func (ps *PollSet) Poll(ctxs []uintptr) (int, error) {
	ps.mu.Lock()
	members := ps.members
	ps.mu.Unlock()
	n := 0
	for _, m := range members {
		if m.w.ready() && n < len(ctxs) {
			ctxs[n] = m.ctx
			n++
		}
	}
	return n, nil
}

// Close closes the poll set; its members are left as they are.
func (ps *PollSet) Close() error {
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		return fi.EINVAL
	}
	ps.closed = true
	ps.members = nil
	ps.mu.Unlock()
	ps.dom.refs.Add(-1)
	return nil
}
