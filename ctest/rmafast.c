/* rmafast.c: small fi_write and fi_read between two processes, which C
 * posts at the initiator (cmd/libfabric-psm2/fast/atomic.c: psm2_fast_rma),
 * serves at the target inside fi_cq_read (fast/serve.c: psm2_serve_rma)
 * and completes at the initiator (psm2_fast_answers), with Go taking over
 * whatever C leaves.
 *
 * A target process (this program run with "target") registers a region
 * for remote reads and writes and a second one for remote reads only,
 * and reads its CQ. The initiator, with FI_PSM2_PRINT_STATS set:
 *   - writes and reads back every size from 1 byte to the largest C posts
 *     (4329) around the inline and bounce-buffer limits, and random ones,
 *     at random offsets, keeping a copy of what the region must hold, by
 *     fi_write/fi_read, fi_writev/fi_readv and fi_writemsg/fi_readmsg of
 *     one segment (C posts them all) and fi_writemsg/fi_readmsg with
 *     FI_FENCE (Go's);
 *     each completion must carry its context and FI_RMA with FI_WRITE or
 *     FI_READ, each read the bytes last written;
 *   - posts windows of 5 and of 12 operations before it reaps (the table
 *     of ops C posts has 7 entries: the rest go through Go), each context
 *     completed once;
 *   - writes to the read-only region and reads past the region's end: an
 *     error completion with FI_EACCES and the op's own flags and context
 *     (the target's Go refuses it; an error answer is Go's to complete, so
 *     Go adopts the op C posted);
 *   - reads the whole region by one 64 KiB read, Go's path, and compares
 *     it with its copy;
 *   - closes its endpoint and checks the statistics count every write and
 *     read it posted, C's and Go's;
 *   - posts fetch-adds and compare-swaps of a word and fi_atomic sums of 4
 *     and of 100 words, and fetch-adds at a misaligned address (C left
 *     them to the target's Go only after the first: FI_EFAULT), and checks
 *     what landed and that the statistics count each atomic and its
 *     operand bytes (C's were missing from atomic_bytes).
 * ctest: no-valgrind (two processes and thousands of round trips; the RMA
 * entry points run under valgrind in rma.c). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include "check.h"
#include "node.h"

#define REGION (64 << 10)
#define CMAX 4329 /* the largest read or write C posts (ATOMIC_MAX - RMA_PREFIX) */

static uint8_t region[REGION];

static int target(void)
{
	static uint8_t ro[4096];
	struct ct_node n;
	struct fid_mr *mr, *mr_ro;
	struct fi_cq_tagged_entry e;

	if (ct_open_node_caps(&n, FI_TAGGED | FI_RMA | FI_ATOMIC) ||
	    fi_mr_reg(n.domain, region, sizeof(region), FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 5, 0, &mr, NULL) ||
	    fi_mr_reg(n.domain, ro, sizeof(ro), FI_REMOTE_READ, 0, 6, 0, &mr_ro, NULL))
		return 1;
	for (size_t i = 0; i < n.namelen; i++)
		printf("%02x", (unsigned char) n.name[i]);
	printf(" %lu\n%lu\n", (unsigned long) fi_mr_key(mr), (unsigned long) fi_mr_key(mr_ro));
	fflush(stdout);
	for (;;)
		fi_cq_read(n.cq, &e, 1);
}

static struct ct_node a;
static fi_addr_t peer;
static unsigned long key, key_ro;
static uint8_t shadow[REGION];
static long writes, reads;
static unsigned rng = 12345;

static unsigned rnd(void)
{
	rng = rng * 1103515245u + 12345u;
	return rng >> 8;
}

/* wait_op waits for the completion of the op with context ctx: 0 with
 * its flags checked against want, or its error. */
static int wait_op(void *ctx, uint64_t want)
{
	void *got = NULL;
	uint64_t flags = 0;
	int ret = ct_wait_one(&a, NULL, &got, &flags);

	CHECK(got == ctx, "completion context %p, want %p", got, ctx);
	CHECK((flags & (FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE)) == want, "completion flags %#lx, want %#lx",
	      (unsigned long) flags, (unsigned long) want);
	return ret;
}

/* rma posts the write or read of n bytes at buf to off by one of the
 * calls C posts from (how, 0-3: fi_write/fi_read, fi_writev/fi_readv,
 * fi_writemsg/fi_readmsg with completion flags, the same with FI_FENCE,
 * which is Go's). */
