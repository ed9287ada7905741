/* rmakill.c: RMA to another process, and an RMA whose target dies: it
 * fails within the connection timeout instead of waiting for ever (its
 * request was delivered, so no wire operation stands for the answer: the
 * provider has the wire watch the peer).
 *
 * The target is this program run again ("target" argument, a fresh
 * process): it registers a region holding region[i] = i % 251, prints
 * its name and key, and serves RMA until it is killed. The initiator
 * reads and writes sizes from 1 B to 60 KB and checks the bytes at both
 * ends (through the target), runs atomics (small_atomics: the ones the
 * target serves in C and the larger ones Go serves), then kills the target with SIGKILL and
 * starts a read and a write: both must complete with an error entry
 * within FI_PSM2_CONN_TIMEOUT (2 s here) plus the liveness checks' slack.
 *
 * Without arguments both run here (over shared memory). Across hosts
 * (scripts/multihost.sh, over hfi) the script starts "rmakill target" on
 * one host and "rmakill remote" on another, feeds the target's line to
 * the initiator's stdin, waits for its "kill" line, kills the target and
 * answers "killed".
 *
 * ctest: no-valgrind (it waits out a connection timeout on purpose; the
 * RMA entry points run under valgrind in rma.c).
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

#define CONN_TIMEOUT "2"
#define RO_PAGE 126976	/* the target's read-only page: the last of its region */

static int target(void)
{
	static uint8_t region[1 << 17] __attribute__((aligned(4096)));
	struct ct_node n;
	struct fid_mr *mr;
	struct fi_cq_tagged_entry e;

	for (size_t i = 0; i < sizeof(region); i++)
		region[i] = (uint8_t) (i % 251);
	if (ct_open_node_caps(&n, FI_TAGGED | FI_RMA) ||
	    fi_mr_reg(n.domain, region, sizeof(region), FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 9, 0, &mr, NULL))
		return 1;
	/* A page the MR grants remote writes to that the process made
	 * read-only after registering it (readonly_atomics). */
	if (mprotect(region + RO_PAGE, 4096, PROT_READ))
		return 1;
	for (size_t i = 0; i < n.namelen; i++)
		printf("%02x", (unsigned char) n.name[i]);
	printf(" %lu\n", (unsigned long) fi_mr_key(mr));
	fflush(stdout);
	for (;;) {
		fi_cq_read(n.cq, &e, 1);
		usleep(100);
	}
}

/* wait_one is ct_wait_one (10 s at most) that also says how long it took. */
static int wait_one(struct ct_node *a, double *took)
{
	double t0 = ct_now();
	int ret;

	ret = ct_wait_one(a, NULL, NULL, NULL);
	*took = ct_now() - t0;
	return ret;
}

/* transfers checks reads and writes of several sizes against the
 * target's pattern. */
