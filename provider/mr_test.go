package provider

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

func TestRegMRScalableKeys(t *testing.T) {
	for _, mode := range []int32{0, fi.MR_SCALABLE} {
		d := ctlTestDomain(t, mode)
		iov := []MRIov{{Base: 0x10000, Len: 4096}}
		a, err := d.RegMR(iov, fi.REMOTE_WRITE, 0, 42, 0, 0xc0)
		if err != nil {
			t.Fatalf("mode %d: RegMR = %v", mode, err)
		}
		if a.Key() != 42 || a.Desc() != 42 || a.Context() != 0xc0 || a.Access() != fi.REMOTE_WRITE {
			t.Errorf("mode %d: key %d desc %d ctx %#x access %#x", mode, a.Key(), a.Desc(), a.Context(), a.Access())
		}
		if mr, err := d.RegMR(iov, 0, 0, 42, 0, 0); err != fi.ENOKEY || mr != nil {
			t.Errorf("mode %d: duplicate key = %v, %v; want ENOKEY", mode, mr, err)
		}
		b, err := d.RegMR(iov, 0, 0, 0, 0, 0)
		if err != nil || b.Key() != 0 {
			t.Errorf("mode %d: key 0 = %v, %v", mode, b, err)
		}
		if d.mrLookup(42) != a || d.mrLookup(0) != b || d.mrLookup(7) != nil {
			t.Errorf("mode %d: lookups wrong", mode)
		}
		if err := d.Close(); err != fi.EBUSY {
			t.Errorf("mode %d: domain Close with MRs = %v, want EBUSY", mode, err)
		}
		if err := a.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
		if err := a.Close(); err != fi.EINVAL {
			t.Errorf("second Close = %v, want EINVAL", err)
		}
		if d.mrLookup(42) != nil {
			t.Error("closed MR still found")
		}
		// The key is free again.
		c, err := d.RegMR(iov, 0, 0, 42, 0, 0)
		if err != nil {
			t.Errorf("reusing a freed key = %v", err)
		} else {
			c.Close()
		}
		b.Close()
	}
}

// TestRegMRProviderKeys: provider-assigned keys are random 64-bit
// values, never 0, never the requested one, all different, and
// scattered: a peer that tries keys (0, 1, 2, ... or a stride) finds
// none of them.
func TestRegMRProviderKeys(t *testing.T) {
	for _, mode := range []int32{fi.MR_BASIC, fi.MR_PROV_KEY, fi.MR_PROV_KEY | fi.MR_VIRT_ADDR | fi.MR_ALLOCATED} {
		d := ctlTestDomain(t, mode)
		iov := []MRIov{{Base: 0x10000, Len: 64}}
		var mrs []*MR
		seen := map[uint64]bool{}
		for i := 0; i < 64; i++ {
			mr, err := d.RegMR(iov, 0, 0, 42, 0, 0) // the requested key is ignored
			if err != nil {
				t.Fatalf("mode %#x: RegMR = %v", mode, err)
			}
			k := mr.Key()
			if k == 0 || k == 42 || seen[k] || k < 1<<32 && k > 0 {
				// (A random 64-bit key is below 2^32 once in 4 billion.)
				t.Errorf("mode %#x: key %#x: zero, requested, repeated or small", mode, k)
			}
			seen[k] = true
			mrs = append(mrs, mr)
		}
		for k := uint64(0); k < 1<<16; k++ {
			if d.mrLookup(k) != nil || d.mrLookup(k<<20) != nil {
				t.Fatalf("mode %#x: key %#x found by counting", mode, k)
			}
		}
		for _, mr := range mrs {
			mr.Close()
		}
	}
}

func TestRegMRArgs(t *testing.T) {
	d := ctlTestDomain(t, 0)
	iov := []MRIov{{Base: 0x1000, Len: 8}}
	tests := []struct {
		name    string
		iov     []MRIov
		access  uint64
		flags   uint64
		wantErr error
	}{
		{"every access bit", iov, mrAccess, 0, nil},
		{"no access", iov, 0, 0, nil},
		{"zero length", []MRIov{{Base: 0x1000}}, fi.READ, 0, nil},
		{"no iov", nil, fi.READ, 0, fi.EINVAL},
		{"bad access", iov, fi.REMOTE_READ | fi.TAGGED, 0, fi.EINVAL},
		{"flags", iov, fi.READ, fi.RMA_EVENT, fi.EBADFLAGS},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mr, err := d.RegMR(tt.iov, tt.access, 0, uint64(100+i), tt.flags, 0)
			if err != tt.wantErr {
				t.Fatalf("RegMR = %v, want %v", err, tt.wantErr)
			}
			if mr != nil {
				mr.Close()
			}
		})
	}
	if n := d.mrs.count(); n != 0 {
		t.Errorf("%d MRs left registered", n)
	}
}

