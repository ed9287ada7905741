/* fast.h: the data-path calls C answers without calling into Go.
 *
 * A call into Go costs about as much as libfabric's whole shm send, so the
 * hottest calls are done here when they are simple:
 *   - fi_inject (and tinject, injectdata, tinjectdata) of an inline-sized
 *     message to a connected shared-memory peer: the cells are built and
 *     pushed into the peer's ring here; a longer one, up to the eager
 *     threshold, is copied into a bounce buffer named by one cell;
 *   - fi_recv/fi_trecv with plain flags: the receive is queued in the
 *     endpoint's page, and Go posts it before anything else it does under
 *     the domain lock (provider/fastep.go).
 * Both run under the domain lock, a futex word Go takes too
 * (provider/lock.go), so Go's state is consistent while C looks at it.
 * Whatever is not simple, or any doubt, returns PSM2_FAST_GO and the
 * caller makes the usual call into Go, which does everything (and finds
 * every error).
 *
 * The memory layouts are Go's and are documented there:
 *   endpoint page, receive queue  provider/fastep.go
 *   domain page                   provider/fastpath.go
 *   fast-peer descriptor          shm/fastpeer.go
 *   ring                          shm/ring.go (version 3), shm/slots.go
 *
 * Sizes are never read from shared memory: a ring's cell count comes from
 * the descriptor or probe word Go wrote after validating it, so a peer
 * that rewrites its ring header cannot make C index past the mapping.
 *   cells                         shm/cell.go
 */
#ifndef PSM2_FAST_H
#define PSM2_FAST_H

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#define PSM2_FAST_DONE 0
#define PSM2_FAST_GO 1

/* Every offset, size and flag of the memory C shares with Go, generated
 * from the Go constants (internal/cabi). PSM2_NO_COMPLETION there marks
 * the sends of the fi_inject* calls, which never generate a completion
 * (unlike a send with the FI_INJECT flag): an operation flag bit libfabric
 * leaves undefined. */
#include "layout.h"
#include "ucopy.h"

/* The message header flags and cell flags this file handles; a message
 * with any other is left to Go. */
#define PSM2_FAST_HFLAGS (HF_TAGGED | HF_DATA)
#define PSM2_FAST_CFLAGS CELL_HAS_DATA

static inline long psm2_futex(uint32_t *w, int op, uint32_t val)
{
	return syscall(SYS_futex, w, op, val, NULL, NULL, 0);
}

/* The domain lock: 0 free, 1 held, 2 held and someone may sleep. An
 * uncontended unlock is a plain release store (no full barrier, so the
 * thread does not wait for its ring cells to reach the receiver's core);
 * waiters therefore sleep at most 200 us at a time (provider/lock.go). */
