// Package transport is the boundary between the provider's messaging
// engine (package provider: matching, completions, libfabric semantics) and
// the wires that move bytes between endpoints: the intra-node shared-memory
// path (package shm) and the inter-node HFI path (package hfi).
//
// A wire implements Endpoint. The provider owns everything above it: tag
// matching, the unexpected queue, completion queues and counters. The wire
// owns framing, flow control, reliability, rendezvous and peer liveness. The
// provider never sees wire formats; the wire never sees tags as more than 64
// opaque bits.
//
// Everything here is on the data path, so the contract is written to allow
// zero allocations per message: operations are named by uint64 cookies the
// provider chooses, events are delivered through a Handler the provider
// implements, and the Header passed to a Handler is borrowed for the call.
//
// Besides Endpoint, a wire may implement optional interfaces the provider
// looks for: Prober (arrival words the C side checks before it calls into
// Go), MessageRing (the shm ring the C side delivers from), FastSender
// (descriptors for the C side's inline sends), Reporter (counters logged
// at close) and Watcher (liveness of a peer the provider waits on with no
// operation of the wire pending: an RMA answer). A Handler may implement
// Admitter (bounds on what it keeps, which a wire that can hold its
// senders back asks first). RMA and atomics are not wire operations: the
// provider builds them from Send, Fetch and Discard, so every wire carries
// them.
//
// The package also owns the endpoint id's encoding (epid.go): where an
// endpoint is, which every wire and the router read.
package transport
