package provider

import (
	"testing"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// ctlTestDomain opens a domain of the first fi_getinfo entry with mrMode.
func ctlTestDomain(t *testing.T, mrMode int32) *Domain {
	t.Helper()
	p, _ := newTestProvider(t, nil)
	f, err := p.OpenFabric(&fi.FabricAttr{Name: "psm2"})
	if err != nil {
		t.Fatalf("OpenFabric: %v", err)
	}
	infos, err := p.GetInfo(fi.Version(1, 17), "", "", 0, nil)
	if err != nil || len(infos) == 0 {
		t.Fatalf("GetInfo: %v", err)
	}
	info := infos[0]
	info.Domain.MRMode = mrMode
	d, err := f.OpenDomain(info)
	if err != nil {
		t.Fatalf("OpenDomain: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("domain Close at cleanup: %v", err)
		}
		f.Close()
	})
	return d
}

func TestOpenPollSet(t *testing.T) {
	d := ctlTestDomain(t, 0)
	if ps, err := d.OpenPollSet(nil); err != fi.EINVAL || ps != nil {
		t.Errorf("OpenPollSet(nil) = %v, %v; want EINVAL", ps, err)
	}
	if ps, err := d.OpenPollSet(&PollAttr{Flags: 1}); err != fi.EINVAL || ps != nil {
		t.Errorf("OpenPollSet(flags) = %v, %v; want EINVAL", ps, err)
	}
	ps, err := d.OpenPollSet(&PollAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != fi.EBUSY {
		t.Errorf("domain Close with a poll set open = %v, want EBUSY", err)
	}
	if err := ps.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if err := ps.Close(); err != fi.EINVAL {
		t.Errorf("second Close = %v, want EINVAL", err)
	}
}

func TestPollSetPoll(t *testing.T) {
	d := ctlTestDomain(t, 0)
	ps, _ := d.OpenPollSet(&PollAttr{})
	defer ps.Close()
	a, b, c := &ctlFake{}, &ctlFake{}, &ctlFake{}
	for i, w := range []*ctlFake{a, b, c} {
		if err := ps.Add(w, uintptr(0x100+i), 0); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	if err := ps.Add(a, 0x999, 0); err != nil {
		t.Errorf("adding a member twice = %v", err)
	}
	ctxs := make([]uintptr, 4)
	if n, err := ps.Poll(ctxs); n != 0 || err != nil {
		t.Errorf("Poll with nothing ready = %d, %v", n, err)
	}
	a.r.Store(true)
	c.r.Store(true)
	n, err := ps.Poll(ctxs)
	if err != nil || n != 2 || ctxs[0] != 0x100 || ctxs[1] != 0x102 {
		t.Errorf("Poll = %d, %v, %#x", n, err, ctxs[:n])
	}
	// A short array gets the first; every member is still polled.
	before := c.calls.Load()
	n, _ = ps.Poll(ctxs[:1])
	if n != 1 || ctxs[0] != 0x100 {
		t.Errorf("Poll into one slot = %d, %#x", n, ctxs[0])
	}
	if c.calls.Load() == before {
		t.Error("Poll skipped a member once the array was full")
	}
	if n, _ := ps.Poll(nil); n != 0 {
		t.Errorf("Poll(nil) = %d", n)
	}
	if err := ps.Del(a, 0); err != nil {
		t.Errorf("Del = %v", err)
	}
	if err := ps.Del(a, 0); err != nil {
		t.Errorf("Del of a non-member = %v, want nil (as libfabric)", err)
	}
	if n, _ := ps.Poll(ctxs); n != 1 || ctxs[0] != 0x102 {
		t.Errorf("Poll after Del = %d, %#x", n, ctxs[0])
	}
}

func TestPollSetMembers(t *testing.T) {
	d := ctlTestDomain(t, 0)
	f := d.fabricOf()
	ps, _ := d.OpenPollSet(&PollAttr{})
	defer ps.Close()
	eq, _ := f.OpenEQ(&EQAttr{})
	defer eq.Close()
	ws, _ := f.OpenWaitSet(&WaitAttr{WaitObj: fi.WAIT_FD})
	defer ws.Close()
	if err := ps.Add(eq, 1, 0); err != fi.EINVAL {
		t.Errorf("Add(EQ) = %v, want EINVAL", err)
	}
	if err := ps.Add(ws, 1, 0); err != fi.EINVAL {
		t.Errorf("Add(wait set) = %v, want EINVAL", err)
	}
	if err := ps.Add(nil, 1, 0); err != fi.EINVAL {
		t.Errorf("Add(nil) = %v, want EINVAL", err)
	}
	if err := ps.Del(nil, 0); err != fi.EINVAL {
		t.Errorf("Del(nil) = %v, want EINVAL", err)
	}
}
