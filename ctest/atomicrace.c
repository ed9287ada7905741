/* atomicrace.c: atomics from several processes on one word are atomic and
 * every one of them is answered once.
 *
 * A target process (this program run with "target") registers a region
 * and serves; INITIATORS initiator processes each run ITERS fetch-adds of
 * 1 on one 64-bit word of it, every eighth as a compare-swap loop
 * instead (read, then CSWAP old -> old+1 until it hits), and record
 * every old value they fetched in memory shared with the parent. The
 * target serves most of them in C inside fi_cq_read (cmd/libfabric-psm2/fast/serve.c:
 * psm2_fast_serve) and the initiators complete most in C too
 * (psm2_fast_answers); the first of each initiator, and any that meet a
 * busy domain, go through Go. The word must end at INITIATORS * ITERS and
 * the old values of the successful operations must be each number below
 * that exactly once: a lost, doubled or torn update breaks one or the
 * other.
 *
 * ctest: no-valgrind (three processes and 60000 round trips; the atomic
 * entry points run under valgrind in atomic.c).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include "check.h"
#include "node.h"

#define INITIATORS 2
#define ITERS 30000

static int target(void)
{
	static uint64_t region[512];
	struct ct_node n;
	struct fid_mr *mr;
	struct fi_cq_tagged_entry e;

	if (ct_open_node_caps(&n, FI_TAGGED | FI_RMA | FI_ATOMIC) ||
	    fi_mr_reg(n.domain, region, sizeof(region), FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 5, 0, &mr, NULL))
		return 1;
	for (size_t i = 0; i < n.namelen; i++)
		printf("%02x", (unsigned char) n.name[i]);
	printf(" %lu\n", (unsigned long) fi_mr_key(mr));
	fflush(stdout);
	for (;;)
		fi_cq_read(n.cq, &e, 1);
}

/* wait_one waits (10 s at most) for one completion of a: 0 or an error. */
static int wait_one(struct ct_node *a)
{
	return ct_wait_one(a, NULL, NULL, NULL);
}

/* initiator runs its operations and records the old values of the ones
 * that added 1 in olds (ITERS of them). Returns 0 or the first error. */
static int initiator(const unsigned char *name, size_t namelen, unsigned long key, uint64_t *olds)
{
	struct ct_node a;
	fi_addr_t peer;
	uint64_t one = 1, old, cmp, want;
	int ret;

	if ((ret = ct_open_node_caps(&a, FI_TAGGED | FI_RMA | FI_ATOMIC)))
		return ret;
	if (fi_av_insert(a.av, name, 1, &peer, 0, NULL) != 1)
		return -FI_EINVAL;
	for (int i = 0; i < ITERS; i++) {
		if (i % 8 != 7) {
			if ((ret = fi_fetch_atomic(a.ep, &one, 1, NULL, &old, NULL, peer, 64, key, FI_UINT64,
						   FI_SUM, NULL)) ||
			    (ret = wait_one(&a)))
				return ret;
			olds[i] = old;
			continue;
		}
		if ((ret = fi_fetch_atomic(a.ep, NULL, 1, NULL, &cmp, NULL, peer, 64, key, FI_UINT64,
					   FI_ATOMIC_READ, NULL)) ||
		    (ret = wait_one(&a)))
			return ret;
		for (;;) {
			want = cmp + 1;
			if ((ret = fi_compare_atomic(a.ep, &want, 1, NULL, &cmp, NULL, &old, NULL, peer, 64, key,
						     FI_UINT64, FI_CSWAP, NULL)) ||
			    (ret = wait_one(&a)))
				return ret;
			if (old == cmp)
				break;
			cmp = old; /* another initiator came first: again */
		}
		olds[i] = old;
	}
	ct_close_node(&a);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned char name[64];
	unsigned long key;
	size_t namelen = 0, total = (size_t) INITIATORS * ITERS;
	int bad = 0;
	pid_t tpid, pids[INITIATORS];
	uint64_t *olds, *seen, final = 0;
	FILE *in;

	if (argc > 1 && !strcmp(argv[1], "target"))
		return target();
	if (!(in = ct_target(argv[0], &tpid, name, &namelen, &key)))
		return 1;

	olds = mmap(NULL, total * 8, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(olds != MAP_FAILED, "shared memory");
	if (olds == MAP_FAILED)
		return finish("atomicrace");
	memset(olds, 0xff, total * 8);
	for (int k = 0; k < INITIATORS; k++) {
		/* (fi_getinfo before the fork would be fine too; each
		 * initiator opens its own node, as an MPI rank would) */
		if ((pids[k] = fork()) == 0)
			_exit(initiator(name, namelen, key, olds + (size_t) k * ITERS) ? 1 : 0);
	}
	for (int k = 0; k < INITIATORS; k++) {
		int st = 0;

		waitpid(pids[k], &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "initiator %d: status %d", k, st);
	}

	/* The word, through a node of this process. */
	{
		struct ct_node a;
		fi_addr_t peer;

		CHECK(ct_open_node_caps(&a, FI_TAGGED | FI_RMA | FI_ATOMIC) == 0, "open");
		CHECK(fi_av_insert(a.av, name, 1, &peer, 0, NULL) == 1, "insert the target");
		CHECK(fi_read(a.ep, &final, 8, NULL, peer, 64, key, NULL) == 0 && wait_one(&a) == 0, "read the word");
		ct_close_node(&a);
	}
	kill(tpid, SIGKILL);
	waitpid(tpid, NULL, 0);
	CHECK(final == total, "the word is %lu after %zu increments", (unsigned long) final, total);

	seen = calloc(total, sizeof(*seen));
	for (size_t i = 0; i < total; i++) {
		if (olds[i] >= total || seen[olds[i]]++) {
			if (bad++ < 3)
				CHECK(0, "old value %lu (op %zu) out of range or seen twice", (unsigned long) olds[i], i);
		}
	}
	CHECK(bad == 0, "%d old values wrong", bad);
	printf("# %zu increments from %d processes\n", total, INITIATORS);
	free(seen);
	munmap(olds, total * 8);
	return finish("atomicrace");
}
