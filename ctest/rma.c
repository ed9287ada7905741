/* rma.c: fi_read*, fi_write* and their completions, counters and errors,
 * between two endpoints of this process (the shm wire) and to oneself.
 *
 * Node a initiates; node b owns a registered region. Every transfer is
 * checked byte for byte at both ends, for sizes around the short/long
 * switch (16 KiB) and up to 1 MiB; writedata's remote CQ entry, inject
 * writes, vectored and fi_*msg forms, the local and remote counters, and
 * the failures: a bad key, a range past the region, a region without the
 * access, a bad rma_iov_count and NULL arguments. A failed access must
 * leave the target's memory untouched. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_trigger.h>
#include "check.h"
#include "node.h"

#define REGION (1 << 20)

static struct ct_node a, b;
static fi_addr_t a2b, a2a;
static uint8_t *region, *local, *back;
static struct fid_mr *mr, *mr_ro;
static uint64_t key, key_ro;
static struct fid_cntr *c_read, *c_write, *c_remote;

/* wait_tx waits for one completion of a (b's provider serving it). */
static int wait_tx(void **ctx_out, uint64_t *flags_out)
{
	return ct_wait_one(&a, &b, ctx_out, flags_out);
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t) (i * 131 + seed * 7 + 1);
}

static void sizes(void)
{
	static const size_t sz[] = { 1, 8, 64, 4095, 16384, 16385, 65536, 300001, REGION };

	for (unsigned i = 0; i < sizeof(sz) / sizeof(sz[0]); i++) {
		size_t n = sz[i], off = n < REGION ? 3 : 0;
		void *ctx = NULL;
		uint64_t fl = 0;
		int ret;

		memset(region, 0, REGION);
		fill(local, n, i);
		ret = fi_write(a.ep, local, n, NULL, a2b, off, key, &a);
		CHECK(ret == 0, "fi_write %zu: %d", n, ret);
		ret = wait_tx(&ctx, &fl);
		CHECK(ret == 0 && ctx == &a && fl == (FI_RMA | FI_WRITE),
		      "write %zu completes: %d ctx %p flags %#lx", n, ret, ctx, (unsigned long) fl);
		CHECK(!memcmp(region + off, local, n), "write %zu: the region holds the bytes", n);
		CHECK(off == 0 || region[off - 1] == 0, "write %zu: the byte before is untouched", n);
		CHECK(off + n >= REGION || region[off + n] == 0, "write %zu: the byte after is untouched", n);

		fill(region + off, n, i + 100);
		memset(back, 0, n);
		ret = fi_read(a.ep, back, n, NULL, a2b, off, key, &b);
		CHECK(ret == 0, "fi_read %zu: %d", n, ret);
		ret = wait_tx(&ctx, &fl);
		CHECK(ret == 0 && ctx == &b && fl == (FI_RMA | FI_READ),
		      "read %zu completes: %d ctx %p flags %#lx", n, ret, ctx, (unsigned long) fl);
		CHECK(!memcmp(region + off, back, n), "read %zu: the bytes arrived", n);
	}
}

static void writedata_inject(void)
{
	struct fi_cq_tagged_entry e;
	uint8_t v[32];
	double t0;
	ssize_t n = 0;
	int ret;

	fill(local, 100, 9);
	ret = fi_writedata(a.ep, local, 100, NULL, 0xabcdef, a2b, 1000, key, &a);
	CHECK(ret == 0, "fi_writedata: %d", ret);
	CHECK(wait_tx(NULL, NULL) == 0, "writedata completes");
	for (t0 = ct_now(); ct_now() - t0 < 5;) {
		if ((n = fi_cq_read(b.cq, &e, 1)) != -FI_EAGAIN)
			break;
	}
	CHECK(n == 1 && e.flags == (FI_REMOTE_WRITE | FI_RMA | FI_REMOTE_CQ_DATA) && e.data == 0xabcdef &&
	      e.len == 100 && e.op_context == NULL,
	      "the target's CQ has the remote CQ data entry: %zd flags %#lx data %#lx len %zu", n,
	      (unsigned long) e.flags, (unsigned long) e.data, e.len);
	CHECK(!memcmp(region + 1000, local, 100), "writedata: the bytes");

	/* An inject write has no completion; a read behind it sees it. */
	fill(v, sizeof(v), 3);
	ret = fi_inject_write(a.ep, v, sizeof(v), a2b, 5000, key);
	CHECK(ret == 0, "fi_inject_write: %d", ret);
	memset(v, 0, sizeof(v));	/* the buffer is free at once */
	ret = fi_read(a.ep, back, sizeof(v), NULL, a2b, 5000, key, NULL);
	CHECK(ret == 0 && wait_tx(NULL, NULL) == 0, "read after inject_write");
	fill(v, sizeof(v), 3);
	CHECK(!memcmp(back, v, sizeof(v)), "inject_write landed before the read");
	CHECK(fi_cq_read(a.cq, &e, 1) == -FI_EAGAIN, "no completion for the inject");
	ret = fi_inject_write(a.ep, local, 100000, a2b, 0, key);
	CHECK(ret == -FI_EMSGSIZE, "inject_write over inject_size: %d", ret);
}

