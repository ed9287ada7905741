package hfi

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gopsm2/libfabric-psm2/internal/sys"
)

// udpBackend is Backend over UDP sockets: socket 0 is bound to the
// endpoint's address and port and receives everything; paths 1..n-1 are
// further sockets on the same address with ports of their own, used only
// to send, so a peer pair has n source ports for ECMP to spread.
//
// With rails (multirail, OpenUDP's anyAddr), socket 0 is bound to the
// port on every address of the host, so that it also receives what
// peers send to the endpoint's other networks, and it sends every
// packet of a further rail: the kernel routes it by its destination, the
// peer's address on that network, out of that network's interface and
// from this host's address on it. One socket keeps the cost of an empty
// poll what it is without rails.
type udpBackend struct {
	ip    [4]byte
	port  uint16
	fds   []int
	ports []uint16 // each socket's port (SrcPorts)
	efd   int      // eventfd that Interrupt writes, to wake a waiting Recv
	mtufd int      // a socket PathMTU connects to ask the kernel (-1: not yet)
	// rh[0] for non-blocking receives (the polling thread), rh[1] for
	// blocking ones (the receive thread): the two threads can be in Recv
	// at once during a hand-over, each with its own buffers.
	rh    [2]recvHdrs
	gro   bool // UDP_GRO is on: a receive may hold many packets
	pfds  [2]unix.PollFd
	close sync.Once

	gso   bool // UDP_SEGMENT works: SendBatch sends up to gsoMax packets per call
	smsg  unix.Msghdr
	siov  [2 * gsoMax]unix.Iovec // a packet and its rest (SendBatch)
	scmsg [unix.SizeofCmsghdr + 8]byte
}

// recvHdrs are the headers of one receiver's recvmmsg calls. They stay
// built between calls: an entry is rebuilt only if its buffer changed,
// else only what the kernel writes is reset (rebuilding 64 headers on
// every empty poll cost 0.5 us).
type recvHdrs struct {
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	ctls  []byte                  // a control buffer per message (the GRO segment size)
	names []unix.RawSockaddrInet4 // each message's source address
}

// gsoMax is the most segments the kernel takes in one UDP_SEGMENT send
// (UDP_MAX_SEGMENTS); gsoBytes the most payload.
const (
	gsoMax   = 64
	gsoBytes = 65000
)

// udpBuffer is the socket buffer size asked for (the kernel may cap it
// at net.core.rmem_max; as root SO_RCVBUFFORCE passes the cap).
const udpBuffer = 4 << 20

// OpenUDP binds the sockets of a UDP backend on ip: socket 0 on a port
// in [first, last] (the kernel's ephemeral range if first is 0), taken in
// turn through the cursor file (ports.go; "" for none), which then moves
// on by block ports (at least 1), paths-1 more on any port. With anyAddr
// (rails), socket 0 is bound to that port on every address instead.
func OpenUDP(ip [4]byte, first, last uint16, paths int, cursor string, block int, anyAddr bool) (Backend, error) {
	if paths < 1 {
		paths = 1
	}
	b := &udpBackend{ip: ip, efd: -1, mtufd: -1}
	fail := func(err error) (Backend, error) {
		b.Close()
		return nil, err
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return fail(fmt.Errorf("hfi: eventfd: %w", err))
	}
	b.efd = efd
	for i := 0; i < paths; i++ {
		var fd int
		var err error
		if i == 0 && anyAddr {
			fd, err = bindPort0([4]byte{}, first, last, cursor, block)
		} else if i == 0 {
			fd, err = bindPort0(ip, first, last, cursor, block)
		} else {
			fd, err = bindUDP(ip, 0, 0)
		}
		if err != nil {
			return fail(err)
		}
		b.fds = append(b.fds, fd)
		sa, err := unix.Getsockname(fd)
		if err != nil {
			return fail(err)
		}
		b.ports = append(b.ports, uint16(sa.(*unix.SockaddrInet4).Port))
	}
	b.port = b.ports[0]
	b.pfds = [2]unix.PollFd{{Fd: int32(b.fds[0]), Events: unix.POLLIN}, {Fd: int32(efd), Events: unix.POLLIN}}
	b.gso = true // until a send says otherwise
	b.gro = unix.SetsockoptInt(b.fds[0], unix.SOL_UDP, unix.UDP_GRO, 1) == nil
	return b, nil
}

