package names

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopsm2/libfabric-psm2/hfi"
	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// Each node has one server per job, on the TCP port derived from the job
// key (provider's UUID.NameServerPort). The first process of the job on the node to
// open a fabric binds the port and serves; the others register their
// endpoints with it. It listens on every IPv4 interface, as psm2's does,
// so that fi_getinfo(node) works from other hosts with no setting; with
// FI_PSM2_IFACE set, on 127.0.0.1 and that interface's address only. A
// client asked for a node that is this host dials 127.0.0.1.
//
// The exchange, one request per connection:
//
//	server: "psns" and a 16-byte random nonce
//	client: request (28 bytes) | HMAC-SHA256(key, "psns-req" | nonce | request)
//	server: reply (28 bytes)   | HMAC-SHA256(key, "psns-rep" | nonce | reply)
//
// A request or reply is an 8-byte command {u8 version 0, u8 op, u16 0,
// u32 status (big-endian)} followed by the record {u32 service, 16-byte
// endpoint name}; service 0 in a query matches any record. The key is the
// job key: a process that does not hold it cannot add, remove or even
// query a record, and a message recorded on one connection is worthless
// on another (the nonce). With the public default key this keeps other
// jobs' mistakes out, not a determined local user: give each job its own
// FI_PSM2_UUID (MPI launchers do) for that.
//
// The server is bounded: at most nsMaxRecords records (an add beyond is
// refused), nsMaxConns connections at once (more are closed at once), and
// every connection has nsTimeout to finish. It survives accept errors
// such as EMFILE by backing off. A port held by something that does not
// speak this protocol (another user's process, another job whose key
// sums to the same port) is reported in the log once and makes
// fi_getinfo(node, service) fail at once.

// NameLen is the size of an endpoint name (FI_ADDR_PSMX2).
const NameLen = 16

// Key is the job key (FI_PSM2_UUID).
type Key = [16]byte

// AnyService in a query matches any record.
const AnyService = 0

// Logger is where the server reports what it cannot do.
type Logger interface {
	Infof(s fi.LogSubsys, f string, a ...any)
	Warnf(s fi.LogSubsys, f string, a ...any)
}

// The operations of Register.
const (
	OpAdd = nsOpAdd
	OpDel = nsOpDel
)

const (
	nsOpAdd   = 0
	nsOpDel   = 1
	nsOpQuery = 2
	nsOpAck   = 3

	nsStatusOK      = 0
	nsStatusUnknown = 1 // no such service, or a bad op
	nsStatusFull    = 2 // the table holds nsMaxRecords records

	nsCmdLen    = 8
	nsRecordLen = 4 + NameLen
	nsMsgLen    = nsCmdLen + nsRecordLen
	nsNonceLen  = 16
	nsHelloLen  = 4 + nsNonceLen
	nsMACLen    = sha256.Size
	nsSignedLen = nsMsgLen + nsMACLen

	nsTimeout    = 2 * time.Second
	nsMaxRecords = 4096
	nsMaxConns   = 64
)

var (
	nsMagic = [4]byte{'p', 's', 'n', 's'}
	nsBusy  = [4]byte{'p', 's', 'n', 'b'} // too many connections: try again
)

// errNSBusy is the answer of a server at its connection limit.
var errNSBusy = errors.New("name server busy")

// errNSForeign is the answer of a port held by something that is not
// this job's name server.
var errNSForeign = errors.New("name server port held by another process (not a name server of this job)")

// Server is this process's part of the node's name server: the server
// itself if this process holds the port, else a client registering with
// the process that does.
type Server struct {
	port    uint16
	job     Key
	iface   string
	log     Logger
	timeout time.Duration // per connection (nsTimeout; tests shorten it)

	// IsOpen says whether the endpoint a record names is still open, if
	// set (before the server is used).
	IsOpen func(name [NameLen]byte) bool

	mu   sync.Mutex
	lns  []net.Listener           // nil: another process serves this node
	recs map[uint32][NameLen]byte // what this process serves
	mine map[uint32][NameLen]byte // this process's own endpoints

	stop          chan struct{} // closed by Close: KeepRegistered ends
	conns         chan struct{} // one token per connection being served
	refused       atomic.Int64  // messages refused: bad MAC, size or op
	foreignWarned atomic.Bool
}

// nsRetry is how often a process that does not serve tries to take the
// port over (the serving process may have exited, taking the records of
// others with it) and otherwise registers its endpoints again.
const nsRetry = 100 * time.Millisecond

