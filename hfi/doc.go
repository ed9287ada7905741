// Package hfi is the inter-node wire: it moves messages between endpoints
// on different hosts, as PSM2's hfi device does over Omni-Path, but over
// any IPv4 network.
//
// It owns the endpoint id's network half (addr.go: IPv4 address, UDP
// port, context), the packet format (packet.go), the per-peer reliable
// flows (flow.go: 31-bit PSNs, cumulative and coalesced ACKs, a NAK with
// a selective-acknowledgement bitmap on a gap, selective retransmission,
// an adaptive PSM2_ERRCHK_TIMEOUT, flow credits, duplicate suppression),
// peers and connection set-up with the job key (peer.go), the eager and
// rendezvous protocols (msg.go), and the receive side (recv.go): a thread
// that drains the network into an arrival ring the C side can probe, and
// that hands the socket to the polling thread while packets flow
// (endpoint.go, pollDirect). It implements transport.Endpoint; package
// route puts it beside shm under one provider endpoint.
//
// The network itself is a Backend (backend.go): a datagram service that
// may drop, reorder or duplicate. The one here is UDP (udp.go); a
// hardware backend would implement the same small interface.
//
// docs/hfi.md describes the wire format and every variable.
package hfi
