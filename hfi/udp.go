package hfi

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// udpBackend is Backend over UDP sockets: socket 0 is bound to the
// endpoint's address and port and receives everything; paths 1..n-1 are
// further sockets on the same address with ports of their own, used only
// to send, so a peer pair has n source ports for ECMP to spread.
type udpBackend struct {
	ip    [4]byte
	port  uint16
	fds   []int
	efd   int // eventfd that Interrupt writes, to wake a waiting Recv
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	pfds  [2]unix.PollFd
	close sync.Once
}

// udpBuffer is the socket buffer size asked for (the kernel may cap it
// at net.core.rmem_max; as root SO_RCVBUFFORCE passes the cap).
const udpBuffer = 4 << 20

// OpenUDP binds the sockets of a UDP backend on ip: socket 0 on a port
// in [first, last] (any port if first is 0), paths-1 more on any port.
func OpenUDP(ip [4]byte, first, last uint16, paths int) (Backend, error) {
	if paths < 1 {
		paths = 1
	}
	b := &udpBackend{ip: ip, efd: -1}
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
		if i == 0 {
			fd, err = bindUDP(ip, first, last)
		} else {
			fd, err = bindUDP(ip, 0, 0)
		}
		if err != nil {
			return fail(err)
		}
		b.fds = append(b.fds, fd)
	}
	sa, err := unix.Getsockname(b.fds[0])
	if err != nil {
		return fail(err)
	}
	b.port = uint16(sa.(*unix.SockaddrInet4).Port)
	b.pfds = [2]unix.PollFd{{Fd: int32(b.fds[0]), Events: unix.POLLIN}, {Fd: int32(efd), Events: unix.POLLIN}}
	return b, nil
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

// Send uses a raw system call: the socket does not block, so the Go
// scheduler need not know (a Syscall would wake sysmon, whose extra
// thread then competes with the polling threads for the cores).
func (b *udpBackend) Send(path int, d *Dest, p []byte) error {
	if len(p) == 0 {
		return nil
	}
	for {
		_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(b.fds[path]), uintptr(unsafe.Pointer(&p[0])),
			uintptr(len(p)), 0, uintptr(unsafe.Pointer(&d.raw)), unix.SizeofSockaddrInet4)
		switch e {
		case 0:
			return nil
		case unix.EINTR:
			continue
		}
		return e
	}
}

func (b *udpBackend) Recv(bufs [][]byte, lens []int, wait bool) (int, error) {
	n := len(bufs)
	if n == 0 {
		return 0, nil
	}
	if cap(b.hdrs) < n {
		b.hdrs = make([]unix.Mmsghdr, n)
		b.iovs = make([]unix.Iovec, n)
	}
	hdrs, iovs := b.hdrs[:n], b.iovs[:n]
	for i := range hdrs {
		iovs[i].Base = &bufs[i][0]
		iovs[i].SetLen(len(bufs[i]))
		hdrs[i] = unix.Mmsghdr{}
		hdrs[i].Hdr.Iov = &iovs[i]
		hdrs[i].Hdr.SetIovlen(1)
	}
	for {
		// Raw: MSG_DONTWAIT never blocks (see Send).
		r, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, uintptr(b.fds[0]), uintptr(unsafe.Pointer(&hdrs[0])),
			uintptr(n), unix.MSG_DONTWAIT, 0, 0)
		switch {
		case e == 0:
			for i := 0; i < int(r); i++ {
				lens[i] = int(hdrs[i].Len)
				if hdrs[i].Hdr.Flags&unix.MSG_TRUNC != 0 {
					lens[i] = -1 // longer than any packet of ours
				}
			}
			return int(r), nil
		case e == unix.EINTR:
			continue
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
	})
	return nil
}