// bindPort0 binds the receiving socket: from the cursor's port on, or
// the first free port of [first, last], or (no range, no cursor) any.
func bindPort0(ip [4]byte, first, last uint16, cursor string, block int) (int, error) {
	explicit := first != 0
	if !explicit {
		first, last = localPortRange()
	}
	if explicit && first == last {
		return bindUDP(ip, first, last) // one port: no turn to take, the cursor stays
	}
	start, ok := portCursor(cursor, first, last, block)
	if !ok {
		if !explicit {
			return bindUDP(ip, 0, 0)
		}
		return bindUDP(ip, first, last)
	}
	if fd, err := bindUDP(ip, start, last); err == nil {
		return fd, nil
	}
	if start > first {
		if fd, err := bindUDP(ip, first, start-1); err == nil {
			return fd, nil
		}
	}
	if !explicit {
		return bindUDP(ip, 0, 0)
	}
	return -1, fmt.Errorf("hfi: no free UDP port in %d-%d", first, last)
}

// bindUDP opens a non-blocking UDP socket bound to ip and a port in
// [first, last] (any if first is 0).
func bindUDP(ip [4]byte, first, last uint16) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("hfi: socket: %w", err)
	}
	for _, opt := range [][2]int{{unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}, {unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}} {
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt[0], udpBuffer) != nil {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt[1], udpBuffer)
		}
	}
	if first == 0 {
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: ip}); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("hfi: bind %d.%d.%d.%d: %w", ip[0], ip[1], ip[2], ip[3], err)
		}
		return fd, nil
	}
	for p := int(first); p <= int(last); p++ {
		err = unix.Bind(fd, &unix.SockaddrInet4{Addr: ip, Port: p})
		if err == nil {
			return fd, nil
		}
		if !errors.Is(err, unix.EADDRINUSE) {
			break
		}
	}
	unix.Close(fd)
	return -1, fmt.Errorf("hfi: bind a port in %d-%d: %w", first, last, err)
}

func (b *udpBackend) Addr() ([4]byte, uint16) { return b.ip, b.port }

func (b *udpBackend) Paths() int { return len(b.fds) }

func (b *udpBackend) SrcPorts() []uint16 { return b.ports }

// PathMTU connects a spare socket to d and asks the kernel for the
// route's MTU (IP_MTU: the interface's, or what the path reported).
func (b *udpBackend) PathMTU(d *Dest) int {
	if b.mtufd < 0 {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return 0
		}
		b.mtufd = fd
	}
	if unix.Connect(b.mtufd, &unix.SockaddrInet4{Addr: d.IP, Port: int(d.Port)}) != nil {
		return 0
	}
	v, err := unix.GetsockoptInt(b.mtufd, unix.IPPROTO_IP, unix.IP_MTU)
	if err != nil {
		return 0
	}
	return v
}

// Send uses a raw system call: the socket does not block, so the Go
// scheduler need not know (a Syscall would wake sysmon, whose extra
// thread then competes with the polling threads for the cores).
func (b *udpBackend) Send(path int, d *Dest, p []byte) error {
	if len(p) == 0 {
		return nil
	}
	fd, sa := b.route(path, d)
	_, e := rawCall(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&p[0])),
		uintptr(len(p)), 0, uintptr(unsafe.Pointer(sa)), unix.SizeofSockaddrInet4)
	return errOf(e)
}

// route is the socket and address of a packet on path to d: a further
// rail's from socket 0 (see udpBackend), a port index past the sockets
// on socket 0.
func (b *udpBackend) route(path int, d *Dest) (int, *unix.RawSockaddrInet4) {
	if r := path >> railShift; r > 0 && r <= d.nrail {
		return b.fds[0], &d.rails[r-1]
	}
	i := path & pathMask
	if i >= len(b.fds) {
		i = 0
	}
	return b.fds[i], &d.raw
}

// rawCall makes a system call that does not block (see Send), again
// while a signal interrupts it.
var rawCall = sys.RawCall