static void vectors(void)
{
	struct iovec iov[3] = { { local, 10 }, { local + 100, 20000 }, { local + 30000, 5 } };
	struct iovec riov[3] = { { back, 7 }, { back + 50, 20003 }, { back + 30000, 15 } };
	struct fi_rma_iov r = { .addr = 64, .len = 20025, .key = key };
	struct fi_rma_iov r2[2] = { r, r };
	struct fi_msg_rma m = { .msg_iov = iov, .iov_count = 3, .addr = a2b, .rma_iov = &r,
				.rma_iov_count = 1, .context = &a };
	uint8_t want[20025];
	int ret;

	fill(local, 40000, 5);
	memcpy(want, local, 10);
	memcpy(want + 10, local + 100, 20000);
	memcpy(want + 20010, local + 30000, 5);
	memset(region, 0, REGION);
	ret = fi_writev(a.ep, iov, NULL, 3, a2b, 64, key, NULL);
	CHECK(ret == 0 && wait_tx(NULL, NULL) == 0, "writev: %d", ret);
	CHECK(!memcmp(region + 64, want, 20015), "writev gathers");
	memset(back, 0, 40000);
	ret = fi_readv(a.ep, riov, NULL, 3, a2b, 64, key, NULL);
	CHECK(ret == 0 && wait_tx(NULL, NULL) == 0, "readv: %d", ret);
	CHECK(!memcmp(back, region + 64, 7) && !memcmp(back + 50, region + 71, 20003) &&
	      !memcmp(back + 30000, region + 20074, 15), "readv scatters");

	memset(region, 0, REGION);
	ret = fi_writemsg(a.ep, &m, FI_COMPLETION);
	CHECK(ret == 0 && wait_tx(NULL, NULL) == 0, "writemsg: %d", ret);
	CHECK(!memcmp(region + 64, want, 20015), "writemsg gathers");
	m.msg_iov = riov;
	ret = fi_readmsg(a.ep, &m, FI_COMPLETION);
	CHECK(ret == 0 && wait_tx(NULL, NULL) == 0, "readmsg: %d", ret);
	CHECK(!memcmp(back, region + 64, 7), "readmsg scatters");
	m.rma_iov = r2;
	m.rma_iov_count = 2;
	CHECK(fi_writemsg(a.ep, &m, 0) == -FI_EINVAL, "writemsg with 2 remote segments: EINVAL");
	m.rma_iov = NULL;
	m.rma_iov_count = 1;
	CHECK(fi_readmsg(a.ep, &m, 0) == -FI_EINVAL, "readmsg without rma_iov: EINVAL");
	CHECK(fi_writemsg(a.ep, NULL, 0) == -FI_EINVAL, "writemsg(NULL): EINVAL");
	CHECK(fi_write(a.ep, NULL, 10, NULL, a2b, 0, key, NULL) == -FI_EINVAL, "write from NULL: EINVAL");
}

static void errors(void)
{
	int ret;

	memset(region, 0x5a, REGION);
	fill(local, 64, 1);
	ret = fi_write(a.ep, local, 64, NULL, a2b, 0, key + 1000, NULL);
	CHECK(ret == 0 && (ret = wait_tx(NULL, NULL)) == FI_EACCES, "write with a bad key fails EACCES (as any refused access): %d", ret);
	ret = fi_write(a.ep, local, 64, NULL, a2b, REGION - 32, key, NULL);
	CHECK(ret == 0 && (ret = wait_tx(NULL, NULL)) == FI_EACCES, "write past the region fails EACCES: %d", ret);
	ret = fi_write(a.ep, local, 20000, NULL, a2b, REGION - 32, key, NULL);
	CHECK(ret == 0 && (ret = wait_tx(NULL, NULL)) == FI_EACCES, "long write past the region fails EACCES: %d", ret);
	ret = fi_write(a.ep, local, 8, NULL, a2b, 0, key_ro, NULL);
	CHECK(ret == 0 && (ret = wait_tx(NULL, NULL)) == FI_EACCES, "write to a read-only region fails EACCES: %d", ret);
	ret = fi_read(a.ep, back, 64, NULL, a2b, 0, key + 1000, NULL);
	CHECK(ret == 0 && (ret = wait_tx(NULL, NULL)) == FI_EACCES, "read with a bad key fails EACCES: %d", ret);
	ret = fi_read(a.ep, back, 64, NULL, a2b, 0, key_ro, NULL);
	CHECK(ret == 0 && (ret = wait_tx(NULL, NULL)) == 0, "read of a read-only region works: %d", ret);
	for (size_t i = 0; i < REGION; i++)
		if (region[i] != 0x5a) {
			CHECK(0, "a failed write changed byte %zu", i);
			break;
		}
}

