//go:build linux

package shm

import (
	"bytes"
	"testing"
	"time"

	"github.com/gopsm2/libfabric-psm2/transport"
)

// TestPeerClosedAfterSendDelivers: a sender whose copy rendezvous
// completed (every chunk in our ring) and which then closed is found
// closed at our next check, before we have taken the chunks: they are
// still delivered, and the fetch completes intact.
func TestPeerClosedAfterSendDelivers(t *testing.T) {
	a, b, ab := pair(t, noCMA, func(c *Config) { c.ConnTimeout = 200 * time.Millisecond })
	n := 3*b.seg.BufferSize() - 100 // three chunks
	payload := pattern(n, 7)
	sendAll(t, a, b, ab, transport.Header{Tag: 1, Len: uint64(n)}, [][]byte{payload}, 1, 0)
	d := recvOne(t, a, b)
	dst := make([]byte, n)
	if done, _, err := b.Fetch(&d.Rndv, dst, 9); done || err != nil {
		t.Fatalf("Fetch = %v, %v; want a copy rendezvous under way", done, err)
	}
	pollUntil(t, 5*time.Second, func() bool { _, ok := a.rec.sendDone[1]; return ok }, a)
	if err := a.rec.sendDone[1]; err != nil {
		t.Fatalf("send: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		b.nextCheck = 0 // a check at every poll, each after one cell
		b.Endpoint.Poll(b.rec, 1)
		if _, ok := b.rec.fetchDone[9]; ok {
			break
		}
	}
	res, ok := b.rec.fetchDone[9]
	if !ok || res.Err != nil || res.N != n || !bytes.Equal(dst, payload) {
		t.Fatalf("fetch: done %v, %d bytes, %v; intact %v", ok, res.N, res.Err, bytes.Equal(dst, payload))
	}
	// What comes next fails as before.
	ba, err := b.Connect(a.EPID())
	if err == nil {
		_, err = b.Send(ba, &transport.Header{Len: 1}, [][]byte{{1}}, 2, 0)
	}
	if err == nil {
		t.Error("a send to the closed peer succeeded")
	}
}