// errOf is nil for errno 0, else the errno.
func errOf(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// SendBatch sends runs of equal-sized packets (the last of a run may be
// shorter) with one sendmsg and UDP_SEGMENT, so the kernel moves a run
// as one buffer as far as the receiver; without segmentation offload,
// one by one. A packet with a rest in pays is two iovecs of the send,
// so the kernel copies the rest from where it is.
func (b *udpBackend) SendBatch(path int, d *Dest, pkts, pays [][]byte) error {
	var first error
	size := func(i int) int {
		if pays == nil {
			return len(pkts[i])
		}
		return len(pkts[i]) + len(pays[i])
	}
	for len(pkts) > 0 {
		k := 1
		if b.gso {
			seg, total := size(0), size(0)
			for k < len(pkts) && k < gsoMax && total+size(k) <= gsoBytes && size(k-1) == seg && size(k) <= seg {
				total += size(k)
				k++
			}
		}
		var err error
		if k == 1 {
			err = b.send1(path, d, pkts, pays)
		} else if err = b.sendGSO(path, d, pkts[:k], pays, size(0)); err == unix.EIO || err == unix.EINVAL || err == unix.ENOPROTOOPT {
			b.gso = false // no offload here: one by one from now on
			continue
		} else if err == unix.EMSGSIZE {
			// The segments are larger than the path takes (its MTU
			// fell): send them one by one, which the IP layer
			// fragments, and say so (the wire sizes later packets to
			// the new MTU).
			err = nil
			for i := range k {
				var rest [][]byte
				if pays != nil {
					rest = pays[i:]
				}
				if e := b.send1(path, d, pkts[i:], rest); e != nil && err == nil {
					err = e
				}
			}
			if err == nil {
				err = ErrPacketTooBig
			}
		}
		if err != nil && first == nil {
			first = err
		}
		pkts = pkts[k:]
		if pays != nil {
			pays = pays[k:]
		}
	}
	return first
}

// send1 sends pkts[0] and its rest pays[0] (pays may be nil) as one
// datagram.
func (b *udpBackend) send1(path int, d *Dest, pkts, pays [][]byte) error {
	if pays == nil || len(pays[0]) == 0 {
		return b.Send(path, d, pkts[0])
	}
	b.siov[0].Base, b.siov[1].Base = &pkts[0][0], &pays[0][0]
	b.siov[0].SetLen(len(pkts[0]))
	b.siov[1].SetLen(len(pays[0]))
	fd, sa := b.route(path, d)
	m := &b.smsg
	m.Name = (*byte)(unsafe.Pointer(sa))
	m.Namelen = unix.SizeofSockaddrInet4
	m.Iov = &b.siov[0]
	m.SetIovlen(2)
	m.Control = nil
	m.SetControllen(0)
	_, e := rawCall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(m)), 0, 0, 0, 0)
	return errOf(e)
}

func (b *udpBackend) BatchBytes() int {
	if !b.gso {
		return 0
	}
	return gsoBytes
}

// sendGSO sends pkts (with their rests in pays, if not nil) as one
// UDP_SEGMENT send of seg-byte segments.
func (b *udpBackend) sendGSO(path int, d *Dest, pkts, pays [][]byte, seg int) error {
	n := 0
	for i, p := range pkts {
		b.siov[n].Base = &p[0]
		b.siov[n].SetLen(len(p))
		n++
		if pays != nil && len(pays[i]) > 0 {
			b.siov[n].Base = &pays[i][0]
			b.siov[n].SetLen(len(pays[i]))
			n++
		}
	}
	c := (*unix.Cmsghdr)(unsafe.Pointer(&b.scmsg[0]))
	c.Level, c.Type = unix.SOL_UDP, unix.UDP_SEGMENT
	c.SetLen(unix.CmsgLen(2))
	*(*uint16)(unsafe.Pointer(&b.scmsg[unix.SizeofCmsghdr])) = uint16(seg)
	fd, sa := b.route(path, d)
	m := &b.smsg
	m.Name = (*byte)(unsafe.Pointer(sa))
	m.Namelen = unix.SizeofSockaddrInet4
	m.Iov = &b.siov[0]
	m.SetIovlen(n)
	m.Control = &b.scmsg[0]
	m.SetControllen(unix.CmsgSpace(2))
	_, e := rawCall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(m)), 0, 0, 0, 0)
	return errOf(e)
}

// ctlSize is the control buffer of one message: room for the UDP_GRO
// segment size (an int).
const ctlSize = 32

// BufSize: with GRO a receive holds up to 64 KiB.
// RecvBuffer is the receive buffer socket 0 got, in the bytes
// SO_RCVBUF is asked in (the kernel reports twice that, for its
// bookkeeping); 0 if unknown.
func (b *udpBackend) RecvBuffer() int {
	v, err := unix.GetsockoptInt(b.fds[0], unix.SOL_SOCKET, unix.SO_RCVBUF)
	if err != nil {
		return 0
	}
	return v / 2
}

func (b *udpBackend) BufSize() int {
	if b.gro {
		return 65536
	}
	return 0
}

