package hfi

import (
	"bufio"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// Endpoint ids (package transport owns their encoding: NetEPID,
// EPIDAddr) carry the address and port a peer's packets go to, the ones
// ChooseAddr and the UDP backend pick.

// ChooseAddr picks the IPv4 address endpoints bind, from iface
// (FI_PSM2_IFACE): an interface name ("eth0"), an address ("10.0.0.5") or a
// network ("10.0.0.0/24": the first local address in it). Empty iface
// means the address of the default route's interface; without a default
// route (an isolated cluster network), the address of the host's only
// interface that is up, not loopback and has an IPv4 address; else
// 127.0.0.1.
func ChooseAddr(iface string) ([4]byte, error) {
	iface = strings.TrimSpace(iface)
	if iface == "" {
		if name := defaultRouteIface(); name != "" {
			if ip, err := ifaceAddr(name); err == nil {
				return ip, nil
			}
		}
		if ip, ok := soleAddr(upIfaceAddrs()); ok {
			return ip, nil
		}
		return [4]byte{127, 0, 0, 1}, nil
	}
	if a, err := netip.ParseAddr(iface); err == nil {
		if !a.Is4() {
			return [4]byte{}, fmt.Errorf("FI_PSM2_IFACE=%s: only IPv4 addresses are supported", iface)
		}
		return a.As4(), nil
	}
	if p, err := netip.ParsePrefix(iface); err == nil {
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			return [4]byte{}, err
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP.To4()); ok && p.Contains(ip) {
					return ip.As4(), nil
				}
			}
		}
		return [4]byte{}, fmt.Errorf("FI_PSM2_IFACE=%s: no local IPv4 address in that network", iface)
	}
	return ifaceAddr(iface)
}

// UnitAddr is the address of HFI unit unit (HFI_UNIT): the units are the
// interfaces that are up, not loopback, and have an IPv4 address, in the
// kernel's order (their index), and a unit's address is its interface's
// first. An error names how many units there are.
func UnitAddr(unit int) ([4]byte, error) {
	return nthUnit(upIfaceAddrs(), unit)
}

// UnitAddrs is the address of every HFI unit (UnitAddr), in order.
func UnitAddrs() [][4]byte {
	var out [][4]byte
	for _, a := range upIfaceAddrs() {
		if len(a) > 0 {
			out = append(out, a[0])
		}
	}
	return out
}

// ParseRailMap parses PSM2_MULTIRAIL_MAP, "unit:port,unit:port,..." (a
// unit alone is taken too; the port, 1 on every HFI, is not used): the
// units, in order.
func ParseRailMap(s string) ([]int, error) {
	var units []int
	for _, f := range strings.Split(strings.TrimSpace(s), ",") {
		u, _, _ := strings.Cut(strings.TrimSpace(f), ":")
		n, err := strconv.Atoi(strings.TrimSpace(u))
		if err != nil || n < 0 || n > 255 {
			return nil, fmt.Errorf("PSM2_MULTIRAIL_MAP=%q: want unit:port,... with units 0..255", s)
		}
		units = append(units, n)
	}
	return units, nil
}

// nthUnit is the first address of the unit-th of ifs that has one.
func nthUnit(ifs [][][4]byte, unit int) ([4]byte, error) {
	n := 0
	for _, a := range ifs {
		if len(a) == 0 {
			continue
		}
		if n == unit {
			return a[0], nil
		}
		n++
	}
	return [4]byte{}, fmt.Errorf("HFI_UNIT=%d: %d units (interfaces up with an IPv4 address)", unit, n)
}

// ifaceAddr is the first IPv4 address of interface name.
func ifaceAddr(name string) ([4]byte, error) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return [4]byte{}, fmt.Errorf("FI_PSM2_IFACE=%s: %w", name, err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return [4]byte{}, err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip4 := n.IP.To4(); ip4 != nil {
				return [4]byte(ip4), nil
			}
		}
	}
	return [4]byte{}, fmt.Errorf("FI_PSM2_IFACE=%s: interface has no IPv4 address", name)
}

// upIfaceAddrs lists, per interface that is up and not loopback, its
// IPv4 addresses.
func upIfaceAddrs() [][][4]byte {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var out [][][4]byte
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		var v4 [][4]byte
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip4 := n.IP.To4(); ip4 != nil && !ip4.IsLoopback() {
					v4 = append(v4, [4]byte(ip4))
				}
			}
		}
		out = append(out, v4)
	}
	return out
}

// soleAddr is the first address of the only interface of ifs that has an
// IPv4 address; false when none or several have one (which of several
// networks joins the hosts is the user's to say: FI_PSM2_IFACE).
func soleAddr(ifs [][][4]byte) ([4]byte, bool) {
	var ip [4]byte
	n := 0
	for _, a := range ifs {
		if len(a) > 0 {
			ip, n = a[0], n+1
		}
	}
	return ip, n == 1
}

// defaultRouteIface is the interface of the IPv4 default route
// (/proc/net/route), "" if none.
func defaultRouteIface() string {
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 8 && fs[1] == "00000000" && fs[7] == "00000000" {
			return fs[0]
		}
	}
	return ""
}

// ParsePortRange parses FI_PSM2_PORT_RANGE, "first-last" (or one port);
// empty means any port the kernel gives.
func ParsePortRange(s string) (first, last uint16, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		b = a
	}
	x, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 16)
	y, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 16)
	if err1 != nil || err2 != nil || x == 0 || y < x {
		return 0, 0, fmt.Errorf("FI_PSM2_PORT_RANGE=%q: want first-last, 1..65535", s)
	}
	return uint16(x), uint16(y), nil
}