static void counters(void)
{
	uint64_t r0 = fi_cntr_read(c_read), w0 = fi_cntr_read(c_write), rem0 = fi_cntr_read(c_remote);
	uint64_t re0 = fi_cntr_readerr(c_read);

	for (int i = 0; i < 5; i++) {
		CHECK(fi_write(a.ep, local, 100, NULL, a2b, 0, key, NULL) == 0, "write");
		CHECK(wait_tx(NULL, NULL) == 0, "write done");
	}
	for (int i = 0; i < 3; i++) {
		CHECK(fi_read(a.ep, back, 100, NULL, a2b, 0, key, NULL) == 0, "read");
		CHECK(wait_tx(NULL, NULL) == 0, "read done");
	}
	CHECK(fi_read(a.ep, back, 100, NULL, a2b, 0, key + 77, NULL) == 0, "bad read");
	CHECK(wait_tx(NULL, NULL) == FI_EACCES, "bad read fails");
	CHECK(fi_cntr_read(c_write) - w0 == 5, "write counter: %lu", (unsigned long) (fi_cntr_read(c_write) - w0));
	CHECK(fi_cntr_read(c_read) - r0 == 3, "read counter: %lu", (unsigned long) (fi_cntr_read(c_read) - r0));
	CHECK(fi_cntr_readerr(c_read) - re0 == 1, "read error counter");
	CHECK(fi_cntr_read(c_remote) - rem0 == 5, "remote write counter at the target: %lu",
	      (unsigned long) (fi_cntr_read(c_remote) - rem0));
}

/* A write triggered on the write counter waits until a plain write
 * completes, then runs; a context that is not a threshold trigger on one
 * of our counters is refused. */
static void triggered(void)
{
	struct fi_triggered_context tc = { .event_type = FI_TRIGGER_THRESHOLD };
	struct iovec iov = { local + 1000, 64 };
	struct fi_rma_iov r = { .addr = 2000, .len = 64, .key = key };
	struct fi_msg_rma m = { .msg_iov = &iov, .iov_count = 1, .addr = a2b, .rma_iov = &r,
				.rma_iov_count = 1, .context = &tc };
	uint64_t w0 = fi_cntr_read(c_write);
	void *ctx = NULL;
	int ret;

	memset(region, 0, 4096);
	fill(local, 2000, 4);
	tc.trigger.threshold.cntr = c_write;
	tc.trigger.threshold.threshold = w0 + 1;
	ret = fi_writemsg(a.ep, &m, FI_TRIGGER | FI_COMPLETION);
	CHECK(ret == 0, "triggered writemsg: %d", ret);
	for (int i = 0; i < 100; i++) {
		struct fi_cq_tagged_entry e;

		fi_cq_read(a.cq, &e, 0);
		fi_cq_read(b.cq, &e, 0);
	}
	CHECK(region[2000] == 0, "the triggered write waits for its threshold");
	ret = fi_write(a.ep, local, 100, NULL, a2b, 0, key, &a);
	CHECK(ret == 0 && wait_tx(&ctx, NULL) == 0 && ctx == &a, "the plain write: %d", ret);
	ret = wait_tx(&ctx, NULL);
	CHECK(ret == 0 && ctx == &tc, "the triggered write completes with its context: %d %p", ret, ctx);
	CHECK(!memcmp(region + 2000, local + 1000, 64), "the triggered write landed");
	CHECK(fi_cntr_read(c_write) == w0 + 2, "both writes counted");

	/* One that never fires: the endpoint's close drops it (main). */
	{
		static struct fi_triggered_context never = { .event_type = FI_TRIGGER_THRESHOLD };

		never.trigger.threshold.cntr = c_write;
		never.trigger.threshold.threshold = w0 + 1000000;
		m.context = &never;
		CHECK(fi_writemsg(a.ep, &m, FI_TRIGGER) == 0, "a trigger left waiting");
		m.context = &tc;
	}
	tc.event_type = FI_TRIGGER_XPU;
	CHECK(fi_writemsg(a.ep, &m, FI_TRIGGER) == -FI_EINVAL, "an XPU trigger: EINVAL");
	tc.event_type = FI_TRIGGER_THRESHOLD;
	tc.trigger.threshold.cntr = (struct fid_cntr *) &a;	/* not a counter */
	CHECK(fi_writemsg(a.ep, &m, FI_TRIGGER) == -FI_EINVAL, "a bogus counter: EINVAL");
}

