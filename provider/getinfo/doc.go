// Package getinfo owns what fi_getinfo answers for psm2 and how hints
// select and narrow it: the provider's capabilities, limits and
// identities (attr.go: Caps, IovLimit, MaxMsgSize, ProvName, ...), the
// three entry shapes it offers (Entry: 64-bit tags, 60-bit tags with CQ
// data, RMA only), and libfabric's generic hint rules, applied in the
// order every util-layer provider applies them (rules.go: Check, Alter).
//
// It is pure: fi.Info in, fi.Info out, no state. The psm2-specific steps
// that need the provider's state (parameters, the name server, contexts
// in use, source and destination addresses) stay in provider's GetInfo,
// which calls this package for the rest.
package getinfo
