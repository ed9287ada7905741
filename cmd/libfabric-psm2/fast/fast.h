/* fast.h: the C fast path, the data-path calls C answers without calling
 * into Go. The library's C entry points (ep.c, cq.c) call these; each
 * returns PSM2_FAST_GO (or 0 entries) whenever it cannot do all of the
 * call, and the caller then makes the usual call into Go, which does
 * everything and finds every error.
 *
 * A call into Go costs about as much as libfabric's whole shm send, so the
 * hottest calls are done here when they are simple:
 *   - sends (send.c): fi_inject, fi_send, fi_tsend and their data variants
 *     of an inline-sized message to a connected shared-memory peer, pushed
 *     into the peer's ring; a longer one, up to the eager threshold, is
 *     copied into a bounce buffer named by one cell;
 *   - receives (deliver.c): fi_recv/fi_trecv with plain flags are queued
 *     in the endpoint's page, and fi_cq_read delivers inline, eager and
 *     rendezvous (CMA) messages to them and writes their completions;
 *   - small atomics, RMA reads and writes (atomic.c at the initiator,
 *     serve.c at the target);
 *   - the idle answer of fi_cq_read (idle.c).
 * All of it runs under the domain lock, so Go's state is consistent
 * while C looks at it: futex words Go takes all of (provider/lock.go)
 * and C the one of the lock slot its endpoint or CQ names
 * (provider/lockgroup.go, psm2_slot_lock), so threads on endpoints that
 * share no CQ do not serialize.
 *
 * The memory layouts are Go's, documented there and generated into
 * layout.h (internal/cabi):
 *   endpoint page, receive queue  provider/fastep.go
 *   domain page, CQ page          provider/fastpath.go
 *   fast-peer descriptor          shm/fastpeer.go
 *   ring                          internal/ring/ring.go, slots.go
 *   cells                         shm/cell.go
 * Sizes are never read from shared memory: a ring's cell count comes from
 * the descriptor or probe word Go wrote after validating it, so a peer
 * that rewrites its ring header cannot make C index past the mapping.
 *
 * One header per concern holds the small inline pieces the entry points
 * share: lock.h, page.h, ring.h, cell.h, stream.h, match.h, atomic.h. */
#ifndef PSM2_FAST_H
#define PSM2_FAST_H

#include <stdint.h>
#include <sys/types.h>
#include <rdma/fabric.h>

/* Every offset, size and flag of the memory C shares with Go, generated
 * from the Go constants (internal/cabi). PSM2_NO_COMPLETION there marks
 * the sends of the fi_inject* calls, which never generate a completion
 * (unlike a send with the FI_INJECT flag): an operation flag bit libfabric
 * leaves undefined. */
#include "layout.h"

#define PSM2_FAST_DONE 0
#define PSM2_FAST_GO 1

/* Endpoint page f (NULL: none), CQ page cqf (NULL: none). */
int psm2_fast_send(const uint64_t *f, const void *buf, size_t len, fi_addr_t dest, int tagged, uint64_t tag,
		   int has_data, uint64_t data, void *context, uint64_t flags);
int psm2_fast_recv(uint64_t *f, void *buf, size_t len, fi_addr_t src, uint64_t tag, uint64_t ignore,
		   void *context, uint64_t flags);
int psm2_fast_atomic(uint64_t *f, uint32_t kind, const void *buf, const void *cmp, size_t count, void *res,
		     fi_addr_t dest, uint64_t addr, uint64_t key, int dt, int op, void *context, uint64_t flags);
int psm2_fast_rma(uint64_t *f, int write, void *buf, size_t len, fi_addr_t dest, uint64_t addr, uint64_t key,
		  void *context, uint64_t flags);

/* psm2_held lists the messages psm2_fast_deliver left in their rings
 * because no receive C queued takes them, each the last unit in its ring:
 * the ring's probe word, and the positions of the unit's first cell and
 * of the cell after it. */
struct psm2_held {
	int n;
	uint64_t ring[DOMF_MAX_EPS], at[DOMF_MAX_EPS], end[DOMF_MAX_EPS];
};

/* Inside fi_cq_read, in this order; each writes at most count entries of
 * the CQ's format at buf and returns how many. psm2_fast_deliver also
 * fills held (may be NULL). */
ssize_t psm2_fast_completions(const uint64_t *cqf, void *buf, size_t count);
ssize_t psm2_fast_deliver(const uint64_t *cqf, void *buf, size_t count, struct psm2_held *held);
ssize_t psm2_fast_answers(const uint64_t *cqf, void *buf, size_t count);
int psm2_fast_serve(const uint64_t *cqf);
int psm2_fast_idle(const uint64_t *cqf);
/* psm2_fast_idle_held is psm2_fast_idle for which each message in held,
 * still the last in its ring and unread, counts as nothing arrived. */
int psm2_fast_idle_held(const uint64_t *cqf, const struct psm2_held *held);
/* psm2_fast_empty is psm2_fast_idle that ignores work only Go has (a
 * network to read, timers): nothing queued for this CQ and no cell in any
 * ring its lock slot lists. */
int psm2_fast_empty(const uint64_t *cqf);
/* psm2_fast_peer_cpu: 1 if the latest C producer into one of the rings
 * the CQ's lock slot lists ran on CPU cpu (a hint: RING_PROD_CPU). */
int psm2_fast_peer_cpu(const uint64_t *cqf, int cpu);

#endif /* PSM2_FAST_H */