// New is the name server of job key job on port (the provider derives the
// port from the key), listening on every interface or, if iface is set,
// on loopback and its address (hfi.ChooseAddr reads it). TryServe starts
// it.
func New(job Key, port uint16, iface string, log Logger) *Server {
	return &Server{port: port, job: job, iface: iface, log: log,
		timeout: nsTimeout, conns: make(chan struct{}, nsMaxConns), stop: make(chan struct{}),
		recs: map[uint32][NameLen]byte{}, mine: map[uint32][NameLen]byte{}}
}

// listenAddrs are the addresses the server binds, the first one's bind
// deciding who serves. Without FI_PSM2_IFACE: every interface (0.0.0.0),
// as psm2's server does; every request is still authenticated with the
// job key and the server's memory bounded (nsMaxRecords, nsMaxConns).
// With it: loopback, then the address FI_PSM2_IFACE chooses for the wire
// (an interface, an address or a network, as hfi.ChooseAddr reads it), so
// that a peer on another host finds names where it finds the endpoints,
// and nowhere else.
func (ns *Server) listenAddrs() []string {
	if ns.iface == "" {
		return []string{"0.0.0.0"}
	}
	addrs := []string{"127.0.0.1"}
	ip, err := hfi.ChooseAddr(ns.iface)
	if err != nil {
		ns.log.Warnf(fi.LOG_CORE, "name server: %v; serving on 127.0.0.1 only", err)
		return addrs
	}
	if a := netip.AddrFrom4(ip); !a.IsLoopback() {
		addrs = append(addrs, a.String())
	}
	return addrs
}

// TryServe binds the port, if it is free, and serves this process's own
// records from now on: false if another process serves (then run
// KeepRegistered).

// Serving says whether this process serves the node.
func (ns *Server) Serving() bool {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.lns != nil
}

// TryServe binds the port, if it is free, and serves this process's own
// records from now on.
func (ns *Server) TryServe() bool {
	var lns []net.Listener
	for i, a := range ns.listenAddrs() {
		ln, err := net.Listen("tcp4", net.JoinHostPort(a, strconv.Itoa(int(ns.port))))
		if err != nil {
			if i == 0 {
				return false // someone serves (or holds the port)
			}
			ns.log.Warnf(fi.LOG_CORE, "name server: not serving on %s: %v", a, err)
			continue
		}
		lns = append(lns, ln)
	}
	ns.mu.Lock()
	select {
	case <-ns.stop: // closed meanwhile
		ns.mu.Unlock()
		for _, ln := range lns {
			ln.Close()
		}
		return true
	default:
	}
	ns.lns = lns
	for s, n := range ns.mine {
		ns.recs[s] = n
	}
	ns.mu.Unlock()
	for _, ln := range lns {
		go ns.serve(ln)
	}
	return true
}

// KeepRegistered runs in a process that does not serve: it takes the
// port over when the server goes away, and re-registers meanwhile.
func (ns *Server) KeepRegistered() {
	for {
		select {
		case <-ns.stop:
			return
		case <-time.After(nsRetry):
		}
		if ns.TryServe() {
			return
		}
		ns.mu.Lock()
		mine := make([]nsRecord, 0, len(ns.mine))
		for s, n := range ns.mine {
			mine = append(mine, nsRecord{s, n})
		}
		ns.mu.Unlock()
		for _, r := range mine {
			// Only records the server lost: a newer endpoint that
			// registered the same service keeps it.
			if _, err := ns.call("127.0.0.1", nsOpQuery, r.service, [NameLen]byte{}); err != nil {
				_, _ = ns.call("127.0.0.1", nsOpAdd, r.service, r.name)
			}
		}
	}
}

// serve accepts connections on ln until it is closed. Accept errors that
// pass (EMFILE, ENFILE, ENOBUFS, ECONNABORTED, ...) are waited out, from
// 5 ms doubling to 1 s.
func (ns *Server) serve(ln net.Listener) {
	backoff := time.Duration(0)
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			ns.log.Infof(fi.LOG_CORE, "name server: accept: %v; retrying in %v", err, backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		select {
		case ns.conns <- struct{}{}:
			go func() {
				defer func() { <-ns.conns }()
				ns.handle(c)
			}()
		default:
			// Too many at once: say so (a fresh socket's buffer takes
			// four bytes without blocking) and hang up.
			_ = c.SetDeadline(time.Now().Add(10 * time.Millisecond))
			_, _ = c.Write(nsBusy[:])
			c.Close()
		}
	}
}

