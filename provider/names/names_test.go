package names

import (
	"crypto/sha256"
	"encoding/binary"
	"io"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// nsTestServer starts a serving name server for a job key of its own.
func nsTestServer(t *testing.T, uuid string, timeout time.Duration) *Server {
	t.Helper()
	job := testKey(uuid)
	ns := New(job, testPort(job), "", nopLog{})
	ns.timeout = timeout
	if !ns.TryServe() {
		t.Fatalf("port %d is taken", ns.port)
	}
	t.Cleanup(ns.Close)
	return ns
}

// rawExchange opens a connection to ns, reads the hello, sends what
// build makes of the nonce, and returns the reply (nil if the server hung
// up without one).
func rawExchange(t *testing.T, ns *Server, build func(nonce *[nsNonceLen]byte) []byte) []byte {
	t.Helper()
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ns.port))))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var hello [nsHelloLen]byte
	if _, err := io.ReadFull(c, hello[:]); err != nil || [4]byte(hello[:4]) != nsMagic {
		t.Fatalf("hello: %v %q", err, hello[:4])
	}
	nonce := [nsNonceLen]byte(hello[4:])
	if _, err := c.Write(build(&nonce)); err != nil {
		t.Fatal(err)
	}
	reply, _ := io.ReadAll(c)
	return reply
}

// signed is a request for (op, service, name) with a MAC made with key.
func signed(key Key, nonce *[nsNonceLen]byte, op byte, service uint32, name [NameLen]byte) []byte {
	b := make([]byte, nsSignedLen)
	b[1] = op
	binary.LittleEndian.PutUint32(b[nsCmdLen:], service)
	copy(b[nsCmdLen+4:], name[:])
	mac := nsMAC(key, "psns-req", nonce, b[:nsMsgLen])
	copy(b[nsMsgLen:], mac[:])
	return b
}

// TestNameServerRefusesForgeries: finding 5 of issue 8. A raw connection
// rewrote a service to a forged endpoint; now an add without the job key,
// with another job's key, or replayed from another connection is refused,
// counted, and changes nothing.
func TestNameServerRefusesForgeries(t *testing.T) {
	ns := nsTestServer(t, "0badc0de-0000-0000-0000-000000005e01", nsTimeout)
	good := [NameLen]byte{0x42, 0x42, 7, 1}
	ns.Register(7, good, OpAdd)
	forged := [NameLen]byte{0x66, 0x66, 6, 6}
	other := testKey("0badc0de-0000-0000-0000-00000000beef")

	// No MAC at all (the old protocol's bare request).
	rawExchange(t, ns, func(nonce *[nsNonceLen]byte) []byte {
		b := signed(ns.job, nonce, nsOpAdd, 7, forged)
		clear(b[nsMsgLen:])
		return b
	})
	// Another job's key.
	rawExchange(t, ns, func(nonce *[nsNonceLen]byte) []byte {
		return signed(other, nonce, nsOpAdd, 7, forged)
	})
	// A valid request, replayed on a second connection.
	var captured []byte
	if reply := rawExchange(t, ns, func(nonce *[nsNonceLen]byte) []byte {
		captured = signed(ns.job, nonce, nsOpQuery, 7, [NameLen]byte{})
		return captured
	}); len(reply) != nsSignedLen {
		t.Fatalf("a valid query got %d bytes back", len(reply))
	}
	if reply := rawExchange(t, ns, func(*[nsNonceLen]byte) []byte {
		captured[1] = nsOpAdd // and altered: the MAC no longer fits either way
		return captured
	}); len(reply) != 0 {
		t.Errorf("a replayed request was answered: %x", reply)
	}
	if n := ns.refused.Load(); n != 3 {
		t.Errorf("%d messages refused, want 3", n)
	}
	got, err := ns.Resolve("127.0.0.1", 7)
	if err != nil || got != good {
		t.Errorf("service 7 resolves to %+v (%v), want the registered %+v", got, err, good)
	}
}