func TestNormalizeIov(t *testing.T) {
	tests := []struct {
		name  string
		in    []MRIov
		want  []MRIov
		first uintptr
	}{
		{"one", []MRIov{{0x100, 16}}, []MRIov{{0x100, 16}}, 0x100},
		{"sorted", []MRIov{{0x300, 16}, {0x100, 16}}, []MRIov{{0x100, 16}, {0x300, 16}}, 0x100},
		{"overlap", []MRIov{{0x100, 0x20}, {0x110, 0x20}}, []MRIov{{0x100, 0x30}}, 0x100},
		{"touching", []MRIov{{0x110, 0x10}, {0x100, 0x10}}, []MRIov{{0x100, 0x20}}, 0x100},
		{"contained", []MRIov{{0x100, 0x40}, {0x110, 0x10}}, []MRIov{{0x100, 0x40}}, 0x100},
		{"empty dropped", []MRIov{{0x50, 0}, {0x100, 8}}, []MRIov{{0x100, 8}}, 0x50},
		{"all empty", []MRIov{{0x80, 0}}, []MRIov{}, 0x80},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]MRIov(nil), tt.in...)
			got, first := normalizeIov(in)
			if diff := cmp.Diff(tt.want, got); diff != "" || first != tt.first {
				t.Errorf("normalizeIov: first %#x (want %#x), diff:\n%s", first, tt.first, diff)
			}
			if diff := cmp.Diff(tt.in, in); diff != "" {
				t.Errorf("input modified:\n%s", diff)
			}
		})
	}
}

func TestMRValidate(t *testing.T) {
	// Scalable: RMA addresses are offsets from the registration's start
	// (moved by its offset argument).
	d := ctlTestDomain(t, 0)
	mr, err := d.RegMR([]MRIov{{0x2000, 0x100}, {0x1000, 0x100}}, fi.REMOTE_WRITE|fi.REMOTE_READ, 0, 7, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	withOff, _ := d.RegMR([]MRIov{{0x1000, 0x100}}, fi.REMOTE_READ, 0x1000, 8, 0, 0)
	defer withOff.Close()
	tests := []struct {
		name              string
		key, addr, length uint64
		access            uint64
		want              error
	}{
		{"start", 7, 0, 0x100, fi.REMOTE_WRITE, nil},
		{"second segment", 7, 0x1000, 0x100, fi.REMOTE_READ, nil},
		{"both access bits", 7, 0x10, 8, fi.REMOTE_READ | fi.REMOTE_WRITE, nil},
		{"past the first segment", 7, 0xf8, 0x10, fi.REMOTE_WRITE, fi.EACCES},
		{"in the gap", 7, 0x800, 8, fi.REMOTE_WRITE, fi.EACCES},
		{"access not granted", 7, 0, 8, fi.WRITE, fi.EACCES},
		{"unknown key", 9, 0, 8, fi.REMOTE_WRITE, fi.EINVAL},
		{"wrapping length", 7, 0x10, ^uint64(0), fi.REMOTE_WRITE, fi.EACCES},
		{"offset argument", 8, 0x1000, 0x100, fi.REMOTE_READ, nil},
		{"address translating to 0", 8, 0, 8, fi.REMOTE_READ, fi.EINVAL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := d.mrs.validate(tt.key, tt.addr, tt.length, tt.access); err != tt.want {
				t.Errorf("validate = %v, want %v", err, tt.want)
			}
		})
	}

	// Basic: RMA addresses are virtual addresses.
	b := ctlTestDomain(t, fi.MR_BASIC)
	bm, _ := b.RegMR([]MRIov{{0x4000, 0x100}}, fi.REMOTE_WRITE, 0, 0, 0, 0)
	defer bm.Close()
	if err := b.mrs.validate(bm.Key(), 0x4080, 0x80, fi.REMOTE_WRITE); err != nil {
		t.Errorf("basic validate = %v", err)
	}
	if err := b.mrs.validate(bm.Key(), 0x80, 0x10, fi.REMOTE_WRITE); err != fi.EACCES {
		t.Errorf("basic validate of an offset = %v, want EACCES", err)
	}
}

