//go:build linux

package shm

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestCMAStaged: reads and writes whose destination lies a few bytes past
// their source modulo 4 KiB go through cmaStaged and move the same bytes
// as the kernel alone would, at every length and offset, and a local
// buffer the kernel would refuse still ends them with EFAULT at the
// fault.
func TestCMAStaged(t *testing.T) {
	pid := os.Getpid()
	mem := anonMem(t, 1<<20)
	src, dst := mem[:512<<10], mem[512<<10:]
	if _, err := cmaRead(pid, addrOf(src), dst[:1]); err != nil {
		t.Skipf("process_vm_readv: %v", err)
	}
	for _, n := range []int{4096, 5000, cmaStageChunk, cmaStageChunk + 4095, 3*cmaStageChunk + 17} {
		for _, rel := range []int{1, 8, 40, 63, 64, 0} {
			for _, write := range []bool{false, true} {
				s, d := src[100:100+n], dst[100+rel:100+rel+n]
				copy(s, pattern(n, byte(n+rel)))
				clear(dst)
				var got int
				var err error
				if write {
					got, err = cmaWrite(pid, addrOf(d), s)
				} else {
					got, err = cmaRead(pid, addrOf(s), d)
				}
				if err != nil || got != n || !bytes.Equal(d, s) || dst[99+rel] != 0 || dst[100+rel+n] != 0 {
					t.Fatalf("%d bytes, rel %d, write %v: %d, %v, equal %v", n, rel, write, got, err, bytes.Equal(d, s))
				}
			}
		}
	}
	// A local buffer whose second page is unmapped: both directions stop
	// there, with EFAULT.
	n := 3 * 4096
	if err := unix.Mprotect(dst[8192:12288], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	defer unix.Mprotect(dst[8192:12288], unix.PROT_READ|unix.PROT_WRITE)
	local := unsafe.Slice(&dst[4096+8], n) // 8 bytes past src's page offset
	remote := src[:n]
	got, err := cmaRead(pid, addrOf(remote), local)
	if !errors.Is(err, unix.EFAULT) || got != 4096-8 {
		t.Errorf("read into a buffer cut at %d: %d, %v", 4096-8, got, err)
	}
	remote = src[8 : 8+n] // now the local side is the source, 8 bytes before
	local = unsafe.Slice(&dst[4096], n)
	got, err = cmaWrite(pid, addrOf(remote), local)
	if !errors.Is(err, unix.EFAULT) || got != 4096 {
		t.Errorf("write from a buffer cut at 4096: %d, %v", got, err)
	}
}

// BenchmarkCMARead: a 64 KiB process_vm_readv from this process, with the
// destination at page offset 0 or 8 past the source, staged (cmaCopy) or
// not (cmaDirect).
func BenchmarkCMARead(b *testing.B) {
	pid := os.Getpid()
	mem := anonMem(b, 1<<20)
	const n = 64 << 10
	src := mem[:n]
	for _, c := range []struct {
		name string
		rel  int
		f    func(int, uint64, []byte) (int, error)
	}{
		{"rel0", 0, cmaRead},
		{"rel8/staged", 8, cmaRead},
		{"rel8/direct", 8, func(pid int, a uint64, d []byte) (int, error) {
			return cmaDirect(false, pid, a, d)
		}},
	} {
		dst := mem[512<<10+c.rel : 512<<10+c.rel+n]
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(n)
			for i := 0; i < b.N; i++ {
				if _, err := c.f(pid, addrOf(src), dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
