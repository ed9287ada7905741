package provider

import (
	"testing"

	"github.com/gopsm2/libfabric-psm2/transport"
)

// TestLocalProcs: the ranks on this host are the endpoints an AV names
// that share our address (or, without one, are another process), less
// those this process opened; the sets are bounded.
func TestLocalProcs(t *testing.T) {
	saved := localPeers.ids
	savedOwn := localPeers.own
	t.Cleanup(func() { localPeers.ids, localPeers.own = saved, savedOwn })
	localPeers.ids, localPeers.own = nil, nil

	host := [4]byte{10, 0, 0, 1}
	ours := transport.NetEPID(host, 5000, 0)
	noteOwnEndpoint(ours)
	noteOwnEndpoint(transport.NetEPID(host, 5001, 1)) // a second endpoint of ours
	if n := LocalProcs(); n != 1 {
		t.Fatalf("no peers named: %d local processes, want 1", n)
	}
	noteLocalPeer(ours, ours, 0)                                             // ourselves
	noteLocalPeer(ours, transport.NetEPID(host, 5001, 1), 0)                 // our other endpoint
	noteLocalPeer(ours, transport.NetEPID([4]byte{10, 0, 0, 2}, 6000, 0), 0) // another host
	noteLocalPeer(ours, transport.ShmEPID(77, 0), 0)                         // shm-only id, we have an address
	noteLocalPeer(0, transport.NetEPID(host, 7000, 0), 0)                    // no endpoint of ours yet
	if n := LocalProcs(); n != 1 {
		t.Fatalf("only ourselves and other hosts named: %d local processes, want 1", n)
	}
	for port := uint16(6000); port < 6003; port++ {
		noteLocalPeer(ours, transport.NetEPID(host, port, 0), 0)
		noteLocalPeer(ours, transport.NetEPID(host, port, 0), 0) // named twice, counted once
	}
	if n := LocalProcs(); n != 4 {
		t.Fatalf("3 peers on this host: %d local processes, want 4", n)
	}

	// Without network addresses: processes, by pid.
	localPeers.ids = nil
	me := transport.ShmEPID(100, 0)
	noteLocalPeer(me, transport.ShmEPID(100, 1), 0) // this process
	noteLocalPeer(me, transport.ShmEPID(101, 0), 0)
	noteLocalPeer(me, transport.ShmEPID(101, 1), 0) // the same process
	noteLocalPeer(me, transport.NetEPID(host, 6000, 0), 0)
	if n := LocalProcs(); n != 2 {
		t.Fatalf("one other process: %d local processes, want 2", n)
	}

	// A scalable endpoint's contexts count one each (a thread drives
	// each), by address or, without one, within its process.
	localPeers.ids = nil
	noteLocalName(ours, EPName{EPID: transport.NetEPID(host, 6100, 0), Type: EPNameScalable, SepID: 2})
	noteLocalName(me, EPName{EPID: transport.ShmEPID(102, 0), Type: EPNameScalable, SepID: 3})
	if n := LocalProcs(); n != 1+2+3 {
		t.Fatalf("scalable endpoints of 2 and 3 contexts: %d local processes, want 6", n)
	}

	localPeers.ids = nil
	for i := 0; i < 2*maxLocalPeers; i++ {
		noteLocalPeer(ours, transport.NetEPID(host, uint16(10000+i), 0), 0)
	}
	if n := LocalProcs(); n != 1+maxLocalPeers {
		t.Fatalf("%d peers named: %d local processes, want the bound %d", 2*maxLocalPeers, n, 1+maxLocalPeers)
	}
}

// TestKernelPeers: a peer whose handshake said it shares this kernel counts
// as a local rank whatever its address (another network namespace), once,
// and not if it is one of this process's own endpoints.
func TestKernelPeers(t *testing.T) {
	saved, savedOwn := localPeers.ids, localPeers.own
	t.Cleanup(func() { localPeers.ids, localPeers.own = saved, savedOwn })
	localPeers.ids, localPeers.own = nil, nil

	ours := transport.NetEPID([4]byte{10, 0, 0, 1}, 5000, 0)
	mine := transport.NetEPID([4]byte{10, 0, 1, 1}, 5001, 0)
	noteOwnEndpoint(ours)
	noteOwnEndpoint(mine)
	other := transport.NetEPID([4]byte{10, 0, 0, 2}, 6000, 0)
	noteLocalPeer(ours, other, 0) // another address: another host, by the AV
	if n := LocalProcs(); n != 1 {
		t.Fatalf("a peer at another address: %d local processes, want 1", n)
	}
	noteKernelPeer(other)
	noteKernelPeer(other)
	noteKernelPeer(mine)
	if n := LocalProcs(); n != 2 {
		t.Fatalf("that peer on this kernel, told twice, and our own endpoint: %d local processes, want 2", n)
	}
}
