package shm

import "sync"

// A rendezvous between two endpoints of one process needs no system call:
// the receiver copies straight from the sender's buffer. It finds the
// buffer here, by the sender's endpoint id and send id, rather than by the
// address in the RTS cell, so a forged cell can never make this process
// dereference an address it did not hand out. The mutex also orders the
// sender's writes before the receiver's reads, and the reads before the
// sender reuses the buffer, for the race detector as for the memory model.
var local struct {
	mu sync.Mutex
	m  map[localKey][]byte
}

type localKey struct{ epid, id uint64 }

// localPut publishes the data of send id of endpoint epid.
func localPut(epid, id uint64, b []byte) {
	local.mu.Lock()
	if local.m == nil {
		local.m = make(map[localKey][]byte)
	}
	local.m[localKey{epid, id}] = b
	local.mu.Unlock()
}

// localGet returns the data of send id of endpoint epid, if it is still
// published.
func localGet(epid, id uint64) ([]byte, bool) {
	local.mu.Lock()
	b, ok := local.m[localKey{epid, id}]
	local.mu.Unlock()
	return b, ok
}

// localDrop withdraws the data of send id of endpoint epid. The receiver
// calls it when it has copied the data, the sender when the send ends;
// the second call finds nothing.
func localDrop(epid, id uint64) {
	local.mu.Lock()
	delete(local.m, localKey{epid, id})
	local.mu.Unlock()
}