static void transfers(struct ct_node *a, fi_addr_t peer, unsigned long key)
{
	static const size_t sz[] = { 1, 100, 4096, 16385, 60000 };
	static uint8_t buf[60000], back[60000];
	double took;
	int ret;

	for (unsigned k = 0; k < sizeof(sz) / sizeof(sz[0]); k++) {
		size_t n = sz[k], bad = n;

		memset(buf, 0, n);
		ret = fi_read(a->ep, buf, n, NULL, peer, 7, key, NULL);
		CHECK(ret == 0 && (ret = wait_one(a, &took)) == 0, "read %zu: %d", n, ret);
		for (size_t i = 0; i < n && bad == n; i++)
			if (buf[i] != (uint8_t) ((i + 7) % 251))
				bad = i;
		CHECK(bad == n, "read %zu: byte %zu is wrong", n, bad);
		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t) (i * 7 + k);
		ret = fi_write(a->ep, buf, n, NULL, peer, 65536, key, NULL);
		CHECK(ret == 0 && (ret = wait_one(a, &took)) == 0, "write %zu: %d", n, ret);
		ret = fi_read(a->ep, back, n, NULL, peer, 65536, key, NULL);
		CHECK(ret == 0 && (ret = wait_one(a, &took)) == 0 && !memcmp(buf, back, n),
		      "write %zu read back: %d", n, ret);
	}

	/* Atomics from another process: fetch-add on uint64 and a long
	 * double sum (applied by the target's C side). */
	{
		uint64_t v = 5, old = 0, zero = 0;
		long double x = 2.5L, got = 0;

		ret = fi_write(a->ep, &zero, 8, NULL, peer, 4096, key, NULL);
		CHECK(ret == 0 && wait_one(a, &took) == 0, "zero the word");
		for (int i = 0; i < 3; i++) {
			ret = fi_fetch_atomic(a->ep, &v, 1, NULL, &old, NULL, peer, 4096, key, FI_UINT64, FI_SUM, NULL);
			CHECK(ret == 0 && (ret = wait_one(a, &took)) == 0 && old == 5u * i,
			      "fetch-add %d: %d, old %lu", i, ret, (unsigned long) old);
		}
		/* Plain fi_atomic (answered by an ack), then the sum read back. */
		for (int i = 0; i < 2; i++) {
			ret = fi_atomic(a->ep, &v, 1, NULL, peer, 4096, key, FI_UINT64, FI_SUM, NULL);
			CHECK(ret == 0 && (ret = wait_one(a, &took)) == 0, "atomic add %d: %d", i, ret);
		}
		ret = fi_fetch_atomic(a->ep, NULL, 1, NULL, &old, NULL, peer, 4096, key, FI_UINT64, FI_ATOMIC_READ, NULL);
		CHECK(ret == 0 && (ret = wait_one(a, &took)) == 0 && old == 25u, "after the adds: %d, %lu", ret,
		      (unsigned long) old);
		ret = fi_write(a->ep, &x, sizeof(x), NULL, peer, 8192, key, NULL);
		CHECK(ret == 0 && wait_one(a, &took) == 0, "write a long double");
		ret = fi_atomic(a->ep, &x, 1, NULL, peer, 8192, key, FI_LONG_DOUBLE, FI_SUM, NULL);
		CHECK(ret == 0 && (ret = wait_one(a, &took)) == 0, "long double sum: %d", ret);
		ret = fi_read(a->ep, &got, sizeof(got), NULL, peer, 8192, key, NULL);
		CHECK(ret == 0 && wait_one(a, &took) == 0 && got == 5.0L, "long double sum: %Lg", got);
	}
}

/* Element i of integer datatype dt at p, read with its sign; putv stores
 * v there, truncated as a cast does. */
static int64_t getv(int dt, const void *p, int i)
{
	switch (dt) {
	case FI_INT8: return ((const int8_t *) p)[i];
	case FI_UINT8: return ((const uint8_t *) p)[i];
	case FI_INT16: return ((const int16_t *) p)[i];
	case FI_UINT16: return ((const uint16_t *) p)[i];
	case FI_INT32: return ((const int32_t *) p)[i];
	case FI_UINT32: return ((const uint32_t *) p)[i];
	default: return ((const int64_t *) p)[i];
	}
}

static void putv(int dt, void *p, int i, int64_t v)
{
	switch (dt) {
	case FI_INT8: case FI_UINT8: ((uint8_t *) p)[i] = (uint8_t) v; break;
	case FI_INT16: case FI_UINT16: ((uint16_t *) p)[i] = (uint16_t) v; break;
	case FI_INT32: case FI_UINT32: ((uint32_t *) p)[i] = (uint32_t) v; break;
	default: ((uint64_t *) p)[i] = (uint64_t) v; break;
	}
}

/* small_atomics runs fetch-add, fetch-min, compare-swap and atomic read
 * and write on 1 to 300 elements of every integer type in the target,
 * which serves the ones whose request and answer are inline messages in C
 * (cmd/libfabric-psm2/fast/serve.c: psm2_fast_serve; up to 1713 operand bytes, 856 for a compare)
 * and the others in Go, and checks the old values and the memory after
 * each. The elements from the second on straddle a page boundary of the
 * target's region (C reads such a region whole first). */
