package provider

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider/names"
)

// TestNameServer: an endpoint's (service, name) registered with the
// node's server is what fi_getinfo(node, service) finds; another process
// of the job (a second provider, which finds the port taken) registers
// through the first one's server; an unknown service is ENODATA.
func TestNameServer(t *testing.T) {
	// A job key (so a port) of this run's own: another run of the test
	// on the machine serves its own.
	uuid := fmt.Sprintf("0badc0de-0000-0000-0000-%012x", rand.Uint64()>>16)
	env := map[string]string{"FI_PSM2_UUID": uuid}
	p1, _ := newTestProvider(t, env)
	p2, _ := newTestProvider(t, env)
	ns1, ns2 := p1.names(), p2.names()
	t.Cleanup(func() { ns1.Close(); ns2.Close() })
	if !ns1.Serving() || ns2.Serving() {
		t.Fatalf("want the first provider to serve and the second to be a client: %v %v", ns1.Serving(), ns2.Serving())
	}
	a := EPName{EPID: makeEPID(4242, 7, 1), Type: EPNameRegular}
	b := EPName{EPID: makeEPID(4343, 7, 2), Type: EPNameRegular}
	p1.register(9228, a, names.OpAdd)
	p2.register(9229, b, names.OpAdd)
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
	p2.register(9229, b, names.OpDel)
	if _, err := p1.GetInfo(fi.Version(1, 17), "127.0.0.1", "9229", 0, nil); !errors.Is(err, fi.ENODATA) {
		t.Errorf("a deleted service: %v, want ENODATA", err)
	}
	if _, err := p1.GetInfo(fi.Version(1, 17), "127.0.0.1", "4711", 0, nil); !errors.Is(err, fi.ENODATA) {
		t.Errorf("an unknown service: %v, want ENODATA", err)
	}
}

// TestNameServerPortHeldByStranger: a process that is not our name server
// holds the port (it accepts and says nothing, or speaks another
// protocol): fi_getinfo(node, service) fails within the timeout instead
// of hanging, with the reason in the log.
func TestNameServerPortHeldByStranger(t *testing.T) {
	for _, tc := range []struct {
		name  string
		greet []byte
	}{{"silent", nil}, {"another protocol", []byte("SSH-2.0-OpenSSH_9.2\r\n")}} {
		t.Run(tc.name, func(t *testing.T) {
			// A job key of its own per run: the port follows from it, and
			// another run of this test on the machine holds its own.
			var ln net.Listener
			var uuid string
			for try := 0; ln == nil; try++ {
				uuid = fmt.Sprintf("0badc0de-0000-0000-0000-%012x", rand.Uint64()>>16)
				job, _ := ParseUUID(uuid)
				var err error
				ln, err = net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(job.NameServerPort()))))
				if err != nil && try == 10 {
					t.Fatal(err)
				}
			}
			defer ln.Close()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					if tc.greet != nil {
						c.Write(tc.greet)
					}
					defer c.Close()
				}
			}()
			p, h := newTestProvider(t, map[string]string{"FI_PSM2_UUID": uuid})
			ns := p.names()
			t.Cleanup(ns.Close)
			start := time.Now()
			_, err := p.GetInfo(fi.Version(1, 17), "127.0.0.1", "9228", 0, nil)
			if err == nil || time.Since(start) > 3*time.Second {
				t.Fatalf("GetInfo = %v after %v; want an error within the timeout", err, time.Since(start))
			}
			if !strings.Contains(strings.Join(h.warnings(), ""), "held by a process that is not this job's name server") {
				t.Errorf("no warning about the port in the log:\n%s", strings.Join(h.warnings(), ""))
			}
		})
	}
}