static int rma(int write, void *buf, size_t n, size_t off, int how, struct fi_context *ctx)
{
	struct iovec iov = { .iov_base = buf, .iov_len = n };
	struct fi_rma_iov riov = { .addr = off, .len = n, .key = key };
	struct fi_msg_rma msg = { .msg_iov = &iov, .iov_count = 1, .addr = peer, .rma_iov = &riov,
				  .rma_iov_count = 1, .context = ctx };
	uint64_t flags = FI_COMPLETION | (how == 3 ? FI_FENCE : FI_DELIVERY_COMPLETE);

	switch (how) {
	case 0:
		return (int) (write ? fi_write(a.ep, buf, n, NULL, peer, off, key, ctx) :
				      fi_read(a.ep, buf, n, NULL, peer, off, key, ctx));
	case 1:
		return (int) (write ? fi_writev(a.ep, &iov, NULL, 1, peer, off, key, ctx) :
				      fi_readv(a.ep, &iov, NULL, 1, peer, off, key, ctx));
	default:
		return (int) (write ? fi_writemsg(a.ep, &msg, flags) : fi_readmsg(a.ep, &msg, flags));
	}
}

/* write_read writes n pattern bytes at off, then reads them back, by the
 * calls seed picks. */
static int write_read(size_t off, size_t n, unsigned seed)
{
	static uint8_t buf[CMAX], back[CMAX];
	struct fi_context c1, c2;
	int ret;

	for (size_t i = 0; i < n; i++)
		buf[i] = (uint8_t) (i * 29 + seed);
	if ((ret = rma(1, buf, n, off, (int) (seed % 4), &c1)) || (ret = wait_op(&c1, FI_RMA | FI_WRITE)))
		return ret;
	writes++;
	memcpy(shadow + off, buf, n);
	memset(back, 0xee, n);
	if ((ret = rma(0, back, n, off, (int) (seed / 4 % 4), &c2)) || (ret = wait_op(&c2, FI_RMA | FI_READ)))
		return ret;
	reads++;
	return memcmp(back, shadow + off, n) ? -FI_EIO : 0;
}

/* window posts k operations (alternately writes and reads of up to 300
 * bytes) before it reaps them: every context completed once. */
static int window(int k)
{
	static uint8_t bufs[16][300];
	struct fi_context ctx[16];
	int seen[16] = { 0 }, ret;

	for (int i = 0; i < k; i++) {
		size_t n = 1 + rnd() % 300, off = (size_t) i * 512;

		if (i % 2 == 0) {
			memset(bufs[i], i + 1, n);
			while ((ret = (int) fi_write(a.ep, bufs[i], n, NULL, peer, off, key, &ctx[i])) == -FI_EAGAIN)
				;
			memcpy(shadow + off, bufs[i], n);
			writes++;
		} else {
			while ((ret = (int) fi_read(a.ep, bufs[i], n, NULL, peer, off, key, &ctx[i])) == -FI_EAGAIN)
				;
			reads++;
		}
		if (ret)
			return ret;
	}
	for (int i = 0; i < k; i++) {
		void *got = NULL;
		uint64_t flags = 0;

		if ((ret = ct_wait_one(&a, NULL, &got, &flags)))
			return ret;
		for (int j = 0; j < k; j++) {
			if (got == &ctx[j]) {
				seen[j]++;
				CHECK((flags & (FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE)) ==
					      (FI_RMA | (j % 2 ? FI_READ : FI_WRITE)),
				      "window of %d: op %d's flags %#lx", k, j, (unsigned long) flags);
			}
		}
	}
	for (int j = 0; j < k; j++)
		CHECK(seen[j] == 1, "window of %d: op %d completed %d times", k, j, seen[j]);
	return 0;
}

/* fetch_add adds v to the word at off of the target's region: 0 with
 * the old value in *old, or the op's error. */
static int fetch_add(uint64_t off, uint64_t v, uint64_t *old)
{
	struct fi_context c;
	int ret;

	if ((ret = (int) fi_fetch_atomic(a.ep, &v, 1, NULL, old, NULL, peer, off, key, FI_UINT64, FI_SUM, &c)))
		return ret;
	return wait_op(&c, FI_ATOMIC | FI_READ);
}