static void small_atomics(struct ct_node *a, fi_addr_t peer, unsigned long key)
{
	static const int ops[] = { FI_SUM, FI_MIN, FI_CSWAP, FI_ATOMIC_READ, FI_ATOMIC_WRITE, FI_BXOR };
	double took;
	int ret, bad = 0;

	for (int dt = FI_INT8; dt <= FI_UINT64; dt++) {
		size_t sz = (size_t) 1 << (dt / 2);

		static const int counts[] = { 1, 2, 3, 4, 5, 37, 100, 213, 300 };

		for (unsigned c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
			int count = counts[c];
			uint64_t at = 12288 - (uint64_t) (count / 2) * sz;

			for (unsigned k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
				int op = ops[k];
				static uint64_t init[300], opnd[300], cmpv[300], old[300], got[300], want[300];

				for (int i = 0; i < count; i++) {
					putv(dt, init, i, 10 * i + dt + (int) k);
					putv(dt, opnd, i, i % 2 ? -3 - i : 100 + i);
					putv(dt, cmpv, i, i % 2 ? 10 * i + dt + (int) k : 1);
				}
				memset(old, 0, sizeof(old));
				ret = fi_write(a->ep, init, count * sz, NULL, peer, at, key, NULL);
				CHECK(ret == 0 && wait_one(a, &took) == 0, "init %d/%d", dt, count);
				if (op == FI_CSWAP)
					ret = fi_compare_atomic(a->ep, opnd, count, NULL, cmpv, NULL, old, NULL, peer,
								at, key, dt, op, NULL);
				else if (op == FI_ATOMIC_READ)
					ret = fi_fetch_atomic(a->ep, NULL, count, NULL, old, NULL, peer, at, key, dt, op, NULL);
				else
					ret = fi_fetch_atomic(a->ep, opnd, count, NULL, old, NULL, peer, at, key, dt, op, NULL);
				CHECK(ret == 0 && (ret = wait_one(a, &took)) == 0, "op %d on %d x %d: %d", op, count, dt, ret);
				ret = fi_read(a->ep, got, count * sz, NULL, peer, at, key, NULL);
				CHECK(ret == 0 && wait_one(a, &took) == 0, "read back %d/%d", dt, count);
				for (int i = 0; i < count; i++) {
					int64_t x = getv(dt, init, i), y = getv(dt, opnd, i), w = x;

					switch (op) {
					case FI_SUM: w = x + y; break;
					case FI_MIN:
						w = (dt == FI_UINT64 ? (uint64_t) y < (uint64_t) x : y < x) ? y : x;
						break;
					case FI_CSWAP: w = getv(dt, cmpv, i) == x ? y : x; break;
					case FI_ATOMIC_WRITE: w = y; break;
					case FI_BXOR: w = x ^ y; break;
					}
					putv(dt, want, i, w);
				}
				if (memcmp(old, init, count * sz) || memcmp(got, want, count * sz)) {
					if (bad++ < 5)
						CHECK(0, "op %d on %d x type %d: old or memory wrong", op, count, dt);
				}
			}
		}
	}
	CHECK(bad == 0, "small atomics: %d wrong", bad);
}

/* msg_atomics runs fi_fetch_atomicmsg and fi_compare_atomicmsg of 1 to
 * 300 uint64: posted by Go (C posts only the plain calls), so a long one
 * goes in one of Go's bounce buffers and the target's C answers it in
 * place (shm's ANSWER-BUF), which Go takes. */
