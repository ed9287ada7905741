package provider

import (
	"sync"

	"github.com/gopsm2/libfabric-psm2/transport"
)

// The endpoints of other processes on this host that this process's AVs
// have named: how many ranks of the job share the host, so that a reader
// waiting on an empty CQ can tell a host its own job oversubscribes (more
// local ranks than CPUs, where the peer it waits for may need its CPU
// right now) from one crowded by others (cmd/libfabric-psm2/cq.c yields
// after a short spin only in the first). Open MPI makes the same choice
// for vader from its launcher's local rank count (mpi_yield_when_idle);
// an AV names every rank under any launcher. A high-water mark for the
// process's life, bounded: an id is counted once, at most
// maxLocalPeers of them.
var localPeers struct {
	sync.Mutex
	ids map[uint64]struct{} // other endpoints on this host, named
	own map[uint64]struct{} // this process's endpoints, opened
}

// maxLocalPeers bounds each of localPeers' sets (more ranks on one host
// than any machine has CPUs).
const maxLocalPeers = 1024

// noteOwnEndpoint records that this process opened endpoint epid: an AV
// that names it names no other rank.
func noteOwnEndpoint(epid uint64) {
	localPeers.Lock()
	defer localPeers.Unlock()
	addBounded(&localPeers.own, epid)
}

// addBounded adds id to *set (made if nil) unless it holds maxLocalPeers.
// The caller holds localPeers' lock.
func addBounded(set *map[uint64]struct{}, id uint64) {
	if *set == nil {
		*set = make(map[uint64]struct{})
	}
	if len(*set) < maxLocalPeers {
		(*set)[id] = struct{}{}
	}
}

// noteLocalName counts each context of name n (one, or a scalable
// endpoint's N: each is driven by a thread of its own, as a rank's
// endpoint is) that is another endpoint on ours's host (noteLocalPeer).
// Counted as one, a peer's scalable endpoint of 2 contexts made 4
// threads look like 2 ranks on 2 CPUs, and readers napped as if other
// jobs crowded them: bench/ctxrate -m sep -n 2 at 0.70-0.77x the rate of
// 2 separate endpoints.
func noteLocalName(ours uint64, n EPName) {
	for i := range n.contexts() {
		noteLocalPeer(ours, n.contextEPID(i), i)
	}
}

// noteLocalPeer counts peer if it is another endpoint on ours's host:
// the same network address, or, for ids without one (shm only), another
// process (the same process's endpoints are not other ranks) or another
// context ctx of a scalable endpoint of one.
func noteLocalPeer(ours, peer uint64, ctx int) {
	if ours == 0 || peer == ours {
		return
	}
	_, _, oursNet := transport.EPIDAddr(ours)
	_, _, peerNet := transport.EPIDAddr(peer)
	key := peer
	switch {
	case oursNet && peerNet:
		if !transport.SameHost(ours, peer) {
			return
		}
	case !oursNet && !peerNet:
		if peer>>32 == ours>>32 {
			return // another endpoint of this process
		}
		key = peer>>32<<32 | uint64(ctx) // the process (its context)
	default:
		return
	}
	localPeers.Lock()
	defer localPeers.Unlock()
	addBounded(&localPeers.ids, key)
}

// noteKernelPeer counts peer, an endpoint whose network handshake said it
// runs on this kernel (hfi.Config.SameKernel): a rank in another network
// namespace of this machine (a container, nshost/'s test hosts) has
// another address but shares the CPUs, as a rank at this address does.
// Counted only as a crowd of other jobs, such ranks got naps instead of
// yields, and a rank that spun waited out its peer's time slice: 2
// namespace hosts x 2 ranks on 2 CPUs, Open MPI cm/ofi, bench/patterns.c,
// 2 alternating runs, before -> after (btl tcp): Sendrecv 64 KiB
// 1246-1694 -> 337-338 us (268-293), 1 MiB 4881-5587 -> 2953-3461
// (2130-2302); Allreduce 256 KiB 2214-2529 -> 820-1410 (818-1082).
func noteKernelPeer(peer uint64) {
	localPeers.Lock()
	defer localPeers.Unlock()
	addBounded(&localPeers.ids, peer)
}

// LocalProcs is the number of the job's endpoints on this host that this
// process knows of, its own included: 1 + the local endpoints its AVs
// have named that it did not open (a process with several endpoints
// counts once for itself; a peer with several, once for each named).
func LocalProcs() int {
	localPeers.Lock()
	defer localPeers.Unlock()
	n := 1
	for id := range localPeers.ids {
		if _, mine := localPeers.own[id]; !mine {
			n++
		}
	}
	return n
}