// nsMAC is the HMAC of msg on the connection with nonce.
func nsMAC(key Key, label string, nonce *[nsNonceLen]byte, msg []byte) [nsMACLen]byte {
	m := hmac.New(sha256.New, key[:])
	m.Write([]byte(label))
	m.Write(nonce[:])
	m.Write(msg)
	var out [nsMACLen]byte
	m.Sum(out[:0])
	return out
}

// nsRequest is a decoded, authenticated request.
type nsRequest struct {
	op      byte
	service uint32
	name    [NameLen]byte
}

// parseRequest checks and decodes a signed request received on the
// connection with nonce: exactly nsSignedLen bytes, version 0, a known op
// and a MAC made with the job key.
func parseRequest(key Key, nonce *[nsNonceLen]byte, b []byte) (nsRequest, bool) {
	if len(b) != nsSignedLen {
		return nsRequest{}, false
	}
	want := nsMAC(key, "psns-req", nonce, b[:nsMsgLen])
	if !hmac.Equal(want[:], b[nsMsgLen:]) || b[0] != 0 || b[1] > nsOpQuery {
		return nsRequest{}, false
	}
	r := nsRequest{op: b[1], service: binary.LittleEndian.Uint32(b[nsCmdLen:])}
	copy(r.name[:], b[nsCmdLen+4:nsMsgLen])
	return r, true
}

// apply carries out an authenticated request and returns the reply's
// status and record.
func (ns *Server) apply(r nsRequest) (uint32, nsRecord) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	switch r.op {
	case nsOpAdd:
		if _, ok := ns.recs[r.service]; !ok && len(ns.recs) >= nsMaxRecords {
			return nsStatusFull, nsRecord{r.service, r.name}
		}
		ns.recs[r.service] = r.name
		return nsStatusOK, nsRecord{r.service, r.name}
	case nsOpDel:
		delete(ns.recs, r.service)
		return nsStatusOK, nsRecord{r.service, r.name}
	case nsOpQuery:
		if got, ok := ns.lookupLocked(r.service); ok {
			return nsStatusOK, got
		}
	}
	return nsStatusUnknown, nsRecord{r.service, r.name}
}

func (ns *Server) handle(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(ns.timeout))
	var hello [nsHelloLen]byte
	copy(hello[:], nsMagic[:])
	var nonce [nsNonceLen]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return
	}
	copy(hello[4:], nonce[:])
	if _, err := c.Write(hello[:]); err != nil {
		return
	}
	var req [nsSignedLen]byte
	if _, err := io.ReadFull(c, req[:]); err != nil {
		return
	}
	r, ok := parseRequest(ns.job, &nonce, req[:])
	if !ok {
		ns.refused.Add(1)
		return
	}
	status, rec := ns.apply(r)
	var reply [nsSignedLen]byte
	reply[1] = nsOpAck
	binary.BigEndian.PutUint32(reply[4:], status)
	binary.LittleEndian.PutUint32(reply[nsCmdLen:], rec.service)
	copy(reply[nsCmdLen+4:], rec.name[:])
	mac := nsMAC(ns.job, "psns-rep", &nonce, reply[:nsMsgLen])
	copy(reply[nsMsgLen:], mac[:])
	_, _ = c.Write(reply[:])
}

type nsRecord struct {
	service uint32
	name    [NameLen]byte
}

func (ns *Server) lookupLocked(service uint32) (nsRecord, bool) {
	if n, ok := ns.recs[service]; ok {
		return nsRecord{service, n}, true
	}
	if service == AnyService {
		for s, n := range ns.recs {
			return nsRecord{s, n}, true
		}
	}
	return nsRecord{}, false
}

// Register publishes (service, name) on this node's server (op OpAdd),
// or withdraws it (OpDel).
func (ns *Server) Register(service uint32, raw [NameLen]byte, op byte) {
	ns.mu.Lock()
	if op == nsOpAdd {
		ns.mine[service] = raw
	} else {
		delete(ns.mine, service)
	}
	serving := ns.lns != nil
	if serving {
		if op == nsOpAdd {
			ns.recs[service] = raw
		} else if got, ok := ns.recs[service]; ok && got == raw {
			delete(ns.recs, service)
		}
	}
	ns.mu.Unlock()
	if !serving {
		_, _ = ns.call("127.0.0.1", op, service, raw)
	}
}