// TestNameServerBounds: the record table and the connections are bounded,
// and a connection that sends nothing is dropped after the timeout.
func TestNameServerBounds(t *testing.T) {
	ns := nsTestServer(t, "0badc0de-0000-0000-0000-000000005e02", 300*time.Millisecond)
	var name [NameLen]byte
	for s := uint32(1); s <= nsMaxRecords; s++ {
		if st, _ := ns.apply(nsRequest{op: nsOpAdd, service: s, name: name}); st != nsStatusOK {
			t.Fatalf("add %d: status %d", s, st)
		}
	}
	if _, err := ns.call("127.0.0.1", nsOpAdd, nsMaxRecords+1, name); err == nil {
		t.Error("an add beyond the bound was accepted")
	}
	if _, err := ns.call("127.0.0.1", nsOpAdd, 5, name); err != nil {
		t.Errorf("replacing an existing record at the bound: %v", err)
	}

	// An idle connection is dropped.
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ns.port))))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(c); err != nil || time.Since(start) > 3*time.Second {
		t.Errorf("idle connection: %v after %v, want closed by the server after ~300ms", err, time.Since(start))
	}

	// More than nsMaxConns connections at once: the extra ones are told
	// to go away; the server keeps working. (A server of its own, whose
	// connections do not time out while the flood is being dialled.)
	ns = nsTestServer(t, "0badc0de-0000-0000-0000-000000005e07", 10*time.Second)
	var held []net.Conn
	for range nsMaxConns + 4 {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ns.port))))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// Every greeting is read before any connection closes: a close frees
	// a place, and the server may not have accepted the last ones yet.
	busy := 0
	for _, c := range held {
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		var b [4]byte
		if n, _ := io.ReadFull(c, b[:]); n == 4 && b == nsBusy {
			busy++
		}
	}
	for _, c := range held {
		c.Close()
	}
	if busy < 4 {
		t.Errorf("%d connections turned away, want at least 4", busy)
	}
	// The held connections are closed: their handlers end at once.
	deadline := time.Now().Add(3 * time.Second)
	for {
		_, err := ns.call("127.0.0.1", nsOpAdd, 5, name)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the flood: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// flakyListener fails Accept with EMFILE a number of times first.
type flakyListener struct {
	net.Listener
	fails atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestNameServerSurvivesEMFILE: an accept that fails for want of
// descriptors used to stop the server for good.
func TestNameServerSurvivesEMFILE(t *testing.T) {
	job := testKey("0badc0de-0000-0000-0000-000000005e03")
	ns := New(job, testPort(job), "", nopLog{})
	ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ns.port))))
	if err != nil {
		t.Fatal(err)
	}
	fl := &flakyListener{Listener: ln}
	fl.fails.Store(5)
	ns.lns = []net.Listener{fl}
	t.Cleanup(ns.Close)
	go ns.serve(fl)
	ns.Register(9, [NameLen]byte{1, 2, 3}, OpAdd)
	if _, err := ns.call("127.0.0.1", nsOpQuery, 9, [NameLen]byte{}); err != nil {
		t.Errorf("after 5 EMFILEs: %v", err)
	}
}

// FuzzNameServerMessage drives the server's request decoder and the
// record table with arbitrary messages, signed (so the bytes behind the
// MAC are reached) or not: nothing may panic, and the table stays within
// its bound.
func FuzzNameServerMessage(f *testing.F) {
	job := testKey("0badc0de-0000-0000-0000-000000005e06")
	var nonce [nsNonceLen]byte
	f.Add(signed(job, &nonce, nsOpAdd, 7, [NameLen]byte{1}), true)
	f.Add(signed(job, &nonce, nsOpQuery, 0, [NameLen]byte{}), false)
	f.Add([]byte{}, true)
	ns := New(job, testPort(job), "", nopLog{})
	f.Fuzz(func(t *testing.T, msg []byte, sign bool) {
		if sign && len(msg) >= nsMsgLen {
			b := make([]byte, nsSignedLen)
			copy(b, msg[:nsMsgLen])
			mac := nsMAC(job, "psns-req", &nonce, b[:nsMsgLen])
			copy(b[nsMsgLen:], mac[:])
			msg = b
		}
		r, ok := parseRequest(job, &nonce, msg)
		if !ok {
			return
		}
		if r.op > nsOpQuery {
			t.Fatalf("accepted op %d", r.op)
		}
		ns.apply(r)
		if len(ns.recs) > nsMaxRecords {
			t.Fatalf("%d records", len(ns.recs))
		}
	})
}

// TestNameServerListensOnIface: FI_PSM2_IFACE as an interface name, an
// address or a network puts the server on the wire's address too (a
// network value used to leave it on loopback, unreachable from other
// hosts).
func TestNameServerListensOnIface(t *testing.T) {
	var ip net.IP
	var name string
	ifs, _ := net.Interfaces()
	for _, ifc := range ifs {
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && ip == nil {
				ip, name = n.IP.To4(), ifc.Name
			}
		}
	}
	if ip == nil {
		t.Skip("no non-loopback IPv4 address here")
	}
	for _, iface := range []string{name, ip.String(), ip.String() + "/32"} {
		ns := New(Key{1}, testPort(Key{1}), iface, nopLog{})
		got := ns.listenAddrs()
		if len(got) != 2 || got[0] != "127.0.0.1" || got[1] != ip.String() {
			t.Errorf("FI_PSM2_IFACE=%s: listens on %v, want 127.0.0.1 and %v", iface, got, ip)
		}
	}
}

// TestNameServerListensEverywhere: without FI_PSM2_IFACE the server binds
// every interface, as psm2's does, so other hosts find it with no setting.
func TestNameServerListensEverywhere(t *testing.T) {
	ns := New(Key{2}, testPort(Key{2}), "", nopLog{})
	if got := ns.listenAddrs(); len(got) != 1 || got[0] != "0.0.0.0" {
		t.Errorf("listens on %v, want 0.0.0.0", got)
	}
}

// testKey is a job key of the test's own, from a name.
func testKey(name string) Key {
	sum := sha256.Sum256([]byte(name))
	return Key(sum[:16])
}

// testPort is the port for key k, spread over 20000-59999 as the
// provider's derivation spreads keys.
func testPort(k Key) uint16 { return 20000 + uint16(binary.LittleEndian.Uint32(k[:])%40000) }

type nopLog struct{}

func (nopLog) Infof(fi.LogSubsys, string, ...any) {}
func (nopLog) Warnf(fi.LogSubsys, string, ...any) {}
