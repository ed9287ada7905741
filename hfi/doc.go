// Package hfi is the inter-node wire: it moves messages between endpoints
// on different hosts, as PSM2's hfi device does over Omni-Path, but over
// any IPv4 network.
//
// It owns the choice of the address endpoints bind (addr.go; package
// transport encodes address, port and context in the endpoint id), the
// packet format (packet.go), the per-peer reliable
// flows (flow.go: 31-bit PSNs, cumulative and coalesced ACKs, a NAK with
// a selective-acknowledgement bitmap on a gap, selective retransmission,
// an adaptive PSM2_ERRCHK_TIMEOUT, flow credits, duplicate suppression,
// ACKs checked against what was sent, the path MTU), peers and their
// slots, reconnection and failure (peer.go), connection set-up
// (handshake.go: a handshake with a stateless cookie and proofs of the job
// key, random per-connection secrets, the peers' rails), the wire's secrets and per-packet authentication
// (auth.go), the bounds on what a peer can make an endpoint hold and the
// busy answer that holds a sender back (admit.go), the eager and
// rendezvous protocols (msg.go: input checks every packet against its
// connection), and the receive side (recv.go): a thread that drains the
// network into an arrival ring the C side can probe, and that hands the
// socket to the polling thread while packets flow (endpoint.go,
// pollDirect). It implements transport.Endpoint; package route puts it
// beside shm under one provider endpoint. docs/hfi.md has the threat
// model the checks answer.
//
// The network itself is a Backend (backend.go): a datagram service that
// may drop, reorder or duplicate. The one here is UDP (udp.go); a
// hardware backend would implement the same small interface.
//
// docs/hfi.md describes the wire format and every variable.
package hfi
