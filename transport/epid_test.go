package transport

import "testing"

func TestContextEPID(t *testing.T) {
	net := NetEPID([4]byte{10, 0, 0, 1}, 40000, 3)
	for i := range 4 {
		id, ok := ContextEPID(net, i)
		if want := NetEPID([4]byte{10, 0, 0, 1}, 40000+uint16(i), 3+uint8(i)); !ok || id != want {
			t.Fatalf("net context %d: %#x %v, want %#x", i, id, ok, want)
		}
		if EPIDPort(id) != 40000+uint16(i) {
			t.Fatalf("port of context %d: %d", i, EPIDPort(id))
		}
	}
	shm := ShmEPID(1234, 250)
	for i := range 6 {
		id, ok := ContextEPID(shm, i)
		if want := ShmEPID(1234, 250+uint8(i)); !ok || id != want || EPIDPort(id) != 0 {
			t.Fatalf("shm context %d: %#x %v, want %#x", i, id, ok, want)
		}
	}
	// Past the last context number or port, and a negative index.
	for _, c := range []struct {
		base uint64
		i    int
	}{{shm, 6}, {NetEPID([4]byte{10, 0, 0, 1}, 65535, 0), 1}, {net, -1}} {
		if _, ok := ContextEPID(c.base, c.i); ok {
			t.Fatalf("ContextEPID(%#x, %d) is valid", c.base, c.i)
		}
	}
}