static void msg_atomics(struct ct_node *a, fi_addr_t peer, unsigned long key)
{
	static const size_t counts[] = { 1, 20, 100, 300 };
	static uint64_t init[300], v[300], cmpv[300], old[300], got[300];
	double took;
	int ret;

	for (unsigned c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		size_t count = counts[c];
		struct fi_ioc ioc = { v, count }, cioc = { cmpv, count }, rioc = { old, count };
		struct fi_rma_ioc rma = { 8192, count, key };
		struct fi_msg_atomic msg = { .msg_iov = &ioc, .iov_count = 1, .addr = peer, .rma_iov = &rma,
					     .rma_iov_count = 1, .datatype = FI_UINT64, .op = FI_SUM };

		for (size_t i = 0; i < count; i++) {
			init[i] = 1000 * c + i;
			v[i] = i + 7;
			cmpv[i] = i % 2 ? init[i] + v[i] : 0;
		}
		ret = fi_write(a->ep, init, count * 8, NULL, peer, 8192, key, NULL);
		CHECK(ret == 0 && wait_one(a, &took) == 0, "msg atomics: init %zu", count);
		memset(old, 0, sizeof(old));
		ret = fi_fetch_atomicmsg(a->ep, &msg, &rioc, NULL, 1, 0);
		CHECK(ret == 0 && (ret = wait_one(a, &took)) == 0 && !memcmp(old, init, count * 8),
		      "fi_fetch_atomicmsg of %zu: %d", count, ret);
		/* Now init+v; swap the odd ones to 0 (their compare values match). */
		msg.op = FI_CSWAP;
		for (size_t i = 0; i < count; i++)
			v[i] = 0;
		memset(old, 0, sizeof(old));
		ret = fi_compare_atomicmsg(a->ep, &msg, &cioc, NULL, 1, &rioc, NULL, 1, 0);
		CHECK(ret == 0 && (ret = wait_one(a, &took)) == 0, "fi_compare_atomicmsg of %zu: %d", count, ret);
		ret = fi_read(a->ep, got, count * 8, NULL, peer, 8192, key, NULL);
		CHECK(ret == 0 && wait_one(a, &took) == 0, "msg atomics: read back %zu", count);
		for (size_t i = 0; i < count; i++) {
			uint64_t sum = 1000 * c + i + i + 7;

			if (old[i] != sum || got[i] != (i % 2 ? 0 : sum)) {
				CHECK(0, "msg atomics of %zu: element %zu old %lu memory %lu", count, i,
				      (unsigned long) old[i], (unsigned long) got[i]);
				break;
			}
		}
	}
}

/* readonly_atomics runs atomics on the target's read-only page: the
 * writing ones fail with FI_EFAULT, whether the fault comes at the first
 * store (one page) or after the first page of a region across two (C
 * reads such a region first, and it is readable), and whatever size the
 * answer would have had (C reserved its cells before applying: the error
 * answer fills them); an atomic read succeeds; and the endpoint works
 * afterwards. */
static void readonly_atomics(struct ct_node *a, fi_addr_t peer, unsigned long key)
{
	static const struct { uint64_t at; size_t count; } cases[] = {
		{ RO_PAGE, 1 }, { RO_PAGE, 16 }, { RO_PAGE + 512, 300 }, { RO_PAGE - 64, 16 },
		{ RO_PAGE - 64, 200 },
	};
	static uint64_t v[300], old[300];
	double took;
	int ret;

	for (size_t i = 0; i < 300; i++)
		v[i] = 1;
	for (unsigned c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		ret = fi_fetch_atomic(a->ep, v, cases[c].count, NULL, old, NULL, peer, cases[c].at, key, FI_UINT64,
				      FI_SUM, NULL);
		CHECK(ret == 0 && (ret = wait_one(a, &took)) == FI_EFAULT,
		      "fetch-add of %zu at read-only %#lx: %d (want FI_EFAULT)", cases[c].count,
		      (unsigned long) cases[c].at, ret);
		ret = fi_atomic(a->ep, v, cases[c].count, NULL, peer, cases[c].at, key, FI_UINT64, FI_SUM, NULL);
		CHECK(ret == 0 && (ret = wait_one(a, &took)) == FI_EFAULT,
		      "atomic add of %zu at read-only %#lx: %d (want FI_EFAULT)", cases[c].count,
		      (unsigned long) cases[c].at, ret);
	}
	ret = fi_fetch_atomic(a->ep, NULL, 16, NULL, old, NULL, peer, RO_PAGE, key, FI_UINT64, FI_ATOMIC_READ, NULL);
	CHECK(ret == 0 && (ret = wait_one(a, &took)) == 0, "atomic read of the read-only page: %d", ret);
	for (size_t i = 0; i < 16 * 8 && ret == 0; i++) {
		if (((uint8_t *) old)[i] != (uint8_t) ((RO_PAGE + i) % 251)) {
			CHECK(0, "atomic read of the read-only page: byte %zu is %u", i, ((uint8_t *) old)[i]);
			break;
		}
	}
	ret = fi_fetch_atomic(a->ep, v, 1, NULL, old, NULL, peer, 4096, key, FI_UINT64, FI_SUM, NULL);
	CHECK(ret == 0 && (ret = wait_one(a, &took)) == 0, "a fetch-add after the faults: %d", ret);
}

