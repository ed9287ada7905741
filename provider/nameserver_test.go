package provider

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// TestNameServer: an endpoint's (service, name) registered with the
// node's server is what fi_getinfo(node, service) finds; another process
// of the job (a second provider, which finds the port taken) registers
// through the first one's server; an unknown service is ENODATA.
func TestNameServer(t *testing.T) {
	uuid := "0badc0de-0000-0000-0000-00000000abcd"
	env := map[string]string{"FI_PSM2_UUID": uuid}
	p1, _ := newTestProvider(t, env)
	p2, _ := newTestProvider(t, env)
	ns1, ns2 := p1.names(), p2.names()
	t.Cleanup(func() { ns1.close(); ns2.close() })
	if ns1.lns == nil || ns2.lns != nil {
		t.Fatalf("want the first provider to serve and the second to be a client: %v %v", ns1.lns, ns2.lns)
	}
	a := EPName{EPID: makeEPID(4242, 7, 1), Type: EPNameRegular}
	b := EPName{EPID: makeEPID(4343, 7, 2), Type: EPNameRegular}
	ns1.register(9228, a, nsOpAdd)
	ns2.register(9229, b, nsOpAdd)
	for _, tc := range []struct {
		service string
		want    EPName
	}{{"9228", a}, {"9229", b}} {
		infos, err := p2.GetInfo(fi.Version(1, 17), "127.0.0.1", tc.service, 0, nil)
		if err != nil || len(infos) == 0 {
			t.Fatalf("GetInfo(127.0.0.1, %s): %v", tc.service, err)
		}
		got, err := UnmarshalEPName(infos[0].DestAddr)
		if err != nil || got != tc.want {
			t.Errorf("service %s resolves to %+v, want %+v", tc.service, got, tc.want)
		}
	}
	ns2.register(9229, b, nsOpDel)
	if _, err := p1.GetInfo(fi.Version(1, 17), "127.0.0.1", "9229", 0, nil); !errors.Is(err, fi.ENODATA) {
		t.Errorf("a deleted service: %v, want ENODATA", err)
	}
	if _, err := p1.GetInfo(fi.Version(1, 17), "127.0.0.1", "4711", 0, nil); !errors.Is(err, fi.ENODATA) {
		t.Errorf("an unknown service: %v, want ENODATA", err)
	}
}

// nsTestServer starts a serving name server for a job key of its own.
func nsTestServer(t *testing.T, uuid string, timeout time.Duration) *nameServer {
	t.Helper()
	job, err := ParseUUID(uuid)
	if err != nil {
		t.Fatal(err)
	}
	ns := newNameServer(job, "", logger{})
	ns.timeout = timeout
	if !ns.tryServe() {
		t.Fatalf("port %d is taken", ns.port)
	}
	t.Cleanup(ns.close)
	return ns
}

// rawExchange opens a connection to ns, reads the hello, sends what
// build makes of the nonce, and returns the reply (nil if the server hung
// up without one).
func rawExchange(t *testing.T, ns *nameServer, build func(nonce *[nsNonceLen]byte) []byte) []byte {
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
func signed(key UUID, nonce *[nsNonceLen]byte, op byte, service uint32, name [EPNameLen]byte) []byte {
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
	good := EPName{EPID: makeEPID(4242, 7, 1), Type: EPNameRegular}
	ns.register(7, good, nsOpAdd)
	var forged [EPNameLen]byte
	EPName{EPID: makeEPID(6666, 6, 6), Type: EPNameRegular}.put(forged[:])
	other, _ := ParseUUID("0badc0de-0000-0000-0000-00000000beef")

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
		captured = signed(ns.job, nonce, nsOpQuery, 7, [EPNameLen]byte{})
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
	got, err := ns.resolve("127.0.0.1", 7)
	if err != nil || got != good {
		t.Errorf("service 7 resolves to %+v (%v), want the registered %+v", got, err, good)
	}
}

// TestNameServerBounds: the record table and the connections are bounded,
// and a connection that sends nothing is dropped after the timeout.
func TestNameServerBounds(t *testing.T) {
	ns := nsTestServer(t, "0badc0de-0000-0000-0000-000000005e02", 300*time.Millisecond)
	var name [EPNameLen]byte
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
	job, _ := ParseUUID("0badc0de-0000-0000-0000-000000005e03")
	ns := newNameServer(job, "", logger{})
	ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ns.port))))
	if err != nil {
		t.Fatal(err)
	}
	fl := &flakyListener{Listener: ln}
	fl.fails.Store(5)
	ns.lns = []net.Listener{fl}
	t.Cleanup(ns.close)
	go ns.serve(fl)
	ns.register(9, EPName{EPID: makeEPID(1, 2, 3), Type: EPNameRegular}, nsOpAdd)
	if _, err := ns.call("127.0.0.1", nsOpQuery, 9, [EPNameLen]byte{}); err != nil {
		t.Errorf("after 5 EMFILEs: %v", err)
	}
}

// TestNameServerPortHeldByStranger: a process that is not our name server
// holds the port (it accepts and says nothing, or speaks another
// protocol): fi_getinfo(node, service) fails within the timeout instead
// of hanging, with the reason in the log.
func TestNameServerPortHeldByStranger(t *testing.T) {
	for _, tc := range []struct {
		name  string
		greet []byte
	}{{"silent", nil}, {"another protocol", []byte("SSH-2.0-OpenSSH_9.2\r\n")}} {
		t.Run(tc.name, func(t *testing.T) {
			uuid := "0badc0de-0000-0000-0000-000000005e04"
			if tc.greet != nil {
				uuid = "0badc0de-0000-0000-0000-000000005e05"
			}
			job, _ := ParseUUID(uuid)
			ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(job.NameServerPort()))))
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					if tc.greet != nil {
						c.Write(tc.greet)
					}
					defer c.Close()
				}
			}()
			p, h := newTestProvider(t, map[string]string{"FI_PSM2_UUID": uuid})
			ns := p.names()
			t.Cleanup(ns.close)
			start := time.Now()
			_, err = p.GetInfo(fi.Version(1, 17), "127.0.0.1", "9228", 0, nil)
			if err == nil || time.Since(start) > nsTimeout+time.Second {
				t.Fatalf("GetInfo = %v after %v; want an error within the timeout", err, time.Since(start))
			}
			if !strings.Contains(strings.Join(h.warnings(), ""), "held by a process that is not this job's name server") {
				t.Errorf("no warning about the port in the log:\n%s", strings.Join(h.warnings(), ""))
			}
		})
	}
}

// FuzzNameServerMessage drives the server's request decoder and the
// record table with arbitrary messages, signed (so the bytes behind the
// MAC are reached) or not: nothing may panic, and the table stays within
// its bound.
func FuzzNameServerMessage(f *testing.F) {
	job, _ := ParseUUID("0badc0de-0000-0000-0000-000000005e06")
	var nonce [nsNonceLen]byte
	f.Add(signed(job, &nonce, nsOpAdd, 7, [EPNameLen]byte{1}), true)
	f.Add(signed(job, &nonce, nsOpQuery, 0, [EPNameLen]byte{}), false)
	f.Add([]byte{}, true)
	ns := newNameServer(job, "", logger{})
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
		ns := newNameServer(UUID{1}, iface, logger{})
		got := ns.listenAddrs()
		if len(got) != 2 || got[0] != "127.0.0.1" || got[1] != ip.String() {
			t.Errorf("FI_PSM2_IFACE=%s: listens on %v, want 127.0.0.1 and %v", iface, got, ip)
		}
	}
}
