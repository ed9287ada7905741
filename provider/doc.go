// Package provider is libfabric's psm2 provider in Go: what every fid
// means and does. The C shim (cmd/libfabric-psm2) unpacks the ABI's
// arguments and calls it; the wires under it (transport, shm, hfi) move
// bytes. It owns:
//
//   - fi_getinfo with the provider's state (provider.go: parameters,
//     contexts, addresses; the entries and the generic hint rules are
//     package provider/getinfo), the FI_PSM2_* parameters (params.go), the endpoint names
//     and addresses (addr.go, av.go; nameserver.go starts the name
//     server, package provider/names), and the wires an endpoint opens
//     (wire.go);
//   - the objects: fabric, domain (its lock and progress: domain.go,
//     lock.go, progress.go), endpoint (ep.go), shared transmit context
//     (stx.go), CQ, counter, EQ, MR, wait and poll sets;
//   - the message path (msg.go): sends and receives over the endpoint's
//     matching engine (package provider/match: the rule, posted receives,
//     unexpected messages, the ops in flight), landing and completing
//     them; the limits on what a sender makes it keep; the sends the wire
//     has no room for (sendq.go);
//   - the protocols it builds over any wire's Send and Fetch: RMA
//     (rma.go), atomics (atomic.go), collectives (coll.go), triggered
//     calls (trigger.go); the arithmetic atomics and reductions apply is
//     package provider/atomicop;
//   - the pages the C fast path reads and writes, and the rules for when
//     C may act without Go (fastpath.go, fastep.go, fastrma.go; their
//     layout is described to C through internal/cabi);
//   - the one map from the errors below it to FI_E* codes (errno.go).
//
// docs/provider.md describes it; docs/architecture.md places it among
// the rest.
package provider