func (b *udpBackend) Recv(bufs [][]byte, meta []RxMeta, wait bool) (int, error) {
	n := len(bufs)
	if n == 0 {
		return 0, nil
	}
	rh := &b.rh[0]
	if wait {
		rh = &b.rh[1]
	}
	if cap(rh.hdrs) < n {
		rh.hdrs = make([]unix.Mmsghdr, n)
		rh.iovs = make([]unix.Iovec, n)
		rh.ctls = make([]byte, n*ctlSize)
		rh.names = make([]unix.RawSockaddrInet4, n)
	}
	hdrs, iovs, ctls, names := rh.hdrs[:n], rh.iovs[:n], rh.ctls, rh.names
	for i := range hdrs {
		if iovs[i].Base != &bufs[i][0] || iovs[i].Len != uint64(len(bufs[i])) || hdrs[i].Hdr.Iov != &iovs[i] {
			iovs[i].Base = &bufs[i][0]
			iovs[i].SetLen(len(bufs[i]))
			hdrs[i] = unix.Mmsghdr{}
			hdrs[i].Hdr.Iov = &iovs[i]
			hdrs[i].Hdr.SetIovlen(1)
			hdrs[i].Hdr.Name = (*byte)(unsafe.Pointer(&names[i]))
			hdrs[i].Hdr.Namelen = unix.SizeofSockaddrInet4
			if b.gro {
				hdrs[i].Hdr.Control = &ctls[i*ctlSize]
				hdrs[i].Hdr.SetControllen(ctlSize)
			}
		} else { // what the kernel may have written
			hdrs[i].Len, hdrs[i].Hdr.Flags = 0, 0
			hdrs[i].Hdr.Namelen = unix.SizeofSockaddrInet4
			if b.gro {
				hdrs[i].Hdr.SetControllen(ctlSize)
			}
		}
	}
	for {
		// Raw: MSG_DONTWAIT never blocks (see Send).
		r, e := rawCall(unix.SYS_RECVMMSG, uintptr(b.fds[0]), uintptr(unsafe.Pointer(&hdrs[0])),
			uintptr(n), unix.MSG_DONTWAIT, 0, 0)
		switch {
		case e == 0:
			for i := 0; i < int(r); i++ {
				m := &meta[i]
				m.Len, m.Seg = int(hdrs[i].Len), 0
				if hdrs[i].Hdr.Flags&unix.MSG_TRUNC != 0 {
					m.Len = -1 // longer than any packet of ours
				}
				if b.gro && hdrs[i].Hdr.Controllen >= unix.SizeofCmsghdr+4 {
					c := (*unix.Cmsghdr)(unsafe.Pointer(&ctls[i*ctlSize]))
					if c.Level == unix.SOL_UDP && c.Type == unix.UDP_GRO {
						m.Seg = int(*(*int32)(unsafe.Pointer(&ctls[i*ctlSize+unix.SizeofCmsghdr])))
					}
				}
				sa := &names[i]
				m.From.IP = sa.Addr
				m.From.Port = uint16(sa.Port>>8&0xff) | uint16(sa.Port&0xff)<<8 // network byte order
				if hdrs[i].Hdr.Namelen != unix.SizeofSockaddrInet4 || sa.Family != unix.AF_INET {
					m.From = Addr{} // no IPv4 source: taken by nothing
				}
			}
			return int(r), nil
		case e != unix.EAGAIN:
			return 0, e
		}
		if !wait {
			return 0, nil
		}
		if _, err := unix.Poll(b.pfds[:], -1); err != nil && err != unix.EINTR {
			return 0, err
		}
		if b.pfds[1].Revents != 0 {
			var v [8]byte
			_, _ = unix.Read(b.efd, v[:])
			return 0, nil
		}
	}
}

func (b *udpBackend) Park() {
	pfd := []unix.PollFd{b.pfds[1]}
	for {
		if _, err := unix.Poll(pfd, -1); err != nil && err != unix.EINTR {
			return
		}
		if pfd[0].Revents != 0 {
			var v [8]byte
			_, _ = unix.Read(b.efd, v[:])
			return
		}
	}
}

func (b *udpBackend) Interrupt() {
	one := [8]byte{1}
	_, _ = unix.Write(b.efd, one[:])
}

func (b *udpBackend) Close() error {
	b.close.Do(func() {
		for _, fd := range b.fds {
			unix.Close(fd)
		}
		if b.efd >= 0 {
			unix.Close(b.efd)
		}
		if b.mtufd >= 0 {
			unix.Close(b.mtufd)
		}
	})
	return nil
}
