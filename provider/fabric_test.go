package provider

import (
	"errors"
	"sync"
	"testing"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

func TestOpenFabric(t *testing.T) {
	tests := []struct {
		name    string
		attr    *fi.FabricAttr
		wantErr error
	}{
		{"psm2", &fi.FabricAttr{Name: "psm2"}, nil},
		{"name is matched without case", &fi.FabricAttr{Name: "PSM2"}, nil},
		{"no name", &fi.FabricAttr{}, nil},
		{"attributes from GetInfo", &fi.FabricAttr{Name: "psm2", ProvName: "psm2", ProvVersion: fi.Version(117, 0), APIVersion: v117}, nil},
		{"wrong name", &fi.FabricAttr{Name: "tcp"}, fi.ENODATA},
		{"prefix of the name", &fi.FabricAttr{Name: "psm"}, fi.ENODATA},
		{"nil attr", nil, fi.EINVAL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newTestProvider(t, nil)
			f, err := p.OpenFabric(tt.attr)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || f != nil {
					t.Fatalf("OpenFabric = %v, %v; want nil, %v", f, err, tt.wantErr)
				}
				if fi.ToErrno(err) != tt.wantErr {
					t.Errorf("ToErrno = %v, want %v", fi.ToErrno(err), tt.wantErr)
				}
				if n := p.fabrics.Load(); n != 0 {
					t.Errorf("%d fabrics counted after a failed open", n)
				}
				return
			}
			if err != nil || f == nil {
				t.Fatalf("OpenFabric = %v, %v", f, err)
			}
			if n := p.fabrics.Load(); n != 1 {
				t.Errorf("%d fabrics open, want 1", n)
			}
			if err := f.Close(); err != nil {
				t.Errorf("Close = %v", err)
			}
			if n := p.fabrics.Load(); n != 0 {
				t.Errorf("%d fabrics open after close, want 0", n)
			}
			if err := f.Close(); !errors.Is(err, fi.EINVAL) {
				t.Errorf("second Close = %v, want EINVAL", err)
			}
			if n := p.fabrics.Load(); n != 0 {
				t.Errorf("%d fabrics open after a double close, want 0", n)
			}
		})
	}
}

func TestFabricCloseBusy(t *testing.T) {
	// Nothing opens domains yet; the counter is set by hand.
	p, _ := newTestProvider(t, nil)
	f, err := p.OpenFabric(&fi.FabricAttr{Name: "psm2"})
	if err != nil {
		t.Fatal(err)
	}
	f.domains.Store(1)
	if err := f.Close(); !errors.Is(err, fi.EBUSY) {
		t.Errorf("Close with a domain open = %v, want EBUSY", err)
	}
	if n := p.fabrics.Load(); n != 1 {
		t.Errorf("%d fabrics open after a refused close, want 1", n)
	}
	f.domains.Store(0)
	if err := f.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
}

func TestFabricConcurrentClose(t *testing.T) {
	p, _ := newTestProvider(t, nil)
	const n = 8
	fabrics := make([]*Fabric, n)
	for i := range fabrics {
		f, err := p.OpenFabric(&fi.FabricAttr{})
		if err != nil {
			t.Fatal(err)
		}
		fabrics[i] = f
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*n)
	for _, f := range fabrics {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- f.Close()
			}()
		}
	}
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, fi.EINVAL):
			t.Errorf("Close = %v", err)
		}
	}
	if ok != n {
		t.Errorf("%d closes succeeded, want %d (one per fabric)", ok, n)
	}
	if c := p.fabrics.Load(); c != 0 {
		t.Errorf("%d fabrics open, want 0", c)
	}
}

func TestProviderIdentity(t *testing.T) {
	p, _ := newTestProvider(t, nil)
	if p.Name() != "psm2" {
		t.Errorf("Name = %q", p.Name())
	}
	if p.Version() != fi.Version(117, 0) {
		t.Errorf("Version = %#x, want 117.0", p.Version())
	}
	if p.APIVersion() != fi.Version(1, 17) {
		t.Errorf("APIVersion = %#x, want 1.17", p.APIVersion())
	}
}
