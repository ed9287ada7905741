// Package match owns tag matching, the rule and the state behind every
// receive the provider completes in Go:
//
//   - the rule: a receive takes a message of its match space (untagged
//     FI_MSG or tagged FI_TAGGED, as in psm2, where the message kind is
//     part of the wire tag) when the source fits (any, or the directed
//     peer) and ((tag ^ rtag) &^ ignore) == 0 (Key, Op.Matches);
//   - the order: the first posted receive that matches takes a message,
//     and a receive takes the first unexpected message that matches, so
//     the messages of one sender are received in the order sent
//     (FI_ORDER_SAS); a multi-receive buffer stays posted until it is
//     released;
//   - the queues: posted receives and unexpected messages per space, and
//     the messages an FI_PEEK|FI_CLAIM set aside for their receive;
//   - the table of ops in flight, named on the wire by their index (the
//     cookie), whose free entries are reused;
//   - what unexpected messages keep (their count and payload bytes, in
//     pooled buffers), which the provider bounds (FI_PSM2_UNEXP_COUNT,
//     FI_PSM2_UNEXP_BYTES).
//
// An Op carries, beyond what matching needs, the state of the protocol
// that uses it (Proto: the provider's RMA state), so that one table names
// sends, receives and RMA operations alike.
//
// What a match leads to (copying into the receive buffer, fetching a
// rendezvous, writing the completion) is the provider's (provider/msg.go);
// the C fast path applies the same rule to the receives it queues
// (cmd/libfabric-psm2/fast/match.h), and provider's fastc_diff_test.go
// checks the two against each other. An Engine belongs to one endpoint and
// is used under its domain lock.
package match