static void self(void)
{
	struct fid_mr *smr;
	uint8_t *mine = calloc(1, 4096);
	int ret;

	ret = fi_mr_reg(a.domain, mine, 4096, FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 77, 0, &smr, NULL);
	CHECK(ret == 0, "fi_mr_reg on a: %d", ret);
	if (ret)
		return;
	fill(local, 500, 8);
	ret = fi_write(a.ep, local, 500, NULL, a2a, 10, fi_mr_key(smr), NULL);
	CHECK(ret == 0 && wait_tx(NULL, NULL) == 0, "write to oneself: %d", ret);
	CHECK(!memcmp(mine + 10, local, 500), "write to oneself lands");
	ret = fi_read(a.ep, back, 500, NULL, a2a, 10, fi_mr_key(smr), NULL);
	CHECK(ret == 0 && wait_tx(NULL, NULL) == 0 && !memcmp(back, local, 500), "read from oneself");
	fi_close(&smr->fid);
	free(mine);
}

static void latency(void)
{
	int iters = ct_under_valgrind() ? 20 : 2000;
	double t0 = ct_now();

	for (int i = 0; i < iters; i++) {
		fi_read(a.ep, back, 8, NULL, a2b, 0, key, NULL);
		wait_tx(NULL, NULL);
	}
	printf("# 8-byte read: %.2f us\n", (ct_now() - t0) / iters * 1e6);
	t0 = ct_now();
	for (int i = 0; i < iters; i++) {
		fi_write(a.ep, local, 8, NULL, a2b, 0, key, NULL);
		wait_tx(NULL, NULL);
	}
	printf("# 8-byte write: %.2f us\n", (ct_now() - t0) / iters * 1e6);
}

/* bind_cntrs opens node n's counters and binds them: a counts its reads
 * and writes, b the writes done into it. */
static int bind_cntrs(struct ct_node *n, void *arg)
{
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	int ret;

	(void) arg;
	if (n == &b)
		return (ret = fi_cntr_open(n->domain, &ca, &c_remote, NULL)) ? ret :
			fi_ep_bind(n->ep, &c_remote->fid, FI_REMOTE_WRITE);
	if ((ret = fi_cntr_open(n->domain, &ca, &c_read, NULL)) ||
	    (ret = fi_cntr_open(n->domain, &ca, &c_write, NULL)) ||
	    (ret = fi_ep_bind(n->ep, &c_read->fid, FI_READ)))
		return ret;
	return fi_ep_bind(n->ep, &c_write->fid, FI_WRITE);
}

int main(void)
{
	int ret;

	region = calloc(1, REGION);
	local = calloc(1, REGION);
	back = calloc(1, REGION);
	if ((ret = ct_open_node_hook(&a, FI_TAGGED | FI_RMA | FI_RMA_EVENT, bind_cntrs, NULL)) ||
	    (ret = ct_open_node_hook(&b, FI_TAGGED | FI_RMA | FI_RMA_EVENT, bind_cntrs, NULL))) {
		printf("FAIL opening the nodes: %d\n", ret);
		return 1;
	}
	CHECK(fi_av_insert(a.av, b.name, 1, &a2b, 0, NULL) == 1, "insert b");
	CHECK(fi_av_insert(a.av, a.name, 1, &a2a, 0, NULL) == 1, "insert a");
	ret = fi_mr_reg(b.domain, region, REGION, FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 5, 0, &mr, NULL);
	CHECK(ret == 0, "fi_mr_reg: %d", ret);
	ret = fi_mr_reg(b.domain, region, 4096, FI_REMOTE_READ, 0, 6, 0, &mr_ro, NULL);
	CHECK(ret == 0, "fi_mr_reg read-only: %d", ret);
	if (ret)
		return finish("rma");
	key = fi_mr_key(mr);
	key_ro = fi_mr_key(mr_ro);

	sizes();
	writedata_inject();
	vectors();
	errors();
	counters();
	triggered();
	self();
	latency();

	CHECK(fi_close(&mr->fid) == 0 && fi_close(&mr_ro->fid) == 0, "close the regions");
	/* The counters go after the endpoints bound to them, before their
	 * domains. */
	CHECK(fi_close(&a.ep->fid) == 0 && fi_close(&b.ep->fid) == 0, "close the endpoints");
	a.ep = b.ep = NULL;
	CHECK(fi_close(&c_read->fid) == 0 && fi_close(&c_write->fid) == 0 && fi_close(&c_remote->fid) == 0,
	      "close the counters");
	ct_close_node(&a);
	ct_close_node(&b);
	free(region);
	free(local);
	free(back);
	return finish("rma");
}
