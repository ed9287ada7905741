package provider

import (
	"errors"
	"testing"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// TestNameServer: an endpoint's (service, name) registered with the
// node's server is what fi_getinfo(node, service) finds; another process
// of the job (a second provider, which finds the port taken) registers
// through the first one's server; an unknown service is ENODATA.
func TestNameServer(t *testing.T) {
	uuid := "0badc0de-0000-0000-0000-00000000abcd"
	env := map[string]string{"FI_PSM2_UUID": uuid}
	p1, _ := newTestProvider(t, env)
	p2, _ := newTestProvider(t, env)
	ns1, ns2 := p1.names(), p2.names()
	t.Cleanup(func() { ns1.close(); ns2.close() })
	if ns1.ln == nil || ns2.ln != nil {
		t.Fatalf("want the first provider to serve and the second to be a client: %v %v", ns1.ln, ns2.ln)
	}
	a := EPName{EPID: makeEPID(4242, 7, 1), Type: EPNameRegular}
	b := EPName{EPID: makeEPID(4343, 7, 2), Type: EPNameRegular}
	ns1.register(9228, a, nsOpAdd)
	ns2.register(9229, b, nsOpAdd)
	for _, tc := range []struct {
		service string
		want    EPName
	}{{"9228", a}, {"9229", b}} {
		infos, err := p2.GetInfo(fi.Version(1, 17), "127.0.0.1", tc.service, 0, nil)
		if err != nil || len(infos) == 0 {
			t.Fatalf("GetInfo(127.0.0.1, %s): %v", tc.service, err)
		}
		got, err := UnmarshalEPName(infos[0].DestAddr)
		if err != nil || got != tc.want {
			t.Errorf("service %s resolves to %+v, want %+v", tc.service, got, tc.want)
		}
	}
	ns2.register(9229, b, nsOpDel)
	if _, err := p1.GetInfo(fi.Version(1, 17), "127.0.0.1", "9229", 0, nil); !errors.Is(err, fi.ENODATA) {
		t.Errorf("a deleted service: %v, want ENODATA", err)
	}
	if _, err := p1.GetInfo(fi.Version(1, 17), "127.0.0.1", "4711", 0, nil); !errors.Is(err, fi.ENODATA) {
		t.Errorf("an unknown service: %v, want ENODATA", err)
	}
}