static inline void psm2_dlock(uint32_t *w)
{
	uint32_t z = 0;

	if (__atomic_compare_exchange_n(w, &z, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	for (int i = 0; i < 64; i++) {
		z = 0;
		if (__atomic_load_n(w, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(w, &z, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return;
		__builtin_ia32_pause();
	}
	while (__atomic_exchange_n(w, 2, __ATOMIC_ACQUIRE) != 0) {
		struct timespec nap = { 0, 200000 };

		syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, 2, &nap, NULL, 0);
	}
}

static inline void psm2_dunlock(uint32_t *w)
{
	if (__atomic_load_n(w, __ATOMIC_RELAXED) == 1) {
		__atomic_store_n(w, 0, __ATOMIC_RELEASE);
		return;
	}
	if (__atomic_exchange_n(w, 0, __ATOMIC_RELEASE) == 2)
		psm2_futex(w, FUTEX_WAKE_PRIVATE, 1);
}

/* psm2_domlock returns the lock word of domain page dom, and whether the
 * domain locks at all. */
static inline uint32_t *psm2_domlock(const void *domp, int *locking)
{
	char *dom = (char *) domp;

	*locking = __atomic_load_n((uint32_t *) (dom + DOMF_LOCKING), __ATOMIC_ACQUIRE) != 0;
	return (uint32_t *) (dom + DOMF_LOCK);
}

/* A ring probe word (transport.RingProbe): the base address with log2 of
 * the cell count in the low 6 bits. */
static inline char *psm2_probe_ring(uint64_t w) { return (char *) (uintptr_t) (w & ~(uint64_t) PROBE_LOG2_MASK); }
static inline uint64_t psm2_probe_mask(uint64_t w) { return ((uint64_t) 1 << (w & PROBE_LOG2_MASK)) - 1; }

/* psm2_prefetchw asks for the line at p in a writable state (x86's
 * PREFETCHW, a no-op where it is not implemented). */
static inline void psm2_prefetchw(const void *p)
{
#if defined(__x86_64__)
	__asm__ volatile("prefetchw %0" : : "m"(*(const char *) p));
#else
	__builtin_prefetch(p, 1, 3);
#endif
}

/* psm2_bell rings the doorbell of the peer descriptor d names, if one of
 * its threads waits in it (shm's ring2, after its fence: the caller's). */
static inline void psm2_bell(const uint64_t *d)
{
	if (__atomic_load_n((uint32_t *) (uintptr_t) d[FP_WAIT], __ATOMIC_RELAXED)) {
		uint32_t *seq = (uint32_t *) (uintptr_t) d[FP_SEQ];

		__atomic_add_fetch(seq, 1, __ATOMIC_SEQ_CST);
		psm2_futex(seq, FUTEX_WAKE, INT_MAX);
	}
}

/* psm2_cell is the cell at position pos of ring r of mask+1 cells. */
static inline char *psm2_cell(char *r, uint64_t mask, uint64_t pos)
{
	return r + RING_HDR + (pos & mask) * CELL_SIZE;
}

/* psm2_reserve reserves n (1 to PUSH_CELLS_MAX) cells of ring r of
 * mask+1 cells, as the producer owning slot (its pos word; n is the
 * next): the same protocol as shm's TryPushCells through a claimed view.
 * Returns 0 with the first position in *at (any value: positions wrap),
 * or -1 if the ring has no room (or looks corrupt: Go sorts that out).
 * psm2_commit must follow a reservation. */
static inline int psm2_reserve(char *r, uint64_t mask, uint64_t *slot, uint64_t n, uint64_t *at)
{
	uint64_t size = mask + 1;
	uint64_t *prod = (uint64_t *) (r + RING_PROD);
	uint64_t *seen = (uint64_t *) (r + RING_SEEN);
	uint64_t pos = __atomic_load_n(prod, __ATOMIC_RELAXED);

	for (;;) {
		if (pos + n - __atomic_load_n(seen, __ATOMIC_RELAXED) > size) {
			uint64_t cons = __atomic_load_n((uint64_t *) (r + RING_CONS), __ATOMIC_ACQUIRE);

			if (pos + n - cons > size)
				return -1;
			__atomic_store_n(seen, cons, __ATOMIC_RELAXED);
		}
		/* Announce before reserving (shm/slots.go); the locked CAS
		 * orders these stores before the reservation. */
		__atomic_store_n(&slot[SLOT_N], n, __ATOMIC_RELAXED);
		__atomic_store_n(&slot[SLOT_POS], pos, __ATOMIC_RELAXED);
		if (__atomic_compare_exchange_n(prod, &pos, pos + n, 0, __ATOMIC_SEQ_CST,
						__ATOMIC_RELAXED)) {
			*at = pos;
			return 0;
		}
	}
}

/* psm2_commit writes the n cells reserved at pos and publishes them. */
static inline void psm2_commit(char *r, uint64_t mask, uint64_t pos,
			       const uint64_t cells[][CELL_PAYLOAD / 8], uint64_t n)
{
	/* Ask for every cell's line for writing at once: the consumer read
	 * them last, so each store would otherwise wait for its own line. */
	for (uint64_t k = n; k-- > 0;)
		psm2_prefetchw(psm2_cell(r, mask, pos + k));
	for (uint64_t k = n; k-- > 0;) {
		char *c = psm2_cell(r, mask, pos + k);

		memcpy(c + CELL_PAYLOAD_OFF, cells[k], CELL_PAYLOAD);
		__atomic_store_n((uint64_t *) (c + CELL_SEQ), pos + k + 1, __ATOMIC_RELEASE);
	}
}

/* psm2_push pushes n cells (psm2_reserve, psm2_commit): 0 on success, -1
 * if the ring has no room. */
static inline int psm2_push(char *r, uint64_t mask, uint64_t *slot,
			    const uint64_t cells[][CELL_PAYLOAD / 8], uint64_t n)
{
	uint64_t pos;

	if (psm2_reserve(r, mask, slot, n, &pos))
		return -1;
	psm2_commit(r, mask, pos, cells, n);
	return 0;
}

/* An inline message as its head cell and up to PUSH_CELLS_MAX - 1
 * continuation cells carry it: the part of shm/cell.go's format C builds
 * and parses. */
struct psm2_inline {
	uint64_t len, epid, tag, data;
	uint32_t hflags;
	int with_data;		/* the data word travels (data != 0) */
};

/* psm2_inline_cells is the number of cells message m takes, or 0 if more
 * than max (shm's inlineCells). */
static inline int psm2_inline_cells(const struct psm2_inline *m, uint64_t max)
{
	uint64_t head = m->with_data ? INLINE_HEAD_DATA : INLINE_HEAD, n;

	if (m->len <= head)
		return 1;
	n = 1 + (m->len - head + CONT_PAYLOAD - 1) / CONT_PAYLOAD;
	return n <= max ? (int) n : 0;
}

/* psm2_inline_hdr writes the head cell payload h of inline message m,
 * all but its bytes (zeroed). */
static inline void psm2_inline_hdr(unsigned char *h, const struct psm2_inline *m)
{
	uint16_t short_len = (uint16_t) m->len;

	memset(h, 0, CELL_PAYLOAD);
	h[CELL_KIND] = CELL_INLINE;
	h[CELL_FLAGS] = m->with_data ? CELL_HAS_DATA : 0;
	memcpy(h + CELL_SHORT, &short_len, 2);
	memcpy(h + CELL_HFLAGS, &m->hflags, 4);
	memcpy(h + CELL_EPID, &m->epid, 8);
	memcpy(h + CELL_TAG, &m->tag, 8);
	if (m->with_data)
		memcpy(h + CELL_DATA, &m->data, 8);
}

/* psm2_head_parse parses the payload p of an inline message's head cell
 * into m and returns the cells the message takes, or 0 (another kind of
 * cell, a cell flag C does not know, or a longer message). */
static inline int psm2_head_parse(const unsigned char *p, struct psm2_inline *m)
{
	uint16_t short_len;

	if (p[CELL_KIND] != CELL_INLINE || (p[CELL_FLAGS] & ~PSM2_FAST_CFLAGS))
		return 0;
	memcpy(&short_len, p + CELL_SHORT, 2);
	memcpy(&m->hflags, p + CELL_HFLAGS, 4);
	m->len = short_len;
	m->with_data = (p[CELL_FLAGS] & CELL_HAS_DATA) != 0;
	memcpy(&m->epid, p + CELL_EPID, 8);
	memcpy(&m->tag, p + CELL_TAG, 8);
	m->data = 0;
	if (m->with_data)
		memcpy(&m->data, p + CELL_DATA, 8);
	return psm2_inline_cells(m, PUSH_CELLS_MAX);
}

/* psm2_inline_head is psm2_head_parse for a message C may deliver: 0 also
 * for a header flag C does not know (RMA, or any Go adds later). */
static inline int psm2_inline_head(const unsigned char *p, struct psm2_inline *m)
{
	int n = psm2_head_parse(p, m);

	return n && !(m->hflags & ~(uint32_t) PSM2_FAST_HFLAGS) ? n : 0;
}

/* psm2_inline_cont says whether c, the payload of a cell after a head, is
 * a continuation. */
static inline int psm2_inline_cont(const unsigned char *c) { return c[CONT_KIND] == CELL_CONT; }

/* psm2_inline_segs lists in seg the pieces of an inline message's cells
 * that hold its bytes, in order: the end of head cell payload h, then the
 * payloads of continuation cells cont[0..] (each a cell's payload, whose
 * bytes start at CONT_PAYLOAD_OFF), as psm2_inline_build lays them out and
 * psm2_inline_copy reads them. Returns the number of pieces (one a cell),
 * for psm2_ucopy_segs. */
static inline int psm2_inline_segs(struct psm2_seg *seg, const struct psm2_inline *m, unsigned char *h,
				   unsigned char *const *cont)
{
	uint64_t head = m->with_data ? INLINE_HEAD_DATA : INLINE_HEAD, off;
	int k = 1;

	seg[0].p = h + CELL_PAYLOAD - head;
	seg[0].n = m->len < head ? m->len : head;
	for (off = head; off < m->len; off += CONT_PAYLOAD, k++) {
		seg[k].p = cont[k - 1] + CONT_PAYLOAD_OFF;
		seg[k].n = m->len - off < CONT_PAYLOAD ? m->len - off : CONT_PAYLOAD;
	}
	return k;
}

/* psm2_inline_build writes the payloads of the cells of message m with
 * buf's m->len bytes into cells: the same cells as shm's sendInline. The
 * bytes go straight from buf into the cells under one guard (ucopy.c), so
 * buf may be the caller's. Returns how many cells it took, 0 if the
 * message takes more than max, or -1 if buf faulted. */
static inline int psm2_inline_build(uint64_t cells[][CELL_PAYLOAD / 8],
				    const struct psm2_inline *m, const void *buf, uint64_t max)
{
	unsigned char *h = (unsigned char *) cells[0], *cont[PUSH_CELLS_MAX - 1];
	struct psm2_seg seg[PUSH_CELLS_MAX];
	int n = psm2_inline_cells(m, max), nseg;

	if (!n)
		return 0;
	psm2_inline_hdr(h, m);
	for (int k = 1; k < n; k++) {
		cont[k - 1] = (unsigned char *) cells[k];
		cont[k - 1][CONT_KIND] = CELL_CONT;
	}
	nseg = psm2_inline_segs(seg, m, h, cont);
	if (n > 1 && seg[nseg - 1].n < CONT_PAYLOAD)	/* the last cell's rest is zero */
		memset((char *) seg[nseg - 1].p + seg[nseg - 1].n, 0, CONT_PAYLOAD - seg[nseg - 1].n);
	if (m->len && psm2_ucopy_segs(seg, nseg, (void *) buf, 0))
		return -1;
	return n;
}

/* psm2_inline_copy copies the message's bytes from its head cell's
 * payload p and its continuations' payloads cont[0..] to dst, straight
 * and under one guard (dst may be the caller's): 0, or -1 if dst
 * faulted. */
static inline int psm2_inline_copy(void *dst, const struct psm2_inline *m,
				   const unsigned char *p, const unsigned char *const *cont)
{
	struct psm2_seg seg[PUSH_CELLS_MAX];
	int nseg = psm2_inline_segs(seg, m, (unsigned char *) p, (unsigned char *const *) cont);

	return m->len ? psm2_ucopy_segs(seg, nseg, dst, 1) : 0;
}

/* psm2_eager_build writes the payload of the cell of eager message m,
 * whose bytes are in the sender's bounce buffer idx: the same cell as
 * shm's sendEager (which always carries the data word). */
static inline void psm2_eager_build(uint64_t cell[CELL_PAYLOAD / 8], const struct psm2_inline *m,
				    uint16_t idx)
{
	unsigned char *h = (unsigned char *) cell;

	memset(h, 0, CELL_PAYLOAD);
	h[CELL_KIND] = CELL_EAGER;
	h[CELL_FLAGS] = CELL_HAS_DATA;
	memcpy(h + CELL_SHORT, &idx, 2);
	memcpy(h + CELL_HFLAGS, &m->hflags, 4);
	memcpy(h + CELL_EPID, &m->epid, 8);
	memcpy(h + CELL_TAG, &m->tag, 8);
	memcpy(h + CELL_DATA, &m->data, 8);
	memcpy(h + CELL_LEN, &m->len, 8);
}

/* psm2_cell_head parses the header of a cell of kind kind that carries
 * one message (eager, RTS, answer in a buffer: hflags, length, sender,
 * tag, data) into m, and returns 1, or 0 for another kind of cell or a
 * cell flag outside cflags. */
static inline int psm2_cell_head(const unsigned char *p, unsigned char kind, unsigned cflags, struct psm2_inline *m)
{
	if (p[CELL_KIND] != kind || (p[CELL_FLAGS] & ~cflags))
		return 0;
	memcpy(&m->hflags, p + CELL_HFLAGS, 4);
	memcpy(&m->len, p + CELL_LEN, 8);
	memcpy(&m->epid, p + CELL_EPID, 8);
	memcpy(&m->tag, p + CELL_TAG, 8);
	m->with_data = (p[CELL_FLAGS] & CELL_HAS_DATA) != 0;
	m->data = 0;
	if (m->with_data)
		memcpy(&m->data, p + CELL_DATA, 8);
	return 1;
}

/* psm2_msg_head is psm2_cell_head for a message C may deliver: 0 also for
 * a header flag C does not know. */
static inline int psm2_msg_head(const unsigned char *p, unsigned char kind, unsigned cflags, struct psm2_inline *m)
{
	return psm2_cell_head(p, kind, cflags, m) && !(m->hflags & ~(uint32_t) PSM2_FAST_HFLAGS);
}

/* psm2_rma_cell_head is psm2_cell_head for an RMA protocol message in a
 * bounce buffer (kind CELL_EAGER, or CELL_ANSWER_BUF), with its buffer's
 * index: 0 for any other, and for one with message flags or data. */
static inline int psm2_rma_cell_head(const unsigned char *p, unsigned char kind, struct psm2_inline *m, uint16_t *idx)
{
	if (!psm2_cell_head(p, kind, CELL_HAS_DATA, m) || !(m->hflags & HF_RMA) ||
	    (m->hflags & (HF_TAGGED | HF_DATA)) || m->data)
		return 0;
	memcpy(idx, p + CELL_SHORT, 2);
	return 1;
}

/* psm2_eager_head parses the payload p of an eager cell into m and the
 * bounce buffer's index, and returns 1, or 0 when C must leave it to Go
 * (psm2_msg_head). */
static inline int psm2_eager_head(const unsigned char *p, struct psm2_inline *m, uint16_t *idx)
{
	/* (the stream flag is the caller's: psm2_eager_stream) */
	if (!psm2_msg_head(p, CELL_EAGER, PSM2_FAST_CFLAGS | CELL_STREAM, m))
		return 0;
	memcpy(idx, p + CELL_SHORT, 2);
	return 1;
}

/* psm2_eager_stream says whether the eager cell with payload p is
 * streamed (CELL_STREAM), with its stream's number in *seq. */
static inline int psm2_eager_stream(const unsigned char *p, uint64_t *seq)
{
	memcpy(seq, p + CELL_W5, 8);
	return (p[CELL_FLAGS] & CELL_STREAM) != 0;
}

/* Streamed eager messages (shm/cell.go: cellStream): a C sender pushes
 * the cell of an eager message of STREAM_MIN bytes or more once the first
 * STREAM_FIRST bytes are in the bounce buffer, then copies the rest in
 * STREAM_CHUNK pieces, publishing the bytes filled in its segment's
 * stream word after each; the receiver copies out behind it. The two
 * copies, each a line at a time from the other core, overlap instead of
 * adding up. */
#define STREAM_MIN 8192
#define STREAM_FIRST 4096
#define STREAM_CHUNK 8192
/* From STREAM_NT_MIN bytes the sender's stores are non-temporal
 * (psm2_ucopy_nt): measured between two cores here, a plain copy into a
 * buffer the other core read last costs 0.5 us at 8 KiB, 2 at 16 and 4.7
 * at 32 (each line taken back from that core); around the caches, 0.2,
 * 0.3 and 0.9, but the reader then loads from memory (1.4, 1.5-1.9 and
 * 2.2-3.0 against 0.4, 0.6 and 1.0). */
#define STREAM_NT_MIN 16384
/* How long a C receiver waits for a stream's next bytes before it leaves
 * the message to Go (which waits with liveness checks): a sender taken
 * off its CPU. */
#define STREAM_WAIT_NS 2000000

/* psm2_stream_copy copies the n bytes of stream seq of the sender whose
 * stream word is w from its bounce buffer src to dst as the sender fills
 * it: 0, or -1 (the stream broke, the sender is slow, or dst faulted: Go
 * takes the message). */
static inline int psm2_stream_copy(const uint64_t *w, uint64_t seq, char *dst, const char *src, uint64_t n)
{
	uint64_t done = 0, spins = 0, since = 0;

	if (!w)
		return -1;
	while (done < n) {
		uint64_t v = __atomic_load_n(w, __ATOMIC_ACQUIRE), avail;

		if ((v >> 32) != (seq & 0xffffffffu)) {
			/* A later stream: ours is full, unless it broke (the
			 * word after names the last broken one). */
			uint64_t bw = __atomic_load_n(&w[1], __ATOMIC_ACQUIRE);

			if (bw && (bw >> 32) == (seq & 0xffffffffu))
				return -1;
			avail = n;
		}
		else if ((v & 0xffffffffu) == STREAM_BROKEN)
			return -1;
		else
			avail = (v & 0xffffffffu) < n ? (v & 0xffffffffu) : n;
		if (avail > done) {
			if (psm2_ucopy(dst + done, src + done, avail - done))
				return -1;
			done = avail;
			spins = since = 0;
		} else if (++spins % 256 == 0) {
			struct timespec ts;
			uint64_t t;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			t = (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
			if (!since)
				since = t;
			else if (t - since > STREAM_WAIT_NS)
				return -1;
		} else {
#if defined(__x86_64__)
			__builtin_ia32_pause();
#endif
		}
	}
	return 0;
}

/* psm2_rts_head parses the payload p of a rendezvous request (RTS) cell
 * into m, the sender's address of the data and the send id, and returns
 * 1, or 0 when C must leave it to Go (psm2_msg_head, or no data: Go drops
 * those). */
static inline int psm2_rts_head(const unsigned char *p, struct psm2_inline *m, uint64_t *addr,
				uint64_t *sid)
{
	if (!psm2_msg_head(p, CELL_RTS, PSM2_FAST_CFLAGS, m) || !m->len)
		return 0;
	memcpy(addr, p + CELL_W5, 8);
	memcpy(sid, p + CELL_W6, 8);
	return 1;
}

/* psm2_cma_read copies n bytes at address src of process pid to dst with
 * process_vm_readv, as shm's Fetch does (partial reads resumed): 0, or -1
 * on any failure, which leaves the message to Go to fetch again and to
 * report (EFAULT, ESRCH) or work around (EPERM: the copy protocol). */
static inline int psm2_cma_read(uint64_t pid, void *dst, uint64_t src, uint64_t n)
{
	uint64_t off = 0, rel = ((uint64_t) (uintptr_t) dst - src) & 4095;
	int intr = 0;

	/* A destination 1 to 63 bytes past the source modulo 4 KiB: the
	 * kernel's copy stalls there, and Go's stages it (shm's cmaCopy). */
	if (n >= 4096 && rel != 0 && rel < 64)
		return -1;

	while (off < n) {
		struct iovec l = { (char *) dst + off, n - off };
		struct iovec r = { (void *) (uintptr_t) (src + off), n - off };
		long k = syscall(SYS_process_vm_readv, (long) pid, &l, 1L, &r, 1L, 0L);

		if (k < 0 && errno == EINTR && ++intr < 16)
			continue;
		if (k <= 0)
			return -1;
		off += (uint64_t) k;
	}
	return 0;
}

/* psm2_fin_build writes the payload of the FIN of send sid from endpoint
 * epid: shm's finCell with status 0 (the data was fetched). */
static inline void psm2_fin_build(uint64_t cell[CELL_PAYLOAD / 8], uint64_t epid, uint64_t sid)
{
	unsigned char *h = (unsigned char *) cell;

	memset(h, 0, CELL_PAYLOAD);
	h[CELL_KIND] = CELL_FIN;
	memcpy(h + CELL_EPID, &epid, 8);
	memcpy(h + CELL_TAG, &sid, 8);
}

/* psm2_fin pushes the FIN of send sid into the ring of the peer that
 * descriptor d names and rings its doorbell: 0, or -1 if its ring is full
 * (Go fetches again and queues the FIN). */
static inline int psm2_fin(uint64_t *d, uint64_t sid)
{
	uint64_t cell[1][CELL_PAYLOAD / 8];

	psm2_fin_build(cell[0], d[FP_EPID], sid);
	if (psm2_push((char *) (uintptr_t) d[FP_RING], d[FP_MASK], (uint64_t *) (uintptr_t) d[FP_SLOT],
		      (const uint64_t (*)[CELL_PAYLOAD / 8]) cell, 1))
		return -1;
	if (d[FP_FENCE])
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	psm2_bell(d);
	return 0;
}

/* psm2_copy_out copies n bytes of the caller's buffer src to a bounce
 * buffer, asking first for the destination's lines for writing (the peer
 * read them last, and each store would wait for its own line): 0, or -1
 * if src faulted. */
static inline int psm2_copy_out(void *dst, const void *src, size_t n)
{
	for (size_t o = 0; o < n && o < 64 * 64; o += 64)
		psm2_prefetchw((char *) dst + o);
	return psm2_ucopy(dst, src, n);
}

/* psm2_fast_send is a send of len bytes to dest, with the message's tag
 * and (with FI_REMOTE_CQ_DATA, has_data) data, done in C when it can be:
 * an inline or eager message to a connected shm peer. flags are the
 * call's; with FI_INJECT its buffer is free on return (at most inject_size bytes); with
 * PSM2_NO_COMPLETION (the fi_inject* calls) it has no completion;
 * otherwise its completion, if one is due, is queued in the transmit CQ's
 * page (provider/fastpath.go) for fi_cq_read. f is the endpoint page
 * (NULL: none). */
static inline int psm2_fast_send(const uint64_t *f, const void *buf, size_t len,
				 fi_addr_t dest, int tagged, uint64_t tag,
				 int has_data, uint64_t data, void *context, uint64_t flags)
{
	uint64_t cells[FAST_INLINE_CELLS][CELL_PAYLOAD / 8];
	struct psm2_inline m;
	uint64_t *d, *cq = NULL, cc = 0;
	uint32_t *lk;
	int locking, ret = PSM2_FAST_GO, n, inject = (flags & FI_INJECT) != 0, comp = 0;
	int nocomp = (flags & PSM2_NO_COMPLETION) != 0;

	if (!f || !__atomic_load_n(&f[EPF_SEND_OK], __ATOMIC_RELAXED) || (flags & FI_TRIGGER))
		return PSM2_FAST_GO;
	if ((inject && len > f[EPF_INJECT]) || (len && !buf) || dest >= f[EPF_NPEERS])
		return PSM2_FAST_GO;
	if (!nocomp) {
		uint64_t ok = __atomic_load_n(&f[EPF_TX_CQ_OK], __ATOMIC_RELAXED);

		if (ok == 0)
			return PSM2_FAST_GO;
		comp = ok == 1 && (!f[EPF_TX_SEL] || (flags & FI_COMPLETION));
		if (comp)
			cq = (uint64_t *) (uintptr_t) f[EPF_TX_CQ];
	}

	/* The cells, built before taking the lock (the sender id once the
	 * descriptor is read under it). */
	m.len = len;
	m.epid = 0;
	m.tag = tagged ? tag & f[EPF_TAG_MASK] : 0;
	m.data = data;
	m.with_data = has_data && data != 0;
	m.hflags = (tagged ? HF_TAGGED : 0) | (has_data ? HF_DATA : 0);
	/* 0 cells: too long for inline cells; an eager message, if the
	 * peer's descriptor allows one. The caller's bytes are read with
	 * guarded copies (ucopy.c): a buffer the kernel refuses sends the
	 * call to Go, which fails it with FI_EFAULT. */
	if (len && !psm2_ucopy_ready())
		return PSM2_FAST_GO;
	/* The bytes go straight from the caller's buffer into the cells. */
	if ((n = psm2_inline_build(cells, &m, buf, FAST_INLINE_CELLS)) < 0)
		return PSM2_FAST_GO;

	lk = psm2_domlock((const void *) (uintptr_t) f[EPF_DOMAIN], &locking);
	if (locking)
		psm2_dlock(lk);
	if (!__atomic_load_n(&f[EPF_SEND_OK], __ATOMIC_RELAXED))
		goto out;
	if (comp) {
		cc = __atomic_load_n(&cq[CQF_CQUEUED], __ATOMIC_RELAXED);
		if (cc >= CQF_CCAP)
			goto out;	/* Go takes the queue over and sends this one */
		if (__atomic_load_n(&cq[CQF_SLEEPERS], __ATOMIC_RELAXED))
			goto out;	/* a thread blocks in fi_cq_sread: Go wakes it */
	}
	d = (uint64_t *) (uintptr_t) __atomic_load_n(
		&((uint64_t *) (uintptr_t) f[EPF_PEERS])[dest], __ATOMIC_RELAXED);
	if (!d || !__atomic_load_n(&d[FP_OK], __ATOMIC_RELAXED))
		goto out;
	if (__atomic_load_n((uint64_t *) (uintptr_t) d[FP_STATE], __ATOMIC_ACQUIRE) != 0)
		goto out;	/* the peer closed: Go fails the send */
	if (!d[FP_SLOT])
		goto out;
	if (n) {
		memcpy((unsigned char *) cells[0] + CELL_EPID, &d[FP_EPID], 8);
		if (psm2_push((char *) (uintptr_t) d[FP_RING], d[FP_MASK], (uint64_t *) (uintptr_t) d[FP_SLOT],
			      (const uint64_t (*)[CELL_PAYLOAD / 8]) cells, n))
			goto out;	/* full: Go queues or refuses it */
		d[FP_SENT]++;
	} else {
		/* Eager: into a free bounce buffer of ours (shm's allocBuf
		 * and sendEager), then one cell naming it. */
		uint64_t *busy = (uint64_t *) (uintptr_t) d[FP_BUSY];
		uint64_t *sw = len >= STREAM_MIN ? (uint64_t *) (uintptr_t) d[FP_STREAM] : NULL;
		uint64_t free, bit, sseq = 0, first = len;
		char *dst;
		int i;

		if (len > d[FP_EAGER_MAX] || !d[FP_BUFS] || !busy)
			goto out;
		free = ~__atomic_load_n(busy, __ATOMIC_ACQUIRE) & d[FP_ALL_BUFS];
		if (!free)
			goto out;	/* Go reclaims, waits or refuses */
		if (sw) {
			/* A broken stream whose buffer its receiver still
			 * holds: that receiver must find it broken, and a new
			 * stream would move the stream word on, so none until
			 * the buffer is back (shm/segment.go). */
			uint64_t bw = __atomic_load_n(&sw[1], __ATOMIC_ACQUIRE);

			if (bw && (~free & ((uint64_t) 1 << (((bw & 0xffffffffu) - 1) & 63))))
				sw = NULL;
			else if (bw)
				__atomic_store_n(&sw[1], 0, __ATOMIC_RELAXED);
		}
		i = __builtin_ctzll(free);
		bit = (uint64_t) 1 << i;
		dst = (char *) (uintptr_t) d[FP_BUFS] + (uint64_t) i * d[FP_BUF_SIZE];
		/* Receivers only clear bits, so the bit is still clear. */
		__atomic_fetch_or(busy, bit, __ATOMIC_SEQ_CST);
		if (sw) {
			/* A new stream, nothing filled yet, then its first part
			 * (a stream word naming a stream no cell names is
			 * harmless). */
			sseq = ((__atomic_load_n(sw, __ATOMIC_RELAXED) >> 32) + 1) & 0xffffffffu;
			first = STREAM_FIRST;
			__atomic_store_n(sw, sseq << 32, __ATOMIC_RELEASE);
		}
		if (len >= STREAM_NT_MIN ? psm2_ucopy_nt(dst, buf, first) : psm2_copy_out(dst, buf, first)) {
			__atomic_fetch_and(busy, ~bit, __ATOMIC_SEQ_CST);
			goto out;
		}
		if (sw)
			__atomic_store_n(sw, sseq << 32 | first, __ATOMIC_RELEASE);
		m.epid = d[FP_EPID];
		m.data = has_data ? data : 0;
		psm2_eager_build(cells[0], &m, (uint16_t) i);
		if (sw) {
			((unsigned char *) cells[0])[CELL_FLAGS] |= CELL_STREAM;
			memcpy((unsigned char *) cells[0] + CELL_W5, &sseq, 8);
		}
		if (psm2_push((char *) (uintptr_t) d[FP_RING], d[FP_MASK], (uint64_t *) (uintptr_t) d[FP_SLOT],
			      (const uint64_t (*)[CELL_PAYLOAD / 8]) cells, 1)) {
			__atomic_fetch_and(busy, ~bit, __ATOMIC_SEQ_CST);
			goto out;
		}
		((int32_t *) (uintptr_t) d[FP_HOLDER])[i] = (int32_t) d[FP_IDX];
		d[FP_EAGER_SENT]++;
		if (sw) {
			/* The receiver may start now; then the rest. */
			if (d[FP_FENCE])
				__atomic_thread_fence(__ATOMIC_SEQ_CST);
			psm2_bell(d);
			for (uint64_t off = first; off < len;) {
				uint64_t k = len - off < STREAM_CHUNK ? len - off : STREAM_CHUNK;

				if (len >= STREAM_NT_MIN ? psm2_ucopy_nt(dst + off, (const char *) buf + off, k) :
				    psm2_copy_out(dst + off, (const char *) buf + off, k)) {
					/* The receiver drops the message (its buffer
					 * back); Go sends it again, or fails the call
					 * with FI_EFAULT as it finds the same fault. */
					__atomic_store_n(&sw[1], sseq << 32 | (uint64_t) (i + 1), __ATOMIC_RELEASE);
					__atomic_store_n(sw, sseq << 32 | STREAM_BROKEN, __ATOMIC_RELEASE);
					goto out;
				}
				off += k;
				__atomic_store_n(sw, sseq << 32 | off, __ATOMIC_RELEASE);
			}
		}
	}
	if (comp) {
		/* The send is complete: the message is in the peer's ring (the
		 * provider's choice for every completion level). */
		struct fi_cq_tagged_entry *e = (struct fi_cq_tagged_entry *) (cq + CQF_CENTRIES + cc * CQF_CWORDS);
		uint64_t *pending = (uint64_t *) ((char *) (uintptr_t) f[EPF_DOMAIN] + DOMF_CQUEUED);

		memset(e, 0, sizeof(*e));
		e->op_context = context;
		e->flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
		__atomic_store_n(&cq[CQF_CQUEUED], cc + 1, __ATOMIC_RELEASE);
		__atomic_store_n(pending, 1, __ATOMIC_RELEASE);
	}
	/* The doorbell (shm ring2; the fence only where membarrier is not
	 * doing it for us: shm/fence.go). */
	if (d[FP_FENCE])
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	psm2_bell(d);
	ret = PSM2_FAST_DONE;
out:
	if (locking)
		psm2_dunlock(lk);
	return ret;
}

/* psm2_fast_completions hands out the send completions C queued in the
 * CQ's page, when no older entry waits in Go's ring. */
static inline ssize_t psm2_fast_completions(const uint64_t *cqf, void *buf, size_t count)
{
	uint64_t *cq = (uint64_t *) cqf, cc, stride, k;
	const uint64_t *dom;
	uint32_t *lk;
	int locking;
	ssize_t got = 0;

	if (!cq || !__atomic_load_n(&cq[CQF_CQUEUED], __ATOMIC_ACQUIRE))
		return 0;
	dom = (const uint64_t *) (uintptr_t) __atomic_load_n(&cq[CQF_DOMAIN], __ATOMIC_ACQUIRE);
	if (!dom)
		return 0;
	lk = psm2_domlock(dom, &locking);
	if (locking)
		psm2_dlock(lk);
	cc = __atomic_load_n(&cq[CQF_CQUEUED], __ATOMIC_RELAXED);
	if (cc > CQF_CCAP || __atomic_load_n(&cq[CQF_COUNT], __ATOMIC_RELAXED) != 0)
		goto out;
	stride = cq[CQF_STRIDE] / 8;
	for (k = 0; k < cc && k < count; k++) {
		const uint64_t *e = cq + CQF_CENTRIES + k * CQF_CWORDS;

		memcpy((uint64_t *) buf + k * stride, e, stride * 8);
	}
	got = (ssize_t) k;
	memmove(cq + CQF_CENTRIES, cq + CQF_CENTRIES + k * CQF_CWORDS, (cc - k) * CQF_CWORDS * 8);
	__atomic_store_n(&cq[CQF_CQUEUED], cc - k, __ATOMIC_RELEASE);
out:
	if (locking)
		psm2_dunlock(lk);
	return got;
}

/* psm2_fast_recv queues a receive of one buffer, done in C when it can be.
 * flags are the call's (op flags | FI_MSG or FI_TAGGED). */
static inline int psm2_fast_recv(uint64_t *f, void *buf, size_t len, fi_addr_t src,
				 uint64_t tag, uint64_t ignore, void *context,
				 uint64_t flags)
{
	uint64_t *q, n, *d, *peers;
	uint32_t *lk;
	int locking, ret = PSM2_FAST_GO;

	if (!f || !__atomic_load_n(&f[EPF_RECV_OK], __ATOMIC_RELAXED))
		return PSM2_FAST_GO;
	if ((flags & (FI_MULTI_RECV | FI_PEEK | FI_CLAIM | FI_DISCARD | FI_TRIGGER)) || (len && !buf))
		return PSM2_FAST_GO;
	lk = psm2_domlock((const void *) (uintptr_t) f[EPF_DOMAIN], &locking);
	if (locking)
		psm2_dlock(lk);
	if (!__atomic_load_n(&f[EPF_RECV_OK], __ATOMIC_RELAXED))
		goto out;
	if (src != FI_ADDR_UNSPEC && (f[EPF_CAPS] & FI_DIRECTED_RECV)) {
		/* Only a source Go has connected (so the AV knows it). */
		if (src >= f[EPF_NPEERS])
			goto out;
		peers = (uint64_t *) (uintptr_t) f[EPF_PEERS];
		d = (uint64_t *) (uintptr_t) __atomic_load_n(&peers[src], __ATOMIC_RELAXED);
		if (!d)
			goto out;
	}
	n = __atomic_load_n(&f[EPF_RQ_COUNT], __ATOMIC_RELAXED);
	if (n >= EPF_RQ_CAP)
		goto out;	/* Go posts the queue and this one */
	q = f + EPF_RQ + n * EPF_RQ_WORDS;
	q[RQ_BUF] = (uint64_t) (uintptr_t) buf;
	q[RQ_LEN] = len;
	q[RQ_SRC] = src;
	q[RQ_TAG] = tag;
	q[RQ_IGNORE] = ignore;
	q[RQ_CONTEXT] = (uint64_t) (uintptr_t) context;
	q[RQ_FLAGS] = flags;
	__atomic_store_n(&f[EPF_RQ_COUNT], n + 1, __ATOMIC_RELAXED);
	{
		uint64_t *queued = (uint64_t *) ((char *) (uintptr_t) f[EPF_DOMAIN] + DOMF_QUEUED);

		/* Under the lock: a plain increment, no locked instruction. */
		__atomic_store_n(queued, __atomic_load_n(queued, __ATOMIC_RELAXED) + 1,
				 __ATOMIC_RELEASE);
	}
	ret = PSM2_FAST_DONE;
out:
	if (locking)
		psm2_dunlock(lk);
	return ret;
}

/* psm2_rq_match returns the index of the first queued receive that takes
 * a message of space tagged (0/1), tag and sender epid, or -1. The rules
 * are the engine's (provider/msg.go): the space must agree; tagged
 * receives compare the tag under the tag mask and ignore bits; a directed
 * receive names its source by fi_addr, whose connection knows its id. */
static inline int psm2_rq_match(const uint64_t *f, uint64_t n, int tagged, uint64_t tag,
				uint64_t epid)
{
	uint64_t mask = f[EPF_TAG_MASK];
	int directed = (f[EPF_CAPS] & FI_DIRECTED_RECV) != 0;

	for (uint64_t i = 0; i < n; i++) {
		const uint64_t *q = f + EPF_RQ + i * EPF_RQ_WORDS;

		if (((q[RQ_FLAGS] & FI_TAGGED) != 0) != tagged)
			continue;
		if (tagged && ((tag ^ (q[RQ_TAG] & mask)) & ~(q[RQ_IGNORE] | ~mask)))
			continue;
		if (directed && q[RQ_SRC] != FI_ADDR_UNSPEC) {
			const uint64_t *d;

			if (q[RQ_SRC] >= f[EPF_NPEERS])
				continue;
			d = (const uint64_t *) (uintptr_t) ((const uint64_t *) (uintptr_t) f[EPF_PEERS])[q[RQ_SRC]];
			if (!d || d[FP_PEER] != epid)
				continue;
		}
		return (int) i;
	}
	return -1;
}

/* psm2_recv_entry writes the completion of receive q taking message m
 * in the CQ's format: stride is the size of its entries, each a prefix of
 * struct fi_cq_tagged_entry (context; flags, len; buf, data; tag). */
static inline void psm2_recv_entry(char *out, uint64_t stride, const uint64_t *q,
				   const struct psm2_inline *m)
{
	/* Field by field, each an 8-byte store straight into the caller's
	 * entry: building a struct and copying it (the formats' prefixes)
	 * cost a call to memcpy, or with a constant size, wide loads of
	 * narrower stores just made, which the CPU cannot forward (256 B
	 * NetPIPE 0.156 -> 0.17 us). */
	uint64_t w[6];

	_Static_assert(sizeof(struct fi_cq_tagged_entry) == sizeof(w), "fi_cq_tagged_entry is six words");
	w[0] = q[RQ_CONTEXT];
	w[1] = FI_RECV | ((m->hflags & HF_TAGGED) ? FI_TAGGED : FI_MSG) |
	       ((m->hflags & HF_DATA) ? FI_REMOTE_CQ_DATA : 0);
	w[2] = m->len;
	w[3] = q[RQ_BUF];
	w[4] = m->data;
	w[5] = m->tag;
	memcpy(out, &w[0], 8);
	if (stride < 24)
		return;
	memcpy(out + 8, &w[1], 8);
	memcpy(out + 16, &w[2], 8);
	if (stride < 40)
		return;
	memcpy(out + 24, &w[3], 8);
	memcpy(out + 32, &w[4], 8);
	if (stride < 48)
		return;
	memcpy(out + 40, &w[5], 8);
}

/* psm2_conts finds the cells - 1 continuation cells after the head cell
 * at position cons of ring r (mask+1 cells): 1 with their payloads in
 * cont if all are published continuations, else 0. */
static inline int psm2_conts(char *r, uint64_t mask, uint64_t cons, int cells, const unsigned char **cont)
{
	for (int k = 1; k < cells; k++) {
		const unsigned char *ck = (const unsigned char *) psm2_cell(r, mask, cons + (uint64_t) k);

		if (__atomic_load_n((const uint64_t *) (ck + CELL_SEQ), __ATOMIC_ACQUIRE) != cons + (uint64_t) k + 1 ||
		    !psm2_inline_cont(ck + CELL_PAYLOAD_OFF))
			return 0;
		cont[k - 1] = ck + CELL_PAYLOAD_OFF;
	}
	return 1;
}

/* psm2_sender returns the descriptor of sender epid from endpoint page
 * f's senders' table, if it names that sender and is usable (FP_OK), or
 * NULL. */
static inline const uint64_t *psm2_sender(const uint64_t *f, uint64_t epid)
{
	const uint64_t *sd = (const uint64_t *) (uintptr_t)
		f[EPF_SENDERS + ((epid * SENDER_HASH) >> EPF_SENDERS_SHIFT)];

	if (!sd || sd[FP_PEER] != epid || !__atomic_load_n(&sd[FP_OK], __ATOMIC_RELAXED))
		return NULL;
	return sd;
}

/* psm2_deliver_ep delivers, for endpoint page f, the inline, eager and
 * rendezvous messages that arrived in its ring to the receives C queued
 * for it (a rendezvous fetched with process_vm_readv, as shm's Fetch does,
 * and its FIN pushed), writing up to count completions of stride bytes at
 * out;
 * psm2_fast_deliver holds the domain lock and has checked that f delivers
 * through the CQ being read. It stops at anything else (another cell
 * kind, an unexpected message, a short buffer) and leaves it to Go.
 * Returns the entries written. */
static inline ssize_t psm2_deliver_ep(uint64_t *f, const uint64_t *dom, uint64_t stride,
				      char *out, size_t count)
{
	char *r = psm2_probe_ring(f[EPF_RING]);
	uint64_t mask = psm2_probe_mask(f[EPF_RING]);
	ssize_t got = 0;

	if (!r || !psm2_ucopy_ready())
		return 0;
	while ((size_t) got < count) {
		uint64_t *consp = (uint64_t *) (r + RING_CONS);
		uint64_t cons = __atomic_load_n(consp, __ATOMIC_RELAXED);
		const unsigned char *c = (const unsigned char *) psm2_cell(r, mask, cons);
		const unsigned char *cont[PUSH_CELLS_MAX];
		uint64_t n = __atomic_load_n(&f[EPF_RQ_COUNT], __ATOMIC_RELAXED);
		uint64_t *q;
		const uint64_t *sd = NULL;
		const char *eager = NULL;
		struct psm2_inline m;
		uint16_t idx = 0;
		uint64_t raddr = 0, rsid = 0;
		int i, cells, k, rndv = 0;

		if (!n || __atomic_load_n((const uint64_t *) (c + CELL_SEQ), __ATOMIC_ACQUIRE) != cons + 1)
			break;
		if (!(cells = psm2_inline_head(c + CELL_PAYLOAD_OFF, &m))) {
			if (psm2_eager_head(c + CELL_PAYLOAD_OFF, &m, &idx)) {
				/* The sender's bounce buffer, through its descriptor. */
				sd = psm2_sender(f, m.epid);
				if (!sd || idx >= sd[FP_PEER_NBUFS] || m.len > sd[FP_PEER_BUF_SIZE] ||
				    !sd[FP_PEER_BUFS] || !sd[FP_PEER_BUSY])
					break;
				eager = (const char *) (uintptr_t) sd[FP_PEER_BUFS] + (uint64_t) idx * sd[FP_PEER_BUF_SIZE];
				/* Two lines the other core wrote last, asked for
				 * now so they come during the copy: the sender's
				 * busy word, which the locked AND below frees the
				 * buffer in, and our own, which our next eager send
				 * (often the answer to this message) reads and sets.
				 * Each was a miss on the critical path: 256 B
				 * fi_pingpong 0.26 -> 0.24 us, 1 KiB 0.35 -> 0.27. */
				psm2_prefetchw((const void *) (uintptr_t) sd[FP_PEER_BUSY]);
				if (sd[FP_BUSY])
					psm2_prefetchw((const void *) (uintptr_t) sd[FP_BUSY]);
			} else if (psm2_rts_head(c + CELL_PAYLOAD_OFF, &m, &raddr, &rsid)) {
				/* A rendezvous C fetches itself: from another process
				 * that single copy may read (its pid in the
				 * descriptor), below the split copy's size, and with
				 * the ring back to it usable for the FIN (FP_OK: no
				 * control cell of Go's queued before it). */
				sd = psm2_sender(f, m.epid);
				if (!sd || !sd[FP_PEER_PID] || m.len > sd[FP_RNDV_MAX] || !sd[FP_SLOT])
					break;
				/* A lone message from FP_RNDV_ALONE up (no cell
				 * after it): Go splits it (shm/split.go). */
				if (m.len >= sd[FP_RNDV_ALONE] &&
				    __atomic_load_n((const uint64_t *) (psm2_cell(r, mask, cons + 1) + CELL_SEQ),
						    __ATOMIC_ACQUIRE) != cons + 2)
					break;
				rndv = 1;
			} else {
				break;
			}
			cells = 1;
		}
		/* The unit's cells were published before its head cell: ask
		 * for all their lines before reading the first. */
		for (k = 1; k < cells; k++)
			__builtin_prefetch(psm2_cell(r, mask, cons + k), 0, 3);
		if (!psm2_conts(r, mask, cons, cells, cont))
			break;
		i = psm2_rq_match(f, n, (m.hflags & HF_TAGGED) != 0, m.tag, m.epid);
		if (i < 0)
			break;	/* unexpected: Go keeps it */
		q = f + EPF_RQ + i * EPF_RQ_WORDS;
		if (q[RQ_LEN] < m.len)
			break;	/* truncated: Go reports it */
		if (eager) {
			/* Copy (as the sender fills the buffer, if streamed),
			 * then give the buffer back and ring the sender in case
			 * it waits for one (shm's release; the locked AND is the
			 * fence ring2 needs). A receive buffer the kernel
			 * refuses, like a broken or stalled stream, leaves the
			 * message to Go, which fails the receive with FI_EFAULT
			 * (or drops the broken message). */
			uint64_t sseq;

			if (psm2_eager_stream(c + CELL_PAYLOAD_OFF, &sseq) ?
			    psm2_stream_copy((const uint64_t *) (uintptr_t) sd[FP_PEER_STREAM], sseq,
					     (char *) (uintptr_t) q[RQ_BUF], eager, m.len) :
			    psm2_ucopy((void *) (uintptr_t) q[RQ_BUF], eager, m.len))
				break;
			__atomic_fetch_and((uint64_t *) (uintptr_t) sd[FP_PEER_BUSY], ~((uint64_t) 1 << idx),
					   __ATOMIC_SEQ_CST);
			psm2_bell(sd);
		} else if (rndv) {
			/* Read, then tell the sender (its send completes on the
			 * FIN). Any failure, or no room for the FIN, leaves the
			 * cell to Go, which reads again: the sender's data stays
			 * until its FIN. */
			if (psm2_cma_read(sd[FP_PEER_PID], (void *) (uintptr_t) q[RQ_BUF], raddr, m.len) ||
			    psm2_fin((uint64_t *) sd, rsid))
				break;
			((uint64_t *) sd)[FP_RNDV_CMA]++;
		} else if (psm2_inline_copy((void *) (uintptr_t) q[RQ_BUF], &m, c + CELL_PAYLOAD_OFF, cont)) {
			/* Straight from the cells into the receive buffer. */
			break;
		}
		if (!f[EPF_RX_SEL] || (q[RQ_FLAGS] & FI_COMPLETION)) {
			psm2_recv_entry(out + got * stride, stride, q, &m);
			got++;
		}
		/* Take the receive out of the queue, keeping the others' order. */
		if ((uint64_t) i + 1 < n)
			memmove(q, q + EPF_RQ_WORDS, (n - 1 - i) * EPF_RQ_WORDS * 8);
		__atomic_store_n(&f[EPF_RQ_COUNT], n - 1, __ATOMIC_RELAXED);
		{
			uint64_t *queued = (uint64_t *) ((char *) dom + DOMF_QUEUED);

			__atomic_store_n(queued, __atomic_load_n(queued, __ATOMIC_RELAXED) - 1,
					 __ATOMIC_RELEASE);
		}
		__atomic_store_n(consp, cons + (uint64_t) cells, __ATOMIC_RELEASE);
	}
	return got;
}

/* The atomic fast path at the target (provider/fastrma.go): C serves a
 * small atomic request when it can do all of what Go's atomicServe would
 * on its success path, and leaves everything else in the ring. */

/* ATOMIC_MAX is the longest atomic request or answer C sends or serves:
 * any inline message (PUSH_CELLS_MAX cells, 4377 bytes), so up to 4353
 * operand bytes (2176 for a compare, which carries two arrays): the 4 KiB
 * and 2 KiB that Debian's shm provider serves, and then some. */
#define ATOMIC_MAX (INLINE_HEAD + (PUSH_CELLS_MAX - 1) * CONT_PAYLOAD)

/* psm2_pad_len is the length of an inline message with the data word
 * that takes exactly k cells (1 to PUSH_CELLS_MAX). */
static inline uint64_t psm2_pad_len(uint64_t k)
{
	return k == 1 ? 0 : INLINE_HEAD_DATA + (k - 2) * CONT_PAYLOAD + 1;
}

/* psm2_atomic_fits says whether an atomic of n operand bytes of kind and
 * op fits: its request (the RMA prefix and its operands) and its answer
 * (the old values) are both inline messages. */
static inline int psm2_atomic_fits(uint32_t kind, int op, uint64_t n)
{
	uint64_t body = op == FI_ATOMIC_READ ? 0 : kind == RMA_ATOMIC_COMPARE ? 2 * n : n;

	return n <= ATOMIC_MAX && RMA_PREFIX + body <= ATOMIC_MAX;
}

/* psm2_rma_head is psm2_head_parse for an RMA protocol message: 0 for
 * any other message, and for one with data or message flags. */
static inline int psm2_rma_head(const unsigned char *p, struct psm2_inline *m)
{
	int n = psm2_head_parse(p, m);

	return n && (m->hflags & HF_RMA) && !(m->hflags & (HF_TAGGED | HF_DATA)) && !m->with_data ? n : 0;
}

/* psm2_alock takes the process's atomic lock word w (Go's lockAtomics
 * takes the same); psm2_aunlock lets it go. */
static inline void psm2_alock(uint32_t *w)
{
	for (unsigned i = 0;; i++) {
		uint32_t z = 0;

		if (__atomic_compare_exchange_n(w, &z, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return;
		if (i >= 64)
			sched_yield();
#if defined(__x86_64__)
		__builtin_ia32_pause();
#endif
	}
}

static inline void psm2_aunlock(uint32_t *w) { __atomic_store_n(w, 0, __ATOMIC_RELEASE); }

/* psm2_mr_find returns the address of len bytes at RMA address addr of
 * the MR with key in domain page dom's table, if the entry grants access,
 * or 0 (Go then looks the key up itself). */
static inline uint64_t psm2_mr_find(const uint64_t *dom, uint64_t key, uint64_t addr, uint64_t len, uint64_t access)
{
	const char *e = (const char *) dom + DOMF_MRS + (key % DOMF_MR_CAP) * MRF_SIZE;
	uint64_t acc = __atomic_load_n((const uint64_t *) (e + MRF_ACCESS), __ATOMIC_ACQUIRE);
	uint64_t va, base;

	if (!acc || *(const uint64_t *) (e + MRF_KEY) != key || (acc & access) != access)
		return 0;
	va = addr + *(const uint64_t *) (e + MRF_OFFSET);
	base = *(const uint64_t *) (e + MRF_BASE);
	if (!va || va + len < va || va < base || va + len > base + *(const uint64_t *) (e + MRF_LEN))
		return 0;
	return va;
}

/* psm2_serve_one serves the atomic request m, whose bytes are req, for
 * endpoint page f of domain page dom: applies it and pushes the answer
 * into the initiator's ring. idx is -1 for a request that came inline
 * (req is a copy of its cells); otherwise it came in the initiator's
 * bounce buffer idx, which req points into: the old values then go back
 * in that buffer, over the request, with a one-cell answer naming it
 * (CELL_ANSWER_BUF: the initiator frees the buffer), and after an ack or
 * an error the buffer is given back as any eager message's is. Returns 1,
 * or 0 when Go must serve it (nothing was applied or sent). */
static inline int psm2_serve_one(uint64_t *f, const uint64_t *dom, const struct psm2_inline *m,
				 const unsigned char *req, int idx)
{
	static const uint64_t size[] = { 1, 1, 2, 2, 4, 4, 8, 8 };
	unsigned char old[ATOMIC_MAX];
	uint64_t cells[PUSH_CELLS_MAX][CELL_PAYLOAD / 8];
	uint32_t kind = (m->hflags >> RMA_KIND_SHIFT) & 0xff, *lock;
	int op = (int) ((m->hflags >> ATOMIC_OP_SHIFT) & 0xff), dt = (int) (m->hflags >> ATOMIC_DT_SHIFT), rc, k;
	uint64_t key, addr, n, body, va, access, pos;
	struct psm2_inline a;
	const uint64_t *sd;

	if ((m->hflags & ~(uint32_t) (HF_RMA | 0xffffff00u)) || m->len < RMA_PREFIX ||
	    m->len > ATOMIC_MAX || dt < FI_INT8 || dt > FI_UINT64)
		return 0;
	/* The kinds and ops Go's initiator pairs (AtomicValid). */
	if (kind == RMA_ATOMIC_COMPARE) {
		if (op < FI_CSWAP || op > FI_MSWAP)
			return 0;
	} else if (kind == RMA_ATOMIC_FETCH) {
		if (op < FI_MIN || op > FI_ATOMIC_WRITE)
			return 0;
	} else if (kind == RMA_ATOMIC) {
		if (op < FI_MIN || op > FI_ATOMIC_WRITE || op == FI_ATOMIC_READ)
			return 0;
	} else {
		return 0;
	}
	/* (read once: a buffer the initiator could still write) */
	memcpy(&key, req, 8);
	memcpy(&addr, req + 8, 8);
	memcpy(&n, req + 16, 8);
	body = m->len - RMA_PREFIX;
	if (!n || n % size[dt] || !psm2_atomic_fits(kind, op, n) ||
	    body != (op == FI_ATOMIC_READ ? 0 : kind == RMA_ATOMIC_COMPARE ? 2 * n : n))
		return 0;
	access = op == FI_ATOMIC_READ ? FI_REMOTE_READ :
		 kind == RMA_ATOMIC ? FI_REMOTE_WRITE : FI_REMOTE_READ | FI_REMOTE_WRITE;
	if (!(va = psm2_mr_find(dom, key, addr, n, access)))
		return 0;
	/* A region across pages is read whole first, as Go's atomicApply
	 * copies the old values before any store: an unmapped page then
	 * faults before anything is applied (Go answers it). Within one page
	 * the first load faults first anyway. */
	if ((va & 4095) + n > 4096 && psm2_ucopy(old, (const void *) (uintptr_t) va, n))
		return 0;
	lock = (uint32_t *) (uintptr_t) __atomic_load_n(&dom[DOMF_ALOCK / 8], __ATOMIC_ACQUIRE);
	if (!lock || !(sd = psm2_sender(f, m->epid)))
		return 0;
	a.epid = sd[FP_EPID];
	a.tag = m->tag;
	a.data = 0;
	a.with_data = 0;
	a.len = kind != RMA_ATOMIC ? n : 0;
	a.hflags = HF_RMA | (uint32_t) (kind == RMA_ATOMIC ? RMA_ACK : RMA_ATOMIC_RESP) << RMA_KIND_SHIFT;
	/* The answer's cells first: once the op is applied it must go out. */
	k = idx >= 0 ? 1 : psm2_inline_cells(&a, PUSH_CELLS_MAX);
	if (!k || psm2_reserve((char *) (uintptr_t) sd[FP_RING], sd[FP_MASK], (uint64_t *) (uintptr_t) sd[FP_SLOT],
			       (uint64_t) k, &pos))
		return 0;
	psm2_alock(lock);
	rc = psm2_uapply(op, dt, (void *) (uintptr_t) va, body ? req + RMA_PREFIX : NULL,
			 kind == RMA_ATOMIC_COMPARE ? req + RMA_PREFIX + n : NULL, old, n / size[dt]);
	psm2_aunlock(lock);
	if (rc) {
		/* The region faulted (a page that is readable but not
		 * writable, or unmapped meanwhile): the error Go would send,
		 * padded to the k cells reserved; an errored answer's bytes
		 * are ignored. */
		a.data = FI_EFAULT;
		a.with_data = 1;
		a.len = psm2_pad_len((uint64_t) k);
		memset(old, 0, a.len);
	} else if (idx >= 0 && a.len) {
		/* The old values over the request, and a cell naming the
		 * buffer (the commit's release store orders them). */
		memcpy((unsigned char *) (uintptr_t) req, old, n);
		psm2_eager_build(cells[0], &a, (uint16_t) idx);
		((unsigned char *) cells[0])[CELL_KIND] = CELL_ANSWER_BUF;
		psm2_commit((char *) (uintptr_t) sd[FP_RING], sd[FP_MASK], pos,
			    (const uint64_t (*)[CELL_PAYLOAD / 8]) cells, 1);
		if (sd[FP_FENCE])
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
		psm2_bell(sd);
		return 1;
	}
	(void) psm2_inline_build(cells, &a, old, PUSH_CELLS_MAX);	/* ours: no fault */
	psm2_commit((char *) (uintptr_t) sd[FP_RING], sd[FP_MASK], pos, (const uint64_t (*)[CELL_PAYLOAD / 8]) cells,
		    (uint64_t) k);
	if (idx >= 0)	/* the buffer back (the locked AND fences the bell) */
		__atomic_fetch_and((uint64_t *) (uintptr_t) sd[FP_PEER_BUSY], ~((uint64_t) 1 << idx),
				   __ATOMIC_SEQ_CST);
	else if (sd[FP_FENCE])
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	psm2_bell(sd);
	return 1;
}

/* psm2_serve_ep serves the atomic requests at the head of endpoint page
 * f's ring, in order, until anything else: returns how many. The caller
 * holds the domain lock and has seen the domain idle otherwise. */
static inline int psm2_serve_ep(uint64_t *f, const uint64_t *dom)
{
	char *r = psm2_probe_ring(f[EPF_RING]);
	uint64_t mask = psm2_probe_mask(f[EPF_RING]);
	int served = 0;

	if (!r || !psm2_ucopy_ready())
		return 0;
	for (;;) {
		uint64_t *consp = (uint64_t *) (r + RING_CONS);
		uint64_t cons = __atomic_load_n(consp, __ATOMIC_RELAXED);
		const unsigned char *c = (const unsigned char *) psm2_cell(r, mask, cons);
		const unsigned char *cont[PUSH_CELLS_MAX];
		unsigned char req[ATOMIC_MAX];
		struct psm2_inline m;
		const uint64_t *sd;
		uint16_t idx;
		int cells;

		if (__atomic_load_n((const uint64_t *) (c + CELL_SEQ), __ATOMIC_ACQUIRE) != cons + 1)
			break;
		if ((cells = psm2_rma_head(c + CELL_PAYLOAD_OFF, &m))) {
			if (!psm2_conts(r, mask, cons, cells, cont))
				break;
			if (psm2_inline_copy(req, &m, c + CELL_PAYLOAD_OFF, cont) ||
			    !psm2_serve_one(f, dom, &m, req, -1))
				break;
		} else if (psm2_rma_cell_head(c + CELL_PAYLOAD_OFF, CELL_EAGER, &m, &idx)) {
			/* In the initiator's bounce buffer (the eager case of
			 * psm2_deliver_ep). */
			sd = psm2_sender(f, m.epid);
			if (!sd || idx >= sd[FP_PEER_NBUFS] || m.len > sd[FP_PEER_BUF_SIZE] ||
			    !sd[FP_PEER_BUFS] || !sd[FP_PEER_BUSY] ||
			    !psm2_serve_one(f, dom, &m,
					    (const unsigned char *) (uintptr_t) sd[FP_PEER_BUFS] +
						    (uint64_t) idx * sd[FP_PEER_BUF_SIZE], idx))
				break;
			cells = 1;
		} else {
			break;
		}
		__atomic_store_n(consp, cons + (uint64_t) cells, __ATOMIC_RELEASE);
		served++;
	}
	if (served)
		__atomic_store_n(&f[EPF_SERVED], f[EPF_SERVED] + (uint64_t) served, __ATOMIC_RELAXED);
	return served;
}

/* psm2_head_hflags peeks, without the lock, at the head cell of endpoint
 * page f's ring: 1 with its header flags if it is a published inline,
 * eager or answer-in-buffer cell, else 0 (a hint; the caller re-reads
 * under the lock). */
static inline int psm2_head_hflags(const uint64_t *f, uint32_t *hflags)
{
	uint64_t w = __atomic_load_n(&f[EPF_RING], __ATOMIC_RELAXED), cons;
	char *r = psm2_probe_ring(w);
	const unsigned char *c;

	if (!r)
		return 0;
	cons = __atomic_load_n((const uint64_t *) (r + RING_CONS), __ATOMIC_ACQUIRE);
	c = (const unsigned char *) psm2_cell(r, psm2_probe_mask(w), cons);
	if (__atomic_load_n((const uint64_t *) (c + CELL_SEQ), __ATOMIC_ACQUIRE) != cons + 1 ||
	    (c[CELL_PAYLOAD_OFF + CELL_KIND] != CELL_INLINE && c[CELL_PAYLOAD_OFF + CELL_KIND] != CELL_EAGER &&
	     c[CELL_PAYLOAD_OFF + CELL_KIND] != CELL_ANSWER_BUF))
		return 0;
	memcpy(hflags, c + CELL_PAYLOAD_OFF + CELL_HFLAGS, 4);
	return 1;
}

/* psm2_request_waits says whether the head of f's ring looks like an
 * atomic request. */
static inline int psm2_request_waits(const uint64_t *f)
{
	uint32_t hflags, kind;

	if (!psm2_head_hflags(f, &hflags))
		return 0;
	kind = (hflags >> RMA_KIND_SHIFT) & 0xff;
	return (hflags & HF_RMA) && kind >= RMA_ATOMIC && kind <= RMA_ATOMIC_COMPARE;
}

/* psm2_fast_serve is the atomic fast path at the target: called by
 * fi_cq_read with the CQ's page when C delivered nothing, it serves the
 * atomic requests at the heads of the rings of the domain's endpoints
 * that allow it (EPF_SERVE), while Go has no work of its own (an older
 * request Go still handles must be applied first). Returns the requests
 * served. */
static inline int psm2_fast_serve(const uint64_t *cqf)
{
	const uint64_t *dom;
	uint64_t neps, i;
	uint32_t *lk;
	int locking, served = 0;

	if (!cqf)
		return 0;
	dom = (const uint64_t *) (uintptr_t) __atomic_load_n(&cqf[CQF_DOMAIN], __ATOMIC_ACQUIRE);
	if (!dom || __atomic_load_n(&dom[DOMF_BUSY / 8], __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&dom[DOMF_QUEUED / 8], __ATOMIC_ACQUIRE) ||
	    !__atomic_load_n(&dom[DOMF_ALOCK / 8], __ATOMIC_ACQUIRE))
		return 0;
	/* First a look without the lock: does a request wait at the head
	 * of some ring (so reads that Go must answer anyway pay no lock)? */
	neps = __atomic_load_n(&dom[DOMF_NEPS / 8], __ATOMIC_ACQUIRE);
	for (i = 0; i < neps && i < DOMF_MAX_EPS; i++) {
		uint64_t *f = (uint64_t *) (uintptr_t) __atomic_load_n(&dom[DOMF_EPS / 8 + i], __ATOMIC_ACQUIRE);

		if (f && __atomic_load_n(&f[EPF_SERVE], __ATOMIC_RELAXED) && psm2_request_waits(f))
			break;
	}
	if (i == neps || i == DOMF_MAX_EPS)
		return 0;
	lk = psm2_domlock(dom, &locking);
	if (locking)
		psm2_dlock(lk);
	/* Again under the lock. */
	if (__atomic_load_n(&dom[DOMF_BUSY / 8], __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&dom[DOMF_QUEUED / 8], __ATOMIC_ACQUIRE))
		goto out;
	neps = __atomic_load_n(&dom[DOMF_NEPS / 8], __ATOMIC_RELAXED);
	for (i = 0; i < neps && i < DOMF_MAX_EPS; i++) {
		uint64_t *f = (uint64_t *) (uintptr_t) __atomic_load_n(&dom[DOMF_EPS / 8 + i], __ATOMIC_ACQUIRE);

		if (f && __atomic_load_n(&f[EPF_SERVE], __ATOMIC_RELAXED))
			served += psm2_serve_ep(f, dom);
	}
out:
	if (locking)
		psm2_dunlock(lk);
	return served;
}

/* psm2_cq_lock_empty takes the lock of domain page dom (if it locks:
 * *lk, *locking, for the caller to let go) and says whether CQ page cqf
 * then holds no older entry (Go's ring and C's queue empty), as C must
 * find before it writes completions straight into the caller's buffer. */
static inline int psm2_cq_lock_empty(const uint64_t *cqf, const void *dom, uint32_t **lk, int *locking)
{
	*lk = psm2_domlock(dom, locking);
	if (*locking)
		psm2_dlock(*lk);
	return __atomic_load_n(&cqf[CQF_COUNT], __ATOMIC_RELAXED) == 0 &&
	       __atomic_load_n(&cqf[CQF_CQUEUED], __ATOMIC_RELAXED) == 0;
}

/* psm2_answer_waits says whether the head of f's ring looks like the
 * answer of an armed op. */
static inline int psm2_answer_waits(const uint64_t *f)
{
	uint32_t hflags;

	return psm2_head_hflags(f, &hflags) && (hflags == (HF_RMA | RMA_ATOMIC_RESP << RMA_KIND_SHIFT) ||
						 hflags == (HF_RMA | RMA_ACK << RMA_KIND_SHIFT));
}

/* psm2_answers_ep completes, for endpoint page f, the armed ops whose
 * answers are at the head of its ring (provider/fastrma.go): copies the
 * old values, writes up to count completions of stride bytes at out and
 * marks the entries done for Go to reap. The caller holds the domain lock
 * and has checked that the CQ holds no older entry. Stops at anything
 * else. Returns the entries written. */
static inline ssize_t psm2_answers_ep(uint64_t *f, uint64_t *dom, uint64_t stride, char *out, size_t count)
{
	char *r = psm2_probe_ring(f[EPF_RING]);
	uint64_t mask = psm2_probe_mask(f[EPF_RING]);
	ssize_t got = 0;

	if (!r || !psm2_ucopy_ready())
		return 0;
	while ((size_t) got < count && __atomic_load_n(&f[EPF_ARMED], __ATOMIC_RELAXED)) {
		uint64_t *consp = (uint64_t *) (r + RING_CONS);
		uint64_t cons = __atomic_load_n(consp, __ATOMIC_RELAXED), *a, st;
		const unsigned char *c = (const unsigned char *) psm2_cell(r, mask, cons);
		const unsigned char *cont[PUSH_CELLS_MAX];
		struct fi_cq_tagged_entry e;
		struct psm2_inline m;
		uint16_t idx = 0;
		int cells, inbuf = 0;

		if (__atomic_load_n((const uint64_t *) (c + CELL_SEQ), __ATOMIC_ACQUIRE) != cons + 1)
			break;
		if (!(cells = psm2_rma_head(c + CELL_PAYLOAD_OFF, &m))) {
			if (!psm2_rma_cell_head(c + CELL_PAYLOAD_OFF, CELL_ANSWER_BUF, &m, &idx))
				break;
			cells = inbuf = 1;
		}
		if (m.hflags != (HF_RMA | RMA_ATOMIC_RESP << RMA_KIND_SHIFT) &&
		    m.hflags != (HF_RMA | RMA_ACK << RMA_KIND_SHIFT))
			break;
		a = f + EPF_AOPS + ((m.tag & 0xffffffffu) % AO_CAP) * AO_WORDS;
		st = __atomic_load_n(&a[AO_STATE], __ATOMIC_RELAXED);
		if ((st != AO_ARMED && st != AO_CPOSTED && st != AO_ADOPTED) || a[AO_ID] != m.tag || a[AO_LEN] != m.len)
			break;
		if (inbuf) {
			/* The old values in our own bounce buffer idx, the one C
			 * put this op's request in (its entry says which; Go
			 * takes any other: shm's onAnswerBuf), still handed to
			 * that peer; then it is ours again. */
			uint64_t dw = a[AO_DEST], dest = dw & ((1ull << 48) - 1), *d;
			uint64_t *busy, bit = (uint64_t) 1 << (idx & 63);
			int32_t *holder;

			if ((st != AO_CPOSTED && st != AO_ADOPTED) || (dw >> 48) != (uint64_t) idx + 1 || idx >= 64 ||
			    !m.len || dest >= f[EPF_NPEERS])
				break;
			d = (uint64_t *) (uintptr_t) __atomic_load_n(&((uint64_t *) (uintptr_t) f[EPF_PEERS])[dest],
								     __ATOMIC_RELAXED);
			if (!d || !d[FP_BUFS] || !d[FP_BUSY] || !d[FP_HOLDER] || m.len > d[FP_BUF_SIZE])
				break;
			busy = (uint64_t *) (uintptr_t) d[FP_BUSY];
			holder = (int32_t *) (uintptr_t) d[FP_HOLDER];
			if (!(__atomic_load_n(busy, __ATOMIC_ACQUIRE) & bit) || holder[idx] != (int32_t) d[FP_IDX])
				break;
			if (psm2_ucopy((void *) (uintptr_t) a[AO_BUF],
				       (const char *) (uintptr_t) d[FP_BUFS] + (uint64_t) idx * d[FP_BUF_SIZE], m.len))
				break;	/* Go reports the fault */
			holder[idx] = -1;
			__atomic_fetch_and(busy, ~bit, __ATOMIC_SEQ_CST);
		} else if (!psm2_conts(r, mask, cons, cells, cont)) {
			break;
		} else if (psm2_inline_copy((void *) (uintptr_t) a[AO_BUF], &m, c + CELL_PAYLOAD_OFF, cont)) {
			break;	/* Go reports the fault */
		}
		e.op_context = (void *) (uintptr_t) a[AO_CTX];
		/* An ack answers an fi_atomic (AO_LEN 0), the old values a fetch
		 * or compare: the flags Go's rmaMaybeDone gives them. */
		e.flags = m.len ? FI_ATOMIC | FI_READ : FI_ATOMIC | FI_WRITE;
		e.len = 0;
		e.buf = NULL;
		e.data = 0;
		e.tag = 0;
		memcpy(out + got * stride, &e, stride < sizeof(e) ? stride : sizeof(e));
		got++;
		__atomic_store_n(&f[EPF_ARMED], f[EPF_ARMED] - 1, __ATOMIC_RELAXED);
		if (st == AO_CPOSTED) {
			/* Go never knew of it. */
			__atomic_store_n(&a[AO_STATE], AO_FREE, __ATOMIC_RELAXED);
		} else {
			/* Go frees its op (reapLocked). */
			__atomic_store_n(&a[AO_STATE], AO_DONE, __ATOMIC_RELAXED);
			__atomic_store_n(&dom[DOMF_ADONE / 8], dom[DOMF_ADONE / 8] + 1, __ATOMIC_RELEASE);
		}
		__atomic_store_n(consp, cons + (uint64_t) cells, __ATOMIC_RELEASE);
	}
	return got;
}

/* psm2_fast_answers is the atomic fast path at the initiator: called by
 * fi_cq_read with the CQ's page, it completes the armed fetches and
 * compares of the domain's endpoints whose transmit CQ this is, when their
 * answers lead their rings and the CQ holds no older entry (Go's ring and
 * C's queue empty). Returns the entries written at buf. */
static inline ssize_t psm2_fast_answers(const uint64_t *cqf, void *buf, size_t count)
{
	uint64_t *dom;
	uint64_t neps, i, stride;
	uint32_t *lk;
	int locking;
	ssize_t got = 0;

	if (!cqf)
		return 0;
	dom = (uint64_t *) (uintptr_t) __atomic_load_n(&cqf[CQF_DOMAIN], __ATOMIC_ACQUIRE);
	if (!dom)
		return 0;
	neps = __atomic_load_n(&dom[DOMF_NEPS / 8], __ATOMIC_ACQUIRE);
	for (i = 0; i < neps && i < DOMF_MAX_EPS; i++) {
		uint64_t *f = (uint64_t *) (uintptr_t) __atomic_load_n(&dom[DOMF_EPS / 8 + i], __ATOMIC_ACQUIRE);

		if (f && __atomic_load_n(&f[EPF_ARMED], __ATOMIC_RELAXED) && f[EPF_TX_CQ] == (uint64_t) (uintptr_t) cqf &&
		    psm2_answer_waits(f))
			break;
	}
	if (i == neps || i == DOMF_MAX_EPS)
		return 0;
	if (!psm2_cq_lock_empty(cqf, dom, &lk, &locking))
		goto out;
	stride = cqf[CQF_STRIDE];
	neps = __atomic_load_n(&dom[DOMF_NEPS / 8], __ATOMIC_RELAXED);
	for (i = 0; i < neps && i < DOMF_MAX_EPS && (size_t) got < count; i++) {
		uint64_t *f = (uint64_t *) (uintptr_t) __atomic_load_n(&dom[DOMF_EPS / 8 + i], __ATOMIC_ACQUIRE);

		if (f && f[EPF_TX_CQ] == (uint64_t) (uintptr_t) cqf)
			got += psm2_answers_ep(f, dom, stride, (char *) buf + got * stride, count - got);
	}
out:
	if (locking)
		psm2_dunlock(lk);
	return got;
}

/* psm2_fast_atomic is fi_atomic (kind RMA_ATOMIC), fi_fetch_atomic
 * (RMA_ATOMIC_FETCH) or fi_compare_atomic (RMA_ATOMIC_COMPARE) done in C
 * when it can be (provider/fastrma.go): count elements of integer
 * datatype dt (psm2_atomic_fits) of op from buf (NULL for
 * FI_ATOMIC_READ), compared with cmp, at addr/key of connected shm peer
 * dest, the old values to res (a fetch or compare). It pushes the request
 * and arms an entry as C-posted; the answer completes it
 * (psm2_fast_answers), or Go once it adopts it. Returns PSM2_FAST_DONE or
 * PSM2_FAST_GO (nothing done). */
static inline int psm2_fast_atomic(uint64_t *f, uint32_t kind, const void *buf, const void *cmp, size_t count,
				   void *res, fi_addr_t dest, uint64_t addr, uint64_t key, int dt, int op,
				   void *context, uint64_t flags)
{
	static const uint64_t size[] = { 1, 1, 2, 2, 4, 4, 8, 8 };
	uint64_t cells[PUSH_CELLS_MAX][CELL_PAYLOAD / 8];
	unsigned char req[ATOMIC_MAX];
	uint64_t *d, *a = NULL, *dom, n, seq, low, tag;
	struct psm2_inline m;
	uint32_t *lk;
	int locking, ret = PSM2_FAST_GO, cells_n, i, opok, bidx;

	/* The pairs Go's AtomicValid takes for integers. */
	opok = kind == RMA_ATOMIC_COMPARE ? op >= FI_CSWAP && op <= FI_MSWAP && cmp && res :
	       kind == RMA_ATOMIC_FETCH ? op >= FI_MIN && op <= FI_ATOMIC_WRITE && res :
	       kind == RMA_ATOMIC && op >= FI_MIN && op <= FI_ATOMIC_WRITE && op != FI_ATOMIC_READ;
	if (!f || !__atomic_load_n(&f[EPF_APOST], __ATOMIC_RELAXED) || (flags & (FI_TRIGGER | FI_INJECT)) ||
	    dt < FI_INT8 || dt > FI_UINT64 || !opok || !count || (!buf && op != FI_ATOMIC_READ) ||
	    dest >= f[EPF_NPEERS] || !psm2_ucopy_ready())
		return PSM2_FAST_GO;
	if (count > ATOMIC_MAX || !psm2_atomic_fits(kind, op, n = count * size[dt]))
		return PSM2_FAST_GO;
	memcpy(req, &key, 8);
	memcpy(req + 8, &addr, 8);
	memcpy(req + 16, &n, 8);
	m.len = RMA_PREFIX;
	if (op != FI_ATOMIC_READ) {
		if (psm2_ucopy(req + RMA_PREFIX, buf, n))
			return PSM2_FAST_GO;	/* Go reports the fault */
		m.len += n;
	}
	if (kind == RMA_ATOMIC_COMPARE) {
		if (psm2_ucopy(req + m.len, cmp, n))
			return PSM2_FAST_GO;
		m.len += n;
	}
	m.data = 0;
	m.with_data = 0;
	m.hflags = HF_RMA | kind << RMA_KIND_SHIFT | (uint32_t) op << ATOMIC_OP_SHIFT |
		   (uint32_t) dt << ATOMIC_DT_SHIFT;
	dom = (uint64_t *) (uintptr_t) f[EPF_DOMAIN];
	lk = psm2_domlock(dom, &locking);
	if (locking)
		psm2_dlock(lk);
	/* Nothing of Go's may be overtaken, and the flags may have changed. */
	if (!__atomic_load_n(&f[EPF_APOST], __ATOMIC_RELAXED) || __atomic_load_n(&dom[DOMF_BUSY / 8], __ATOMIC_ACQUIRE))
		goto out;
	d = (uint64_t *) (uintptr_t) __atomic_load_n(&((uint64_t *) (uintptr_t) f[EPF_PEERS])[dest], __ATOMIC_RELAXED);
	if (!d || !__atomic_load_n(&d[FP_OK], __ATOMIC_RELAXED) || !d[FP_SLOT] ||
	    __atomic_load_n((uint64_t *) (uintptr_t) d[FP_STATE], __ATOMIC_ACQUIRE) != 0)
		goto out;
	/* A free entry, and a tag that names it. */
	seq = f[EPF_CSEQ];
	for (i = 0; i < AO_CAP; i++) {
		uint64_t *e = f + EPF_AOPS + ((seq + i) % AO_CAP) * AO_WORDS;

		if (__atomic_load_n(&e[AO_STATE], __ATOMIC_RELAXED) == AO_FREE) {
			a = e;
			break;
		}
	}
	if (!a)
		goto out;
	/* The tag's low half: k * AO_CAP + the entry, below 2^32. */
	seq %= 0xffffffffu / AO_CAP;
	low = seq * AO_CAP + (uint64_t) ((a - (f + EPF_AOPS)) / AO_WORDS);
	tag = (uint64_t) C_TAG_GEN << 32 | low;
	m.epid = d[FP_EPID];
	m.tag = tag;
	bidx = -1;
	if (!psm2_inline_cells(&m, FAST_INLINE_CELLS) && d[FP_BUFS] && d[FP_BUSY] && m.len <= d[FP_EAGER_MAX]) {
		/* Past a few cells, in a bounce buffer of ours, as an eager
		 * message: the target writes the old values back into it
		 * (psm2_serve_one), so the bytes cross between the cores
		 * once each way, not twice, and no cell per 55 bytes. */
		uint64_t *busy = (uint64_t *) (uintptr_t) d[FP_BUSY];
		uint64_t free = ~__atomic_load_n(busy, __ATOMIC_ACQUIRE) & d[FP_ALL_BUFS], bit;

		if (free) {
			bidx = __builtin_ctzll(free);
			bit = (uint64_t) 1 << bidx;
			__atomic_fetch_or(busy, bit, __ATOMIC_SEQ_CST);
			memcpy((char *) (uintptr_t) d[FP_BUFS] + (uint64_t) bidx * d[FP_BUF_SIZE], req, m.len);
			m.data = 0;
			psm2_eager_build(cells[0], &m, (uint16_t) bidx);
			if (psm2_push((char *) (uintptr_t) d[FP_RING], d[FP_MASK], (uint64_t *) (uintptr_t) d[FP_SLOT],
				      (const uint64_t (*)[CELL_PAYLOAD / 8]) cells, 1)) {
				__atomic_fetch_and(busy, ~bit, __ATOMIC_SEQ_CST);
				goto out;	/* full: Go queues or refuses it */
			}
			((int32_t *) (uintptr_t) d[FP_HOLDER])[bidx] = (int32_t) d[FP_IDX];
			d[FP_EAGER_SENT]++;
		}
	}
	if (bidx < 0) {
		if ((cells_n = psm2_inline_build(cells, &m, req, PUSH_CELLS_MAX)) <= 0)
			goto out;
		if (psm2_push((char *) (uintptr_t) d[FP_RING], d[FP_MASK], (uint64_t *) (uintptr_t) d[FP_SLOT],
			      (const uint64_t (*)[CELL_PAYLOAD / 8]) cells, (uint64_t) cells_n))
			goto out;	/* full: Go queues or refuses it */
	}
	a[AO_ID] = tag;
	a[AO_BUF] = (uint64_t) (uintptr_t) res;
	a[AO_LEN] = kind == RMA_ATOMIC ? 0 : n;	/* (an ack answers an fi_atomic) */
	a[AO_CTX] = (uint64_t) (uintptr_t) context;
	a[AO_DEST] = dest | (uint64_t) (bidx + 1) << 48;
	__atomic_store_n(&a[AO_STATE], AO_CPOSTED, __ATOMIC_RELEASE);
	__atomic_store_n(&f[EPF_ARMED], f[EPF_ARMED] + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&f[EPF_CSEQ], seq + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&dom[DOMF_CPOSTED / 8], dom[DOMF_CPOSTED / 8] + 1, __ATOMIC_RELEASE);
	if (d[FP_FENCE])
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	psm2_bell(d);
	ret = PSM2_FAST_DONE;
out:
	if (locking)
		psm2_dunlock(lk);
	return ret;
}

/* psm2_fast_ep returns the i-th endpoint page domain page dom lists if C
 * may deliver for it through CQ page cqf now (it has receives queued), or
 * NULL. */
static inline uint64_t *psm2_fast_ep(const uint64_t *dom, uint64_t i, const uint64_t *cqf)
{
	uint64_t *f = (uint64_t *) (uintptr_t) __atomic_load_n((const uint64_t *) ((const char *) dom + DOMF_EPS) + i,
							      __ATOMIC_ACQUIRE);

	if (!f || !__atomic_load_n(&f[EPF_DELIVER], __ATOMIC_RELAXED) ||
	    f[EPF_RX_CQ] != (uint64_t) (uintptr_t) cqf || !__atomic_load_n(&f[EPF_RQ_COUNT], __ATOMIC_RELAXED))
		return NULL;
	return f;
}

/* psm2_fast_deliver is the receive half of the fast path: called by
 * fi_cq_read with the CQ's page, it takes inline messages that arrived
 * for the endpoints of the domain whose receive CQ this is (those the
 * domain page lists), matches them against the receives C queued, copies
 * them into the receive buffers and writes their completions straight
 * into the caller's buffer (psm2_deliver_ep). Each endpoint's messages
 * come in its ring's order; endpoints have no order among them. It runs
 * for an endpoint only while Go holds nothing its messages or receives
 * could be ordered against (provider/fastep.go: deliverOK), and only when
 * the CQ holds no older entry. Returns the entries written. */
static inline ssize_t psm2_fast_deliver(const uint64_t *cqf, void *buf, size_t count)
{
	const uint64_t *dom;
	uint64_t stride, neps, i;
	uint32_t *lk;
	int locking, any = 0;
	ssize_t got = 0;

	if (!cqf)
		return 0;
	dom = (const uint64_t *) (uintptr_t) __atomic_load_n(&cqf[CQF_DOMAIN], __ATOMIC_ACQUIRE);
	if (!dom)
		return 0;
	neps = __atomic_load_n((const uint64_t *) ((const char *) dom + DOMF_NEPS), __ATOMIC_ACQUIRE);
	for (i = 0; i < neps && i < DOMF_MAX_EPS && !any; i++)
		any = psm2_fast_ep(dom, i, cqf) != NULL;
	if (!any)
		return 0;
	if (!psm2_cq_lock_empty(cqf, dom, &lk, &locking))
		goto out;
	/* Again under the lock: the list and the flags may have changed. */
	stride = cqf[CQF_STRIDE];
	neps = __atomic_load_n((const uint64_t *) ((const char *) dom + DOMF_NEPS), __ATOMIC_RELAXED);
	for (i = 0; i < neps && i < DOMF_MAX_EPS && (size_t) got < count; i++) {
		uint64_t *f = psm2_fast_ep(dom, i, cqf);

		if (f)
			got += psm2_deliver_ep(f, dom, stride, (char *) buf + got * stride, count - got);
	}
out:
	if (locking)
		psm2_dunlock(lk);
	return got;
}

#endif
