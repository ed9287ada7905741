package provider

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// The name server (FI_PSM2_NAME_SERVER): it lets fi_getinfo(node,
// service) on a client find the endpoint a server opened with that
// service, as fabtests' client/server tests expect.
//
// Each node has one server, on the TCP port derived from the job UUID
// (UUID.NameServerPort). The first process of the job on the node to open
// a fabric binds the port and serves; the others register their
// endpoints with it. Messages are psm2's (libfabric util_ns): an 8-byte
// command {u8 version 0, u8 op, u16 reserved, u32 status (big-endian)}
// followed by the record {u32 service, 16-byte endpoint name}. Service 0
// in a query matches any record.

const (
	nsOpAdd   = 0
	nsOpDel   = 1
	nsOpQuery = 2
	nsOpAck   = 3

	nsCmdLen    = 8
	nsRecordLen = 4 + EPNameLen
	nsTimeout   = 2 * time.Second
)

type nameServer struct {
	port uint16
	job  UUID
	mu   sync.Mutex
	ln   net.Listener               // nil: another process serves this node
	recs map[uint32][EPNameLen]byte // what this process serves
	mine map[uint32][EPNameLen]byte // this process's own endpoints
}

// nsRetry is how often a process that does not serve tries to take the
// port over (the serving process may have exited, taking the records of
// others with it) and otherwise registers its endpoints again.
const nsRetry = 100 * time.Millisecond

// names returns the provider's name server, started on first use; nil
// when FI_PSM2_NAME_SERVER is off.
func (p *Provider) names() *nameServer {
	if !p.params.NameServer {
		return nil
	}
	p.nsOnce.Do(func() {
		ns := &nameServer{port: p.params.UUID.NameServerPort(), job: p.params.UUID,
			recs: map[uint32][EPNameLen]byte{}, mine: map[uint32][EPNameLen]byte{}}
		if !ns.tryServe() {
			go ns.keepRegistered()
		}
		p.ns = ns
	})
	return p.ns
}

// tryServe binds the port, if it is free, and serves this process's own
// records from now on.
func (ns *nameServer) tryServe() bool {
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(int(ns.port)))
	if err != nil {
		return false
	}
	ns.mu.Lock()
	ns.ln = ln
	for s, n := range ns.mine {
		ns.recs[s] = n
	}
	ns.mu.Unlock()
	go ns.serve()
	return true
}

// keepRegistered runs in a process that does not serve: it takes the
// port over when the server goes away, and re-registers meanwhile.
func (ns *nameServer) keepRegistered() {
	for {
		time.Sleep(nsRetry)
		if ns.tryServe() {
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
			if _, err := ns.call("127.0.0.1", nsOpQuery, r.service, [EPNameLen]byte{}); err != nil {
				_, _ = ns.call("127.0.0.1", nsOpAdd, r.service, r.name)
			}
		}
	}
}

func (ns *nameServer) serve() {
	for {
		c, err := ns.ln.Accept()
		if err != nil {
			return
		}
		go ns.handle(c)
	}
}

func (ns *nameServer) handle(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(nsTimeout))
	var req [nsCmdLen + nsRecordLen]byte
	if _, err := io.ReadFull(c, req[:]); err != nil || req[0] != 0 {
		return
	}
	service := binary.LittleEndian.Uint32(req[nsCmdLen:])
	var name [EPNameLen]byte
	copy(name[:], req[nsCmdLen+4:])
	reply := req
	reply[1] = nsOpAck
	status := uint32(0)
	ns.mu.Lock()
	switch req[1] {
	case nsOpAdd:
		ns.recs[service] = name
	case nsOpDel:
		delete(ns.recs, service)
	case nsOpQuery:
		got, ok := ns.lookupLocked(service)
		if ok {
			binary.LittleEndian.PutUint32(reply[nsCmdLen:], got.service)
			copy(reply[nsCmdLen+4:], got.name[:])
		} else {
			status = 1
		}
	default:
		status = 1
	}
	ns.mu.Unlock()
	binary.BigEndian.PutUint32(reply[4:], status)
	c.Write(reply[:])
}

type nsRecord struct {
	service uint32
	name    [EPNameLen]byte
}

func (ns *nameServer) lookupLocked(service uint32) (nsRecord, bool) {
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

// register publishes (service, name) on this node's server.
func (ns *nameServer) register(service uint32, name EPName, op byte) {
	var raw [EPNameLen]byte
	name.put(raw[:])
	ns.mu.Lock()
	if op == nsOpAdd {
		ns.mine[service] = raw
	} else {
		delete(ns.mine, service)
	}
	serving := ns.ln != nil
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
// nsResolveWait.
func (ns *nameServer) resolve(host string, service uint32) (EPName, error) {
	deadline := time.Now().Add(nsResolveWait)
	for {
		rec, err := ns.call(host, nsOpQuery, service, [EPNameLen]byte{})
		if err == nil {
			// A record can outlive its endpoint for a moment (a
			// process between closing and deregistering, one killed):
			// an endpoint of this node that is gone is asked for again.
			n, err := UnmarshalEPName(rec[:])
			if err == nil && (wireOpen(ns.job, n.EPID) || time.Now().After(deadline)) {
				return n, nil
			}
			if err == nil {
				err = errors.New("name server: the registered endpoint is closed")
			}
		}
		if time.Now().After(deadline) {
			return EPName{}, err
		}
		time.Sleep(2 * nsRetry)
	}
}

// nsResolveWait bounds how long fi_getinfo waits for a name.
const nsResolveWait = time.Second

func (ns *nameServer) call(host string, op byte, service uint32, name [EPNameLen]byte) ([EPNameLen]byte, error) {
	var out [EPNameLen]byte
	c, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(int(ns.port))), nsTimeout)
	if err != nil {
		return out, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(nsTimeout))
	var req [nsCmdLen + nsRecordLen]byte
	req[1] = op
	binary.LittleEndian.PutUint32(req[nsCmdLen:], service)
	copy(req[nsCmdLen+4:], name[:])
	if _, err := c.Write(req[:]); err != nil {
		return out, err
	}
	var reply [nsCmdLen + nsRecordLen]byte
	if _, err := io.ReadFull(c, reply[:]); err != nil {
		return out, err
	}
	if reply[1] != nsOpAck || binary.BigEndian.Uint32(reply[4:]) != 0 {
		return out, errors.New("name server: no such service")
	}
	copy(out[:], reply[nsCmdLen+4:])
	return out, nil
}

// close stops serving.
func (ns *nameServer) close() {
	if ns == nil {
		return
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.ln != nil {
		ns.ln.Close()
	}
}

// resolveNode turns fi_getinfo's node and service into a destination
// through the name server.
func (p *Provider) resolveNode(node, service string) (*EPName, error) {
	ns := p.names()
	if ns == nil {
		return nil, noMatch("cannot resolve %q: the name server is off (FI_PSM2_NAME_SERVER)", node)
	}
	svc := parseService(service, AnyService)
	n, err := ns.resolve(node, svc)
	if err != nil {
		return nil, noMatch("cannot resolve %q service %d: %v", node, svc, err)
	}
	p.log.Infof(fi.LOG_CORE, "name server: %q service %d is %v", node, svc, n)
	return &n, nil
}