func TestMRBind(t *testing.T) {
	d := ctlTestDomain(t, 0)
	mr, _ := d.RegMR([]MRIov{{0x1000, 8}}, fi.REMOTE_WRITE, 0, 1, 0, 0)
	defer mr.Close()
	c1, c2 := &Cntr{}, &Cntr{}
	if err := mr.Bind(c1, fi.REMOTE_READ); err != fi.EINVAL {
		t.Errorf("Bind(cntr, REMOTE_READ) = %v, want EINVAL", err)
	}
	if err := mr.Bind(c1, 0); err != nil || mr.Cntr() != nil {
		t.Errorf("Bind(cntr, 0) = %v, cntr %v", err, mr.Cntr())
	}
	if err := mr.Bind(c1, fi.REMOTE_WRITE); err != nil || mr.Cntr() != c1 {
		t.Errorf("Bind(cntr, REMOTE_WRITE) = %v", err)
	}
	if err := mr.Bind(c1, fi.REMOTE_WRITE); err != nil {
		t.Errorf("binding the same counter again = %v", err)
	}
	if err := mr.Bind(c2, fi.REMOTE_WRITE); err != fi.EBUSY {
		t.Errorf("Bind of a second counter = %v, want EBUSY", err)
	}
	if err := mr.Bind(&Endpoint{}, 0); err != nil {
		t.Errorf("Bind(ep) = %v", err)
	}
	if err := mr.Bind((*Cntr)(nil), fi.REMOTE_WRITE); err != fi.EINVAL {
		t.Errorf("Bind(nil cntr) = %v, want EINVAL", err)
	}
	if err := mr.Bind(nil, 0); err != fi.EINVAL {
		t.Errorf("Bind(nil) = %v, want EINVAL", err)
	}
	if err := mr.Bind(&EQ{}, 0); err != fi.ENOSYS {
		t.Errorf("Bind(EQ) = %v, want ENOSYS", err)
	}
}

func TestMRConcurrent(t *testing.T) {
	d := ctlTestDomain(t, fi.MR_BASIC)
	var wg sync.WaitGroup
	keys := make(chan uint64, 800)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				mr, err := d.RegMR([]MRIov{{0x1000, 8}}, fi.REMOTE_READ, 0, 0, 0, 0)
				if err != nil {
					t.Error(err)
					return
				}
				keys <- mr.Key()
				d.mrs.validate(mr.Key(), 0x1000, 8, fi.REMOTE_READ)
				if i%2 == 0 {
					mr.Close()
				} else {
					defer mr.Close()
				}
			}
		}()
	}
	wg.Wait()
	close(keys)
	seen := map[uint64]bool{}
	for k := range keys {
		if seen[k] {
			t.Fatalf("key %d assigned twice", k)
		}
		seen[k] = true
	}
}

// TestProviderKeysFillTheCTable: random provider keys still give every
// region with remote access a slot of the C side's MR table while one is
// free (keys counted from 1 did; random ones would collide and leave
// those regions' requests to Go).
func TestProviderKeysFillTheCTable(t *testing.T) {
	d := ctlTestDomain(t, fi.MR_PROV_KEY|fi.MR_VIRT_ADDR|fi.MR_ALLOCATED)
	if d.fast == nil || !d.fastLock {
		t.Skip("no C fast path in this domain")
	}
	var mrs []*MR
	for i := 0; i < domMRCap; i++ {
		mr, err := d.RegMR([]MRIov{{Base: uintptr(0x10000 + i*0x1000), Len: 64}}, fi.REMOTE_READ|fi.REMOTE_WRITE, 0, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		mrs = append(mrs, mr)
	}
	for i, mr := range mrs {
		if !mr.published {
			t.Errorf("region %d (key %#x) not in the C table", i, mr.Key())
		}
		mr.Close()
	}
}