/* atomics opens a, posts atomics of the shapes C posts at the region's
 * first 864 bytes, and checks what they did and what the statistics say
 * of them. */
static int atomics(const unsigned char *name)
{
	static uint64_t ones[100], got[108];
	const char *names[] = { "atomics", "atomic_bytes" };
	long want = 0, want_bytes = 0, stats[2];
	uint64_t v, old, cmp;
	struct fi_context c;
	int ret;

	for (int i = 0; i < 100; i++)
		ones[i] = 1;
	CHECK(ct_open_node_caps(&a, FI_TAGGED | FI_RMA | FI_ATOMIC) == 0, "open for atomics");
	CHECK(fi_av_insert(a.av, name, 1, &peer, 0, NULL) == 1, "insert the target for atomics");
	memset(got, 0, sizeof(got));
	if ((ret = (int) fi_write(a.ep, got, sizeof(got), NULL, peer, 0, key, &c)) ||
	    (ret = wait_op(&c, FI_RMA | FI_WRITE)))
		return ret;
	for (int i = 0; i < 40; i++) {
		if ((ret = fetch_add(0, 3, &old)))
			return ret;
		CHECK(old == (uint64_t) i * 3, "fetch-add %d: old %lu", i, (unsigned long) old);
		want++, want_bytes += 8;
		cmp = (uint64_t) i;
		v = (uint64_t) i + 1;
		if ((ret = (int) fi_compare_atomic(a.ep, &v, 1, NULL, &cmp, NULL, &old, NULL, peer, 8, key, FI_UINT64,
						  FI_CSWAP, &c)) ||
		    (ret = wait_op(&c, FI_ATOMIC | FI_READ)))
			return ret;
		CHECK(old == (uint64_t) i, "compare-swap %d: old %lu", i, (unsigned long) old);
		want++, want_bytes += 16;
		if ((ret = (int) fi_atomic(a.ep, ones, 4, NULL, peer, 16, key, FI_UINT64, FI_SUM, &c)) ||
		    (ret = wait_op(&c, FI_ATOMIC | FI_WRITE)))
			return ret;
		want++, want_bytes += 32;
		if (i % 8 == 0) {
			if ((ret = (int) fi_atomic(a.ep, ones, 100, NULL, peer, 64, key, FI_UINT64, FI_SUM, &c)) ||
			    (ret = wait_op(&c, FI_ATOMIC | FI_WRITE)))
				return ret;
			want++, want_bytes += 800;
		}
	}
	/* Misaligned: Go applies them (C's apply takes aligned words only). */
	v = 0;
	if ((ret = (int) fi_write(a.ep, &v, 8, NULL, peer, 2003, key, &c)) || (ret = wait_op(&c, FI_RMA | FI_WRITE)))
		return ret;
	for (int i = 0; i < 20; i++) {
		if ((ret = fetch_add(2003, 1, &old)))
			return ret;
		CHECK(old == (uint64_t) i, "misaligned fetch-add %d: old %lu", i, (unsigned long) old);
		want++, want_bytes += 8;
	}
	if ((ret = (int) fi_read(a.ep, got, sizeof(got), NULL, peer, 0, key, &c)) || (ret = wait_op(&c, FI_RMA | FI_READ)))
		return ret;
	/* 40 fetch-adds of 3 at word 0, the swaps up to 40 at word 1, 40 sums
	 * of 4 at words 2-5, 5 sums of 100 at words 8-107. */
	CHECK(got[0] == 40 * 3 && got[1] == 40 && got[2] == 40 && got[5] == 40 && got[6] == 0 && got[7] == 0 &&
		      got[8] == 5 && got[107] == 5,
	      "the region after the atomics: %lu %lu %lu %lu %lu %lu", (unsigned long) got[0], (unsigned long) got[1],
	      (unsigned long) got[2], (unsigned long) got[5], (unsigned long) got[8], (unsigned long) got[107]);
	ct_close_ep_stats(&a, "rma", names, stats, 2);
	CHECK(stats[0] == want && stats[1] == want_bytes, "statistics: %ld atomics of %ld bytes, %ld of %ld posted",
	      stats[0], stats[1], want, want_bytes);
	ct_close_node(&a);
	return 0;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 1, 7, 8, 9, 31, 32, 33, 87, 88, 142, 143, 197, 198, 199, 256, 1000, 4096, CMAX };
	static uint8_t whole[REGION];
	unsigned char name[64];
	size_t namelen = 0;
	uint8_t b8[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct fi_context ce;
	const char *step = "";
	long w, r;
	pid_t tpid;
	FILE *in;
	int ret = 0;

	if (argc > 1 && !strcmp(argv[1], "target"))
		return target();
	if (!(in = ct_target(argv[0], &tpid, name, &namelen, &key)))
		return 1;
	{
		char line[64];

		if (!fgets(line, sizeof(line), in)) {
			printf("FAIL: no second target line\n");
			kill(tpid, SIGKILL);
			return 1;
		}
		key_ro = strtoul(line, NULL, 10);
	}
	setenv("FI_PSM2_PRINT_STATS", "1", 1);
	CHECK(ct_open_node_caps(&a, FI_TAGGED | FI_RMA) == 0, "open");
	CHECK(fi_av_insert(a.av, name, 1, &peer, 0, NULL) == 1, "insert the target");

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]) && !ret; s++)
		for (size_t off = 0; off < 3 && !ret; off++)
			if ((ret = write_read(off * 4099 + s * 64, sizes[s], (unsigned) (s * 3 + off))))
				step = "sizes";
	for (int i = 0; i < 2000 && !ret; i++) {
		size_t n = 1 + rnd() % CMAX;

		if ((ret = write_read(rnd() % (REGION - n), n, (unsigned) i)))
			step = "random";
	}
	for (int i = 0; i < 50 && !ret; i++)
		if ((ret = window(i % 2 ? 12 : 5)))
			step = "windows";
	CHECK(ret == 0, "%s: %s (%d)", step, fi_strerror(ret < 0 ? -ret : ret), ret);

	/* Refused by the target: the error, with the op's flags and context. */
	CHECK(fi_write(a.ep, b8, 8, NULL, peer, 0, key_ro, &ce) == 0, "post a write to the read-only region");
	writes++;
	CHECK(wait_op(&ce, FI_RMA | FI_WRITE) == FI_EACCES, "a write to the read-only region fails with FI_EACCES");
	CHECK(fi_read(a.ep, b8, 8, NULL, peer, REGION - 4, key, &ce) == 0, "post a read past the region's end");
	reads++;
	CHECK(wait_op(&ce, FI_RMA | FI_READ) == FI_EACCES, "a read past the region's end fails with FI_EACCES");
	CHECK(write_read(100, 8, 99) == 0, "an op after the errors");

	/* The whole region, through Go's path. */
	CHECK(fi_read(a.ep, whole, REGION, NULL, peer, 0, key, &ce) == 0 && wait_op(&ce, FI_RMA | FI_READ) == 0,
	      "read the whole region");
	reads++;
	CHECK(memcmp(whole, shadow, REGION) == 0, "the region holds every byte written");

	w = ct_close_ep_stat(&a, "rma", "writes");
	CHECK(w == writes, "statistics: %ld writes, %ld posted", w, writes);
	ct_close_node(&a);

	/* The reads, from a second endpoint's count (ct_close_ep_stat reads
	 * one counter an endpoint): a few through each path. */
	CHECK(ct_open_node_caps(&a, FI_TAGGED | FI_RMA) == 0, "open again");
	CHECK(fi_av_insert(a.av, name, 1, &peer, 0, NULL) == 1, "insert the target again");
	reads = 0;
	for (int i = 0; i < 20; i++) {
		CHECK(fi_read(a.ep, whole, i % 2 ? 64 : 20000, NULL, peer, 0, key, &ce) == 0 &&
			      wait_op(&ce, FI_RMA | FI_READ) == 0,
		      "read %d", i);
		reads++;
	}
	r = ct_close_ep_stat(&a, "rma", "reads");
	CHECK(r == reads, "statistics: %ld reads, %ld posted", r, reads);
	ct_close_node(&a);

	ret = atomics(name);
	CHECK(ret == 0, "atomics: %s (%d)", fi_strerror(ret < 0 ? -ret : ret), ret);

	kill(tpid, SIGKILL);
	waitpid(tpid, NULL, 0);
	printf("# %ld writes and reads of 1-%d bytes\n", writes + 4, CMAX);
	return finish("rmafast");
}