// resolve asks the server on host for the endpoint registered with
// service.
// A client may ask while the server's endpoint is still opening, or
// while the node's server changes hands: it retries for up to
// nsResolveWait. A port held by a stranger is not retried.
func (ns *Server) Resolve(host string, service uint32) ([NameLen]byte, error) {
	deadline := time.Now().Add(nsResolveWait)
	for {
		rec, err := ns.call(host, nsOpQuery, service, [NameLen]byte{})
		if err == nil {
			// A record can outlive its endpoint for a moment (a
			// process between closing and deregistering, one killed):
			// an endpoint of this node that is gone is asked for again.
			if ns.endpointOpen(rec) || time.Now().After(deadline) {
				return rec, nil
			}
			err = errors.New("name server: the registered endpoint is closed")
		}
		if errors.Is(err, errNSForeign) || time.Now().After(deadline) {
			return [NameLen]byte{}, err
		}
		time.Sleep(2 * nsRetry)
	}
}

// nsResolveWait bounds how long fi_getinfo waits for a name.
const nsResolveWait = time.Second

// dialHost is where to reach the name server of host: 127.0.0.1 for an
// address of this machine (the server may listen on loopback only).
func dialHost(host string) string {
	ip := net.ParseIP(host)
	if ip == nil {
		ips, err := net.LookupIP(host)
		if err != nil || len(ips) == 0 {
			return host
		}
		ip = ips[0]
	}
	if ip.IsLoopback() {
		return "127.0.0.1"
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.Equal(ip) {
			return "127.0.0.1"
		}
	}
	return ip.String()
}

func (ns *Server) call(host string, op byte, service uint32, name [NameLen]byte) ([NameLen]byte, error) {
	var out [NameLen]byte
	c, err := net.DialTimeout("tcp", net.JoinHostPort(dialHost(host), strconv.Itoa(int(ns.port))), ns.timeout)
	if err != nil {
		return out, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(ns.timeout))
	var hello [nsHelloLen]byte
	n, err := io.ReadFull(c, hello[:])
	if n >= 4 && [4]byte(hello[:4]) == nsBusy {
		return out, errNSBusy
	}
	if err != nil || [4]byte(hello[:4]) != nsMagic {
		return out, ns.foreign(host, err)
	}
	nonce := [nsNonceLen]byte(hello[4:])
	var req [nsSignedLen]byte
	req[1] = op
	binary.LittleEndian.PutUint32(req[nsCmdLen:], service)
	copy(req[nsCmdLen+4:], name[:])
	mac := nsMAC(ns.job, "psns-req", &nonce, req[:nsMsgLen])
	copy(req[nsMsgLen:], mac[:])
	if _, err := c.Write(req[:]); err != nil {
		return out, err
	}
	var reply [nsSignedLen]byte
	if _, err := io.ReadFull(c, reply[:]); err != nil {
		// A server of another job closes on our MAC.
		return out, ns.foreign(host, err)
	}
	want := nsMAC(ns.job, "psns-rep", &nonce, reply[:nsMsgLen])
	if !hmac.Equal(want[:], reply[nsMsgLen:]) || reply[1] != nsOpAck {
		return out, ns.foreign(host, nil)
	}
	switch binary.BigEndian.Uint32(reply[4:]) {
	case nsStatusOK:
	case nsStatusFull:
		return out, errors.New("name server: table full")
	default:
		return out, errors.New("name server: no such service")
	}
	copy(out[:], reply[nsCmdLen+4:nsMsgLen])
	return out, nil
}

// foreign reports, once, that the port on host did not answer as a name
// server of this job, and returns errNSForeign (wrapping why, if known).
func (ns *Server) foreign(host string, why error) error {
	if !ns.foreignWarned.Swap(true) {
		ns.log.Warnf(fi.LOG_CORE, "name server: port %d on %s is held by a process that is not this job's name server (%v); "+
			"fi_getinfo(node, service) cannot resolve there; give the job its own FI_PSM2_UUID", ns.port, host, why)
	}
	if why != nil {
		return fmt.Errorf("%w: %v", errNSForeign, why)
	}
	return errNSForeign
}

// Close stops serving.
func (ns *Server) Close() {
	if ns == nil {
		return
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	select {
	case <-ns.stop:
	default:
		close(ns.stop)
	}
	for _, ln := range ns.lns {
		ln.Close()
	}
}

// endpointOpen asks the owner whether the endpoint named name is open
// (nil IsOpen, in tests: yes).
func (ns *Server) endpointOpen(name [NameLen]byte) bool {
	return ns.IsOpen == nil || ns.IsOpen(name)
}
