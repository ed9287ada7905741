/* rxbits.c: an initiator whose AV has receive-context bits (rx_ctx_bits
 * 2, as MPICH's on a scalable endpoint) and two peers at fi_addrs 1 and 4.
 * C finds a peer's descriptor at its fi_addr rotated left by those bits
 * (fast/page.h: psm2_peer_slot, as Go's fastSlot stores it), and fi_addr
 * 4 read unrotated is the slot of fi_addr 1: each peer must get its own
 * operations and only those, through C's paths:
 *   - writes, reads and fetch-adds (fast/atomic.c: psm2_fast_post),
 *   - a receive directed at fi_addr 4 while fi_addr 1 sends the same tag
 *     first (fast/deliver.c: psm2_fast_recv, fast/match.h): it takes
 *     fi_addr 4's message, and a receive directed at fi_addr 1 the other.
 * Peer 0 is named by fi_addrs 0-3, peer 1 by fi_addr 4.
 *
 * The peers are endpoints of this process, each with its own
 * fabric and domain, so every message crosses the shm wire. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include "check.h"
#include "node.h"

static struct ct_node n;
static fi_addr_t at[5];

/* Two targets (peers) of this process, read through their CQs (C
 * delivers and serves there). */
static struct ct_node t[2];

static int wait_served(struct ct_node *n, void **ctx, uint64_t *flags)
{
	struct fi_cq_tagged_entry e;
	double t0 = ct_now();

	for (;;) {
		ssize_t got = fi_cq_read(n->cq, &e, 1);

		if (got == 1) {
			*ctx = e.op_context;
			*flags = e.flags;
			return 0;
		}
		if (got != -FI_EAGAIN)
			return got == -FI_EAVAIL ? -FI_EIO : (int) got;
		fi_cq_read(t[0].cq, &e, 1);
		fi_cq_read(t[1].cq, &e, 1);
		if (ct_now() - t0 > 10)
			return -FI_ETIMEDOUT;
	}
}

/* rma: writes, reads and fetch-adds to targets 0 (fi_addr 1) and 1
 * (fi_addr 4), each to words of its own. */
static void rma(void)
{
	static uint64_t regions[2][64];
	struct fid_mr *mr[2];
	uint64_t v, old = 0, one = 1, flags;
	void *ctx;
	struct fi_context c;

	memset(regions, 0, sizeof(regions));
	for (int k = 0; k < 2; k++) {
		CHECK(fi_mr_reg(t[k].domain, regions[k], sizeof(regions[k]), FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 7, 0,
				&mr[k], NULL) == 0 && fi_mr_key(mr[k]) == 7, "register target %d's region with key 7", k);
	}
	for (int round = 0; round < 40; round++) {
		for (int k = 0; k < 2; k++) {
			fi_addr_t dest = k ? at[4] : at[1];
			int slot = 8 * k + round % 8; /* the word this op writes */

			v = (uint64_t) (k + 1) << 32 | (uint64_t) round;
			CHECK(fi_write(n.ep, &v, 8, NULL, dest, (uint64_t) slot * 8, 7, &c) == 0 &&
				      wait_served(&n, &ctx, &flags) == 0 && ctx == &c,
			      "write %d to target %d", round, k);
			CHECK(fi_read(n.ep, &old, 8, NULL, dest, (uint64_t) slot * 8, 7, &c) == 0 &&
				      wait_served(&n, &ctx, &flags) == 0 && old == v,
			      "read %d from target %d: %#lx, wrote %#lx", round, k, (unsigned long) old, (unsigned long) v);
			CHECK(fi_fetch_atomic(n.ep, &one, 1, NULL, &old, NULL, dest, 63 * 8, 7, FI_UINT64, FI_SUM, &c) == 0 &&
				      wait_served(&n, &ctx, &flags) == 0 && old == (uint64_t) round,
			      "fetch-add %d at target %d: old %lu", round, k, (unsigned long) old);
		}
	}
	/* Each target holds its own words, none of the other's. */
	for (int k = 0; k < 2; k++) {
		for (int w = 0; w < 16; w++) {
			uint64_t got = regions[k][w];

			if (w / 8 != k)
				CHECK(got == 0, "target %d word %d: %#lx, another target's", k, w, (unsigned long) got);
			else
				CHECK(got >> 32 == (uint64_t) k + 1, "target %d word %d: %#lx", k, w, (unsigned long) got);
		}
		CHECK(regions[k][63] == 40, "target %d's counter %lu, want 40", k, (unsigned long) regions[k][63]);
	}
	for (int k = 0; k < 2; k++)
		fi_close(&mr[k]->fid);
}

/* recv_from posts a receive directed at fi_addr src, has peers send
 * tag 9 first from peer first then from the other, and reads what the
 * receive got: 0 and the byte, or an error. */
static int recv_from(fi_addr_t src, int first, uint8_t *got)
{
	uint8_t b[2] = { 0xa0, 0xb1 }, in = 0;
	struct fi_cq_tagged_entry e;
	fi_addr_t back[2];
	struct fi_context c;
	void *ctx;
	uint64_t flags;
	int ret;

	for (int k = 0; k < 2; k++)
		if (fi_av_insert(t[k].av, n.name, 1, &back[k], 0, NULL) != 1)
			return -FI_EINVAL;
	if ((ret = (int) fi_trecv(n.ep, &in, 1, NULL, src, 9, 0, &c)))
		return ret;
	for (int j = 0; j < 2; j++) {
		int k = j ? !first : first;

		while ((ret = (int) fi_tinject(t[k].ep, &b[k], 1, back[k], 9)) == -FI_EAGAIN)
			fi_cq_read(t[k].cq, &e, 1);
		if (ret)
			return ret;
	}
	if ((ret = wait_served(&n, &ctx, &flags)))
		return ret;
	*got = in;
	/* The other message, for a receive from anyone, so that nothing
	 * is left for the next round. */
	if ((ret = (int) fi_trecv(n.ep, &in, 1, NULL, FI_ADDR_UNSPEC, 9, 0, &c)) ||
	    (ret = wait_served(&n, &ctx, &flags)))
		return ret;
	for (int k = 0; k < 2; k++)
		fi_av_remove(t[k].av, &back[k], 1, 0);
	return 0;
}

int main(void)
{
	struct ct_opts o = { .caps = FI_TAGGED | FI_RMA | FI_ATOMIC | FI_DIRECTED_RECV, .rx_ctx_bits = 2 };
	uint8_t got;

	for (int k = 0; k < 2; k++)
		CHECK(ct_open_node_caps(&t[k], FI_TAGGED | FI_RMA | FI_ATOMIC) == 0, "open peer %d", k);
	CHECK(ct_open(&n, &o) == 0, "open an endpoint with rx_ctx_bits 2");
	for (int i = 0; i < 5; i++)
		CHECK(fi_av_insert(n.av, t[i == 4].name, 1, &at[i], 0, NULL) == 1 && at[i] == (fi_addr_t) i,
		      "insert fi_addr %d", i);
	rma();
	for (int round = 0; round < 20; round++) {
		CHECK(recv_from(at[1], 1, &got) == 0 && got == 0xa0, "round %d: a receive from fi_addr 1 got %#x", round,
		      got);
		CHECK(recv_from(at[4], 0, &got) == 0 && got == 0xb1, "round %d: a receive from fi_addr 4 got %#x", round,
		      got);
	}
	ct_close_node(&n);
	for (int k = 0; k < 2; k++)
		ct_close_node(&t[k]);
	return finish("rxbits");
}

