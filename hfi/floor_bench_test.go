package hfi

import (
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BenchmarkRawUDPPingPong is the floor for BenchmarkUDPPingPong: two
// UDP sockets on 127.0.0.1, each busy-polled by its own thread with
// non-blocking recvfrom, no protocol at all (what bench/udppp.c does
// between hosts), through the same raw system calls as the backend (the
// runtime's Syscall, with its scheduler hand-off, costs a microsecond
// more per round trip). One op is a round trip. The ratio of the two,
// same run, is the wire's overhead:
//
//	go test -run x -bench 'UDPPingPong' ./hfi
func BenchmarkRawUDPPingPong(b *testing.B) {
	for _, size := range []int{8, 1024, 8192} {
		b.Run(sizeName(size), func(b *testing.B) {
			x, xa := rawUDPSocket(b)
			y, ya := rawUDPSocket(b)
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() { // the echo side
				runtime.LockOSThread()
				defer close(done)
				buf := make([]byte, 65536)
				for {
					if n, err := rawRecv(y, buf); err == nil {
						if err := unix.Sendto(y, buf[:n], 0, xa); err != nil {
							b.Error(err)
							return
						}
						continue
					}
					select {
					case <-stop:
						return
					default:
					}
				}
			}()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			msg, buf := make([]byte, size), make([]byte, 65536)
			pingpong := func() {
				if err := unix.Sendto(x, msg, 0, ya); err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := rawRecv(x, buf); err == nil {
						return
					}
				}
			}
			timeRoundTrips(b, pingpong, stop, done)
		})
	}
}

// rawUDPSocket opens a UDP socket on 127.0.0.1, closed when the benchmark
// ends, and returns it with its address.
func rawUDPSocket(tb testing.TB) (int, unix.Sockaddr) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		tb.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		tb.Fatal(err)
	}
	return fd, sa
}

// rawRecv is a non-blocking recvfrom without the sender's address.
func rawRecv(fd int, buf []byte) (int, error) {
	r, e := rawCall(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)),
		unix.MSG_DONTWAIT, 0, 0)
	return int(r), errOf(e)
}
