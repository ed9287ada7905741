package provider

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// EPNameLen is the size of an endpoint name (FI_ADDR_PSMX2).
const EPNameLen = 16

// Endpoint name types.
const (
	EPNameRegular  = 0
	EPNameScalable = 1
	EPNameSrcAddr  = 2
)

// Reserved values of an endpoint name.
const (
	ReservedEPID = 0xFFFF // epid of a name that is only a source hint
	AnyUnit      = -1
	AnyPort      = 0
	AnyService   = 0
)

// EPName is the 16-byte FI_ADDR_PSMX2 address: a u64 endpoint id, then
// type, sep_id (or unit for a source address), port, one pad byte and a
// u32 service, all little-endian.
type EPName struct {
	EPID    uint64
	Type    uint8
	SepID   uint8 // the unit (int8, -1 any) when Type is EPNameSrcAddr
	Port    uint8
	Service uint32
}

// Unit reads SepID as the signed unit number of a source address.
func (n EPName) Unit() int { return int(int8(n.SepID)) }

// Marshal encodes the name in its 16-byte wire form.
func (n EPName) Marshal() []byte {
	b := make([]byte, EPNameLen)
	binary.LittleEndian.PutUint64(b[0:], n.EPID)
	b[8] = n.Type
	b[9] = n.SepID
	b[10] = n.Port
	binary.LittleEndian.PutUint32(b[12:], n.Service)
	return b
}

// UnmarshalEPName decodes a 16-byte name.
func UnmarshalEPName(b []byte) (EPName, error) {
	if len(b) < EPNameLen {
		return EPName{}, fmt.Errorf("endpoint name is %d bytes, want %d", len(b), EPNameLen)
	}
	return EPName{
		EPID:    binary.LittleEndian.Uint64(b[0:]),
		Type:    b[8],
		SepID:   b[9],
		Port:    b[10],
		Service: binary.LittleEndian.Uint32(b[12:]),
	}, nil
}

// words returns the name as the two u64 words its string form prints.
func (n EPName) words() (uint64, uint64) {
	b := n.Marshal()
	return binary.LittleEndian.Uint64(b[0:]), binary.LittleEndian.Uint64(b[8:])
}

// String is the FI_ADDR_STR form, "fi_addr_psmx2://<hex>:<hex>".
func (n EPName) String() string {
	w0, w1 := n.words()
	return fmt.Sprintf("fi_addr_psmx2://%x:%x", w0, w1)
}

// StringAddr is the FI_ADDR_STR address as it travels in fi_info: the
// string with its terminating NUL.
func (n EPName) StringAddr() []byte { return append([]byte(n.String()), 0) }

// ParseEPNameString parses "fi_addr_psmx2://<hex>:<hex>". The scheme is
// matched without regard to case, as libfabric does.
func ParseEPNameString(s string) (EPName, error) {
	s = strings.TrimRight(s, "\x00")
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || !strings.EqualFold(scheme, "fi_addr_psmx2") {
		return EPName{}, fmt.Errorf("%q is not an fi_addr_psmx2:// address", s)
	}
	a, b, ok := strings.Cut(rest, ":")
	if !ok {
		return EPName{}, fmt.Errorf("%q: want two hex words joined by ':'", s)
	}
	w0, err := strconv.ParseUint(trimHex(a), 16, 64)
	if err != nil {
		return EPName{}, fmt.Errorf("%q: bad first word", s)
	}
	w1, err := strconv.ParseUint(trimHex(b), 16, 64)
	if err != nil {
		return EPName{}, fmt.Errorf("%q: bad second word", s)
	}
	raw := make([]byte, EPNameLen)
	binary.LittleEndian.PutUint64(raw[0:], w0)
	binary.LittleEndian.PutUint64(raw[8:], w1)
	return UnmarshalEPName(raw)
}

// trimHex drops an optional 0x prefix, which scanf's %x accepts.
func trimHex(s string) string {
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		return s[2:]
	}
	return s
}

// name is the endpoint's 16-byte name.
func (ep *Endpoint) name() EPName { return EPName{EPID: ep.epid, Type: EPNameRegular} }

// Name is fi_getname: the name (or, with FI_ADDR_STR, its string form
// with its NUL) copied into buf; it returns the full size, and a short
// buffer gives ETOOSMALL after a partial copy (a zero-length one gives
// ETOOSMALL at once).
func (ep *Endpoint) Name(buf []byte) (int, error) { return nameInto(ep.name(), ep.addrFormat, buf) }

// nameInto copies name n into buf in address format format.
func nameInto(n EPName, format uint32, buf []byte) (int, error) {
	var raw []byte
	if format == fi.ADDR_STR {
		raw = n.StringAddr()
	} else {
		var b [EPNameLen]byte
		n.put(b[:])
		raw = b[:]
	}
	copy(buf, raw)
	if len(buf) < len(raw) {
		return len(raw), fi.ETOOSMALL
	}
	return len(raw), nil
}

// SetName is fi_setname: a psm2 endpoint's name is its wire address, fixed
// when it opens, so only that same name is accepted.
func (ep *Endpoint) SetName(name []byte) error {
	if len(name) < EPNameLen {
		return fi.EINVAL
	}
	n, _ := UnmarshalEPName(name)
	if n.EPID != ep.epid {
		return fi.ENOSYS
	}
	return nil
}
