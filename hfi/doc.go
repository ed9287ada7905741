// Package hfi is the inter-node wire: it moves messages between endpoints
// on different hosts, as PSM2's hfi device does over Omni-Path, but over
// any IPv4 network.
//
// It owns the endpoint id's network half (addr.go: IPv4 address, UDP
// port, context), the packet format (packet.go), the per-peer reliable
// flows (flow.go: 31-bit PSNs, cumulative and coalesced ACKs, NAK on a
// gap, go-back-N retransmission on PSM2_ERRCHK_TIMEOUT, flow credits,
// duplicate suppression), connection set-up with the job key (conn.go),
// the eager and rendezvous protocols (msg.go) and the receive thread that
// drains the network into an arrival ring the C side can probe
// (recv.go). It implements transport.Endpoint; package route puts it
// beside shm under one provider endpoint.
//
// The network itself is a Backend (backend.go): a datagram service that
// may drop, reorder or duplicate. The one here is UDP (udp.go); a
// hardware backend would implement the same small interface.
//
// docs/hfi.md describes the wire format and every variable.
package hfi
