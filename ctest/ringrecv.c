/* ringrecv.c: a directed receive from a peer on this host that the
 * endpoint never sends to is queued and delivered by the C fast path, as
 * one from a peer it sends to (provider/msg.go, knowLocalSource). In a
 * ring (IMB's Sendrecv: send to the right neighbour, receive from the
 * left) a rank's left neighbour is such a peer; before, every receive from
 * it went through Go.
 *
 * Three endpoints of this process with FI_DIRECTED_RECV, each in its own
 * domain, pass tagged 8-byte messages around a ring: each posts a
 * receive from its left neighbour, then sends to its right one. Every
 * message must arrive intact, and Go must have delivered under 1% of them:
 * the shm group's "received" count the endpoints print at close
 * (FI_PSM2_PRINT_STATS), which counts what Go took from the ring. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rdma/fi_tagged.h>
#include "check.h"
#include "node.h"

#define N 3
#define ROUNDS 3000

int main(void)
{
	struct ct_node n[N];
	fi_addr_t right[N], left[N];
	uint64_t in[N], out[N];
	struct fi_context ctx[N];
	long go = 0;
	int ret, ok = 1;

	setenv("FI_PSM2_PRINT_STATS", "1", 1);
	for (int i = 0; i < N; i++) {
		ret = ct_open_node_caps(&n[i], FI_TAGGED | FI_DIRECTED_RECV);
		CHECK(ret == 0, "open %d: %d", i, ret);
		if (ret)
			return finish("ringrecv");
	}
	for (int i = 0; i < N; i++) {
		CHECK(fi_av_insert(n[i].av, n[(i + 1) % N].name, 1, &right[i], 0, NULL) == 1, "insert right");
		CHECK(fi_av_insert(n[i].av, n[(i + N - 1) % N].name, 1, &left[i], 0, NULL) == 1, "insert left");
	}
	for (int r = 0; r < ROUNDS && ok; r++) {
		int got = 0;

		for (int i = 0; i < N; i++) {
			in[i] = 0;
			ok &= fi_trecv(n[i].ep, &in[i], 8, NULL, left[i], (uint64_t) r, 0, &ctx[i]) == 0;
		}
		for (int i = 0; i < N; i++) {
			out[i] = (uint64_t) r * 10 + (uint64_t) i;
			while ((ret = (int) fi_tinject(n[i].ep, &out[i], 8, right[i], (uint64_t) r)) == -FI_EAGAIN)
				;
			ok &= ret == 0;
		}
		for (double end = ct_now() + 10; got < N && ct_now() < end;) {
			for (int i = 0; i < N; i++) {
				struct fi_cq_tagged_entry e;
				ssize_t k = fi_cq_read(n[i].cq, &e, 1);

				if (k == 1) {
					ok &= e.op_context == &ctx[i] && e.tag == (uint64_t) r;
					got++;
				} else if (k != -FI_EAGAIN) {
					ok = 0;
				}
			}
		}
		ok &= got == N;
		for (int i = 0; i < N; i++)
			ok &= in[i] == out[(i + N - 1) % N];
		CHECK(ok, "round %d: a message lost, late or wrong", r);
	}
	for (int i = 0; i < N; i++) {
		long g = ct_close_ep_stat(&n[i], "shm", "received");

		CHECK(g >= 0, "endpoint %d printed no statistics", i);
		go += g;
	}
	CHECK(go * 100 < (long) ROUNDS * N, "Go delivered %ld of %d messages", go, ROUNDS * N);
	for (int i = 0; i < N; i++)
		ct_close_node(&n[i]);
	return finish("ringrecv");
}