/* after_kill checks that RMA to the dead target fails in time. */
static void after_kill(struct ct_node *a, fi_addr_t peer, unsigned long key)
{
	static uint8_t buf[4096];
	double took;
	int ret;

	/* First a small fetch-add, which C may post itself (fast/atomic.c:
	 * psm2_fast_fetch; the peer's death is not known yet) and nothing in
	 * Go waits for until Go adopts it. */
	{
		uint64_t v = 1, old = 0;

		ret = fi_fetch_atomic(a->ep, &v, 1, NULL, &old, NULL, peer, 4096, key, FI_UINT64, FI_SUM, NULL);
		if (ret == 0) {
			ret = wait_one(a, &took);
			CHECK(ret > 0 && took < 5, "the fetch-add fails: %d after %.2f s", ret, took);
		} else {
			CHECK(ret < 0 && ret != -FI_EAGAIN, "a fetch-add to a dead target is refused: %d", ret);
		}
	}
	ret = fi_read(a->ep, buf, sizeof(buf), NULL, peer, 0, key, NULL);
	CHECK(ret == 0 || (ret < 0 && ret != -FI_EAGAIN), "read to the dead target: %d", ret);
	if (ret == 0) {
		ret = wait_one(a, &took);
		CHECK(ret > 0 && took < 5, "the read fails within the timeout: %d after %.2f s", ret, took);
		printf("# read to a dead target: error %d after %.2f s\n", ret, took);
	}
	ret = fi_write(a->ep, buf, 100, NULL, peer, 0, key, NULL);
	if (ret == 0) {
		ret = wait_one(a, &took);
		CHECK(ret > 0 && took < 5, "the write fails: %d after %.2f s", ret, took);
	} else {
		CHECK(ret < 0 && ret != -FI_EAGAIN, "a write to a dead target is refused: %d", ret);
	}
}

int main(int argc, char **argv)
{
	struct ct_node a;
	char line[256];
	unsigned char name[64];
	unsigned long key;
	size_t namelen = 0;
	fi_addr_t peer;
	int ret, remote = argc > 1 && !strcmp(argv[1], "remote");
	pid_t pid = 0;
	FILE *in = stdin;

	if (argc > 1 && !strcmp(argv[1], "target"))
		return target();
	setenv("FI_PSM2_CONN_TIMEOUT", CONN_TIMEOUT, 1);
	if (!remote)
		in = ct_start_target(argv[0], &pid);
	if (ct_read_target(in, name, &namelen, &key)) {
		printf("FAIL: no target line\n");
		return 1;
	}

	ret = ct_open_node_caps(&a, FI_TAGGED | FI_RMA);
	CHECK(ret == 0, "open: %d", ret);
	if (ret)
		return finish("rmakill");
	CHECK(fi_av_insert(a.av, name, 1, &peer, 0, NULL) == 1, "insert the target");
	transfers(&a, peer, key);
	small_atomics(&a, peer, key);
	msg_atomics(&a, peer, key);
	readonly_atomics(&a, peer, key);
	if (remote) {
		printf("kill\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), in))
			return finish("rmakill");
	} else {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	after_kill(&a, peer, key);
	ct_close_node(&a);
	return finish("rmakill");
}
