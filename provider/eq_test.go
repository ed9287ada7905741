package provider

import (
	"bytes"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

func ctlOpenEQ(t *testing.T, f *Fabric, attr *EQAttr) *EQ {
	t.Helper()
	eq, err := f.OpenEQ(attr)
	if err != nil {
		t.Fatalf("OpenEQ: %v", err)
	}
	t.Cleanup(func() { eq.Close() })
	return eq
}

func TestOpenEQ(t *testing.T) {
	f := ctlTestFabric(t)
	ws, _ := f.OpenWaitSet(&WaitAttr{WaitObj: fi.WAIT_FD})
	tests := []struct {
		name    string
		attr    *EQAttr
		wantErr error
		wantObj int32
		hasFD   bool
	}{
		{"none", &EQAttr{}, nil, fi.WAIT_NONE, false},
		{"unspec is fd", &EQAttr{WaitObj: fi.WAIT_UNSPEC}, nil, fi.WAIT_FD, true},
		{"fd", &EQAttr{WaitObj: fi.WAIT_FD, Size: 16}, nil, fi.WAIT_FD, true},
		{"pollfd", &EQAttr{WaitObj: fi.WAIT_POLLFD}, nil, fi.WAIT_POLLFD, true},
		{"mutex_cond", &EQAttr{WaitObj: fi.WAIT_MUTEX_COND}, nil, fi.WAIT_MUTEX_COND, false},
		{"yield", &EQAttr{WaitObj: fi.WAIT_YIELD}, nil, fi.WAIT_YIELD, false},
		{"set", &EQAttr{WaitObj: fi.WAIT_SET, WaitSet: ws}, nil, fi.WAIT_SET, false},
		{"FI_WRITE", &EQAttr{Flags: fi.WRITE}, nil, fi.WAIT_NONE, false},
		{"set without a set", &EQAttr{WaitObj: fi.WAIT_SET}, fi.EINVAL, 0, false},
		{"unknown wait object", &EQAttr{WaitObj: 99}, fi.EINVAL, 0, false},
		{"FI_AFFINITY", &EQAttr{Flags: fi.AFFINITY}, fi.EINVAL, 0, false},
		{"nil attr", nil, fi.EINVAL, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eq, err := f.OpenEQ(tt.attr)
			if tt.wantErr != nil {
				if err != tt.wantErr || eq != nil {
					t.Fatalf("OpenEQ = %v, %v; want nil, %v", eq, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenEQ: %v", err)
			}
			if got := eq.WaitObj(); got != tt.wantObj {
				t.Errorf("WaitObj = %d, want %d", got, tt.wantObj)
			}
			if _, err := eq.WaitFD(); (err == nil) != tt.hasFD {
				t.Errorf("WaitFD error = %v, want an fd: %v", err, tt.hasFD)
			}
			if err := eq.Close(); err != nil {
				t.Errorf("Close = %v", err)
			}
		})
	}
	if err := ws.Close(); err != nil {
		t.Errorf("wait set Close after its EQ closed = %v", err)
	}
}

func TestEQReadWrite(t *testing.T) {
	f := ctlTestFabric(t)
	eq := ctlOpenEQ(t, f, &EQAttr{WaitObj: fi.WAIT_UNSPEC, Flags: fi.WRITE})
	buf := make([]byte, 64)
	if n, _, err := eq.Read(buf, 0); err != fi.EAGAIN || n != 0 {
		t.Fatalf("Read of an empty EQ = %d, %v; want EAGAIN", n, err)
	}
	if n, err := eq.Write(fi.NOTIFY, []byte("hello"), 0); n != 5 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if n, err := eq.Write(fi.MR_COMPLETE, []byte("second event"), 0); n != 12 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	n, ev, err := eq.Read(buf, fi.PEEK)
	if err != nil || n != 5 || ev != fi.NOTIFY || string(buf[:n]) != "hello" {
		t.Errorf("Read(PEEK) = %d %d %v %q", n, ev, err, buf[:n])
	}
	// A short buffer gets what fits; the event is consumed.
	n, ev, err = eq.Read(buf[:3], 0)
	if err != nil || n != 3 || ev != fi.NOTIFY || string(buf[:n]) != "hel" {
		t.Errorf("short Read = %d %d %v %q", n, ev, err, buf[:n])
	}
	// A nil buffer consumes the event and copies nothing.
	n, ev, err = eq.Read(nil, 0)
	if err != nil || n != 0 || ev != fi.MR_COMPLETE {
		t.Errorf("Read(nil) = %d %d %v", n, ev, err)
	}
	if _, _, err := eq.Read(buf, 0); err != fi.EAGAIN {
		t.Errorf("Read after draining = %v, want EAGAIN", err)
	}
}

func TestEQPostEvent(t *testing.T) {
	f := ctlTestFabric(t)
	eq := ctlOpenEQ(t, f, &EQAttr{})
	eq.postEvent(fi.AV_COMPLETE, 0x1000, 0x2000, 7)
	buf := make([]byte, 32)
	n, ev, err := eq.Read(buf, 0)
	if err != nil || n != EQEntrySize || ev != fi.AV_COMPLETE {
		t.Fatalf("Read = %d %d %v", n, ev, err)
	}
	ne := binary.NativeEndian
	if ne.Uint64(buf) != 0x1000 || ne.Uint64(buf[8:]) != 0x2000 || ne.Uint64(buf[16:]) != 7 {
		t.Errorf("fi_eq_entry = %x", buf[:n])
	}
}

func TestEQErrors(t *testing.T) {
	f := ctlTestFabric(t)
	eq := ctlOpenEQ(t, f, &EQAttr{WaitObj: fi.WAIT_FD})
	var e EQErrEntry
	if _, err := eq.ReadErr(&e, 0); err != fi.EAGAIN {
		t.Errorf("ReadErr of an empty EQ = %v, want EAGAIN", err)
	}
	if _, err := eq.ReadErr(nil, 0); err != fi.EINVAL {
		t.Errorf("ReadErr(nil) = %v, want EINVAL", err)
	}
	eq.postEvent(fi.AV_COMPLETE, 1, 2, 3)
	eq.postError(0x10, 0x20, 4, fi.EINVAL, -22)
	eq.postEvent(fi.AV_COMPLETE, 5, 6, 7)

	// The event at the head is not an error.
	if _, err := eq.ReadErr(&e, 0); err != fi.EAGAIN {
		t.Errorf("ReadErr with an event at the head = %v, want EAGAIN", err)
	}
	if _, _, err := eq.Read(nil, 0); err != nil {
		t.Fatalf("Read = %v", err)
	}
	if _, _, err := eq.Read(nil, 0); err != fi.EAVAIL {
		t.Errorf("Read with an error at the head = %v, want EAVAIL", err)
	}
	if n, err := eq.ReadErr(&e, fi.PEEK); err != nil || n != EQErrEntrySize {
		t.Errorf("ReadErr(PEEK) = %d, %v", n, err)
	}
	e = EQErrEntry{}
	n, err := eq.ReadErr(&e, 0)
	want := EQErrEntry{Fid: 0x10, Context: 0x20, Data: 4, Err: int32(fi.EINVAL), ProvErrno: -22}
	if err != nil || n != EQErrEntrySize || e.Fid != want.Fid || e.Context != want.Context ||
		e.Data != want.Data || e.Err != want.Err || e.ProvErrno != want.ProvErrno {
		t.Errorf("ReadErr = %d, %v, %+v; want %+v", n, err, e, want)
	}
	if _, err := eq.ReadErr(&e, 0); err != fi.EAGAIN {
		t.Errorf("second ReadErr = %v, want EAGAIN", err)
	}
	buf := make([]byte, 24)
	if _, ev, err := eq.Read(buf, 0); err != nil || ev != fi.AV_COMPLETE || binary.NativeEndian.Uint64(buf) != 5 {
		t.Errorf("Read after the error = %d, %v", ev, err)
	}
	if got := eq.StrError(-int(fi.EAVAIL)); got != "Error available" {
		t.Errorf("StrError = %q", got)
	}
}

func TestEQWriteErr(t *testing.T) {
	f := ctlTestFabric(t)
	eq := ctlOpenEQ(t, f, &EQAttr{Flags: fi.WRITE})
	// The C layout of struct fi_eq_err_entry.
	b := make([]byte, EQErrEntrySize)
	ne := binary.NativeEndian
	ne.PutUint64(b[0:], 0xf1d)
	ne.PutUint64(b[8:], 0xc0)
	ne.PutUint64(b[16:], 99)
	ne.PutUint32(b[24:], uint32(fi.ECANCELED))
	ne.PutUint32(b[28:], 5)
	if n, err := eq.Write(fi.NOTIFY, b, EQErr); n != EQErrEntrySize || err != nil {
		t.Fatalf("Write(EQErr) = %d, %v", n, err)
	}
	if n, err := eq.Write(fi.NOTIFY, b[:10], EQErr); n != 0 || err != fi.EINVAL {
		t.Errorf("Write(EQErr) of a short entry = %d, %v; want EINVAL", n, err)
	}
	var e EQErrEntry
	if _, err := eq.ReadErr(&e, 0); err != nil {
		t.Fatal(err)
	}
	if e.Fid != 0xf1d || e.Context != 0xc0 || e.Data != 99 || e.Err != int32(fi.ECANCELED) || e.ProvErrno != 5 || e.ErrData != nil {
		t.Errorf("entry = %+v", e)
	}
	data := []byte{1, 2, 3}
	if n, err := eq.WriteErr(fi.NOTIFY, &EQErrEntry{Err: 1, ErrData: data}); n != EQErrEntrySize || err != nil {
		t.Fatalf("WriteErr = %d, %v", n, err)
	}
	data[0] = 9 // the EQ keeps its own copy
	if _, err := eq.ReadErr(&e, 0); err != nil || !bytes.Equal(e.ErrData, []byte{1, 2, 3}) {
		t.Errorf("ReadErr = %v, err_data %v", err, e.ErrData)
	}
	if _, err := eq.WriteErr(0, nil); err != fi.EINVAL {
		t.Errorf("WriteErr(nil) = %v, want EINVAL", err)
	}
}

func TestEQFD(t *testing.T) {
	f := ctlTestFabric(t)
	eq := ctlOpenEQ(t, f, &EQAttr{WaitObj: fi.WAIT_FD})
	fd, err := eq.WaitFD()
	if err != nil {
		t.Fatal(err)
	}
	if fdReadable(t, fd) {
		t.Error("fd readable with nothing queued")
	}
	eq.postEvent(fi.AV_COMPLETE, 0, 0, 1)
	eq.postError(0, 0, 0, fi.EIO, 0)
	if !fdReadable(t, fd) {
		t.Error("fd not readable with events queued")
	}
	eq.Read(nil, fi.PEEK)
	eq.Read(nil, 0)
	if !fdReadable(t, fd) {
		t.Error("fd not readable with an error queued")
	}
	var e EQErrEntry
	eq.ReadErr(&e, 0)
	if fdReadable(t, fd) {
		t.Error("fd readable after the queue emptied")
	}
	if err := f.TryWait([]Waitable{eq}); err != nil {
		t.Errorf("TryWait on an empty EQ = %v", err)
	}
	eq.postEvent(fi.AV_COMPLETE, 0, 0, 1)
	if err := f.TryWait([]Waitable{eq}); err != fi.EAGAIN {
		t.Errorf("TryWait with an event = %v, want EAGAIN", err)
	}
	if !fdReadable(t, fd) {
		t.Error("fd not readable after a new event")
	}
}

func TestEQSRead(t *testing.T) {
	f := ctlTestFabric(t)
	none := ctlOpenEQ(t, f, &EQAttr{})
	if _, _, err := none.SRead(nil, 0, 0); err != fi.ENOSYS {
		t.Errorf("SRead on FI_WAIT_NONE = %v, want ENOSYS", err)
	}
	eq := ctlOpenEQ(t, f, &EQAttr{WaitObj: fi.WAIT_MUTEX_COND})
	start := time.Now()
	if _, _, err := eq.SRead(nil, 0, 30); err != fi.EAGAIN {
		t.Errorf("SRead timeout = %v, want EAGAIN", err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("SRead(30) returned after %v", d)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		eq.postEvent(fi.AV_COMPLETE, 0, 0, 42)
	}()
	buf := make([]byte, EQEntrySize)
	n, ev, err := eq.SRead(buf, 0, -1)
	if err != nil || n != EQEntrySize || ev != fi.AV_COMPLETE || binary.NativeEndian.Uint64(buf[16:]) != 42 {
		t.Errorf("SRead = %d %d %v", n, ev, err)
	}
	eq.postError(0, 0, 0, fi.EIO, 0)
	if _, _, err := eq.SRead(buf, 0, -1); err != fi.EAVAIL {
		t.Errorf("SRead with an error queued = %v, want EAVAIL", err)
	}
}

func TestEQCloseBusy(t *testing.T) {
	f := ctlTestFabric(t)
	eq, _ := f.OpenEQ(&EQAttr{WaitObj: fi.WAIT_FD})
	eq.hold()
	if err := eq.Close(); err != fi.EBUSY {
		t.Errorf("Close while bound = %v, want EBUSY", err)
	}
	eq.drop()
	eq.postEvent(fi.AV_COMPLETE, 0, 0, 0)
	if err := eq.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if err := eq.Close(); err != fi.EINVAL {
		t.Errorf("second Close = %v, want EINVAL", err)
	}
	eq.postEvent(fi.AV_COMPLETE, 0, 0, 0) // dropped, no panic
}

func TestEQConcurrent(t *testing.T) {
	f := ctlTestFabric(t)
	eq := ctlOpenEQ(t, f, &EQAttr{WaitObj: fi.WAIT_UNSPEC})
	const writers, per = 4, 500
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				if i%10 == 0 {
					eq.postError(0, 0, uint64(i), fi.EIO, 0)
				} else {
					eq.postEvent(fi.AV_COMPLETE, 0, 0, uint64(i))
				}
			}
		}()
	}
	got := 0
	var e EQErrEntry
	for got < writers*per {
		_, _, err := eq.SRead(nil, 0, 5000)
		switch err {
		case nil:
			got++
		case fi.EAVAIL:
			if _, err := eq.ReadErr(&e, 0); err != nil {
				t.Fatalf("ReadErr = %v", err)
			}
			got++
		default:
			t.Fatalf("SRead = %v after %d entries", err, got)
		}
	}
	wg.Wait()
	if eq.ready() {
		t.Error("entries left over")
	}
}
