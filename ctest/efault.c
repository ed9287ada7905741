/* efault.c: a user buffer the kernel refuses fails the operation on both
 * sides, promptly, and the endpoints keep working (issue 8, finding 9).
 *
 * A send buffer that cannot be read, or a receive buffer that cannot be
 * written (here: PROT_NONE pages), used for a message that goes by
 * rendezvous:
 *   - the side whose buffer it is gets an error completion FI_EFAULT,
 *   - the other side gets FI_EIO,
 *   - both within seconds (every wait here is bounded), never a hang,
 *   - and the next message between the same endpoints arrives intact.
 * The transfers are tried
 *   - with a peer process forked before any fi_* call: process_vm_readv
 *     by the receiver (1 MiB is split with the sender's
 *     process_vm_writev);
 *   - between two endpoints of this process: the receiver copies from
 *     the sender's buffer itself;
 *   - the same with FI_SHM_DISABLE_CMA=1: through bounce buffers.
 * In-process, eager messages (through a bounce buffer) and inline ones (in
 * ring cells; one of several cells, one of a single cell) are tried too: a send buffer that cannot be read fails the
 * send alone, one that cannot be written fails the receive alone (the send
 * was complete). Both sizes are ones the C fast path copies itself.
 * And a streamed eager message (the C sender pushes its cell, then fills
 * the bounce buffer while the receiver copies out: fast/send.c, STREAM_MIN)
 * whose send buffer faults after its first 8 KiB, before and after the
 * receive is posted: the send fails with FI_EFAULT, the receiver drops
 * the part it had, and the next message with the tag arrives intact. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_tagged.h>
#include "check.h"
#include "node.h"

#define BIG (1 << 20)		/* split between two processes */
#define MID (256 << 10)		/* one process_vm_readv */
#define POOL (2 << 20)		/* an endpoint's bounce buffers */
#define EAGER 8192		/* through a bounce buffer */
#define INLINE 100		/* in ring cells (the C fast path's, ucopy.c) */
#define ONECELL 16		/* in one ring cell: C copies it straight between cell and buffer */
#define STREAM 32768		/* a bounce buffer the receiver copies out as the sender fills it */

enum bad { NONE, SENDER, RECEIVER };
static const char *bad_name[] = { "no bad buffer", "bad send buffer", "bad receive buffer" };

/* The longest any completion may take. */
static double limit(void)
{
	return ct_under_valgrind() ? 60 : 10;
}

static fi_addr_t insert(struct ct_node *n, const void *name)
{
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	int ret = fi_av_insert(n->av, name, 1, &a, 0, NULL);

	CHECK(ret == 1, "fi_av_insert = %d", ret);
	return a;
}

/* A completion as this test sees it: 0 for a success, the error's code
 * (FI_EFAULT, ...) for an error entry. */
struct done {
	void *ctx;
	int err;
	size_t len;
};

/* poll_one takes at most one entry from n's CQ: 1 and *d if one came. */
static int poll_one(struct ct_node *n, struct done *d)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	ssize_t r = fi_cq_read(n->cq, &e, 1);

	if (r == 1) {
		*d = (struct done) { e.op_context, 0, e.len };
		return 1;
	}
	if (r == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		if (fi_cq_readerr(n->cq, &err, 0) == 1) {
			*d = (struct done) { err.op_context, err.err, err.len };
			return 1;
		}
	}
	return 0;
}

/* wait_for polls n until the completion of ctx comes; 0 if none came
 * within limit() seconds. Any other completion is a failure. */
static int wait_for(struct ct_node *n, void *ctx, struct done *d)
{
	double end = ct_now() + limit();

	while (ct_now() < end) {
		if (poll_one(n, d)) {
			CHECK(d->ctx == ctx, "a completion of another operation (%d)", d->err);
			return 1;
		}
	}
	return 0;
}

static void fill(unsigned char *b, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (unsigned char) (seed * 31 + i * 7 + (i >> 12) + 1);
}

static int same(const unsigned char *b, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != (unsigned char) (seed * 31 + i * 7 + (i >> 12) + 1))
			return 0;
	return 1;
}

static unsigned char *none;	/* BIG bytes of PROT_NONE */
static int copy_mode;		/* in_process(1) runs */
static unsigned char *sbuf, *rbuf;	/* BIG good bytes each */

/* The errors each side expects: its own buffer bad is FI_EFAULT, the
 * other's is FI_EIO. */
static int want_send(enum bad bad)
{
	return bad == SENDER ? FI_EFAULT : bad == RECEIVER ? FI_EIO : 0;
}

static int want_recv(enum bad bad)
{
	return bad == RECEIVER ? FI_EFAULT : bad == SENDER ? FI_EIO : 0;
}

/* send_side sends len bytes to dest (from none if bad == SENDER) and
 * checks the send's completion. */
static void send_side(struct ct_node *n, fi_addr_t dest, size_t len, enum bad bad, uint64_t tag,
		      const char *what)
{
	struct fi_context ctx;
	struct done d;
	unsigned char *buf = bad == SENDER ? none : sbuf;
	double t0 = ct_now();
	ssize_t r;

	if (bad != SENDER)
		fill(sbuf, len, tag);
	while ((r = fi_tsend(n->ep, buf, len, NULL, dest, tag, &ctx)) == -FI_EAGAIN &&
	       ct_now() < t0 + limit())
		;
	CHECK(r == 0, "%s: %zu bytes, %s: fi_tsend = %zd", what, len, bad_name[bad], r);
	if (r)
		return;
	if (!wait_for(n, &ctx, &d)) {
		CHECK(0, "%s: %zu bytes, %s: no send completion in %.0f s", what, len, bad_name[bad],
		      limit());
		return;
	}
	CHECK(d.err == want_send(bad), "%s: %zu bytes, %s: send completed with %d (%s), want %d",
	      what, len, bad_name[bad], d.err, fi_strerror(d.err), want_send(bad));
}

/* recv_side posts a receive of len bytes (into none if bad == RECEIVER)
 * and checks its completion and, if all is well, the data. */
static void recv_side(struct ct_node *n, size_t len, enum bad bad, uint64_t tag, const char *what)
{
	struct fi_context ctx;
	struct done d;
	unsigned char *buf = bad == RECEIVER ? none : rbuf;
	ssize_t r;

	if (bad != RECEIVER)
		memset(rbuf, 0, len);
	r = fi_trecv(n->ep, buf, len, NULL, FI_ADDR_UNSPEC, tag, 0, &ctx);
	CHECK(r == 0, "%s: fi_trecv = %zd", what, r);
	if (r)
		return;
	if (!wait_for(n, &ctx, &d)) {
		CHECK(0, "%s: %zu bytes, %s: no receive completion in %.0f s", what, len,
		      bad_name[bad], limit());
		return;
	}
	CHECK(d.err == want_recv(bad), "%s: %zu bytes, %s: receive completed with %d (%s), want %d",
	      what, len, bad_name[bad], d.err, fi_strerror(d.err), want_recv(bad));
	if (bad == NONE)
		CHECK(d.len == len && same(rbuf, len, tag), "%s: %zu bytes arrived damaged (len %zu)",
		      what, len, d.len);
}

/* both waits for the completion of sctx on a (error wantS) and of rctx
 * on b (error wantR, and with no error the len bytes of tag in rbuf);
 * a NULL context is not waited for. */
static void both(struct ct_node *a, struct ct_node *b, void *sctx, int wantS, void *rctx, int wantR,
		 size_t len, uint64_t tag, const char *what)
{
	double end = ct_now() + limit();
	struct done d;

	while ((sctx || rctx) && ct_now() < end) {
		if (sctx && poll_one(a, &d)) {
			CHECK(d.ctx == sctx && d.err == wantS, "%s: send completed with %d (%s), want %d",
			      what, d.err, fi_strerror(d.err), wantS);
			sctx = NULL;
		}
		if (rctx && poll_one(b, &d)) {
			CHECK(d.ctx == rctx && d.err == wantR,
			      "%s: receive completed with %d (%s), want %d", what, d.err,
			      fi_strerror(d.err), wantR);
			if (wantR == 0)
				CHECK(d.len == len && same(rbuf, len, tag),
				      "%s: arrived damaged (len %zu)", what, d.len);
			rctx = NULL;
		}
	}
	CHECK(!sctx && !rctx, "%s: no %s completion in %.0f s", what, sctx ? "send" : "receive",
	      limit());
}

/* One message from a to b, both in this process: the receive is posted
 * first, or (odd tags) the message arrives unexpected. */
static void local_exchange(struct ct_node *a, struct ct_node *b, fi_addr_t ab, size_t len,
			   enum bad bad, uint64_t tag)
{
	struct fi_context sctx, rctx;
	unsigned char *s = bad == SENDER ? none : sbuf, *rb = bad == RECEIVER ? none : rbuf;
	int eager = len <= EAGER;
	double end = ct_now() + limit();
	char what[80];
	ssize_t r;

	snprintf(what, sizeof(what), "in-process%s, %zu bytes, %s", copy_mode ? " (copy protocol)" : "",
		 len, bad_name[bad]);
	if (bad != SENDER)
		fill(sbuf, len, tag);
	memset(rbuf, 0, len);
	if (!(tag & 1))
		CHECK(fi_trecv(b->ep, rb, len, NULL, FI_ADDR_UNSPEC, tag, 0, &rctx) == 0, "trecv");
	while ((r = fi_tsend(a->ep, s, len, NULL, ab, tag, &sctx)) == -FI_EAGAIN && ct_now() < end)
		fi_cq_read(b->cq, NULL, 0);
	CHECK(r == 0, "%s: fi_tsend = %zd", what, r);
	if (tag & 1)
		CHECK(fi_trecv(b->ep, rb, len, NULL, FI_ADDR_UNSPEC, tag, 0, &rctx) == 0, "trecv");
	if (!eager) {
		int ws = want_send(bad);

		/* The copy protocol completes a send once all its data is in
		 * bounce buffers; they hold POOL bytes (32 of the 64 KiB eager
		 * threshold), so a send of up to that is complete before the
		 * receiver copies anything. */
		if (copy_mode && bad == RECEIVER && len <= POOL)
			ws = 0;
		both(a, b, &sctx, ws, &rctx, want_recv(bad), len, tag, what);
		return;
	}
	/* Eager: the send is done once the data is in a bounce buffer. */
	if (bad != SENDER) {
		both(a, b, &sctx, 0, &rctx, want_recv(bad), len, tag, what);
		return;
	}
	/* A send buffer that cannot be read: nothing leaves, and the
	 * receive takes the next message with the tag. */
	both(a, b, &sctx, FI_EFAULT, NULL, 0, len, tag, what);
	fill(sbuf, len, tag);
	while ((r = fi_tsend(a->ep, sbuf, len, NULL, ab, tag, &sctx)) == -FI_EAGAIN && ct_now() < end)
		fi_cq_read(b->cq, NULL, 0);
	CHECK(r == 0, "%s: fi_tsend = %zd", what, r);
	both(a, b, &sctx, 0, &rctx, 0, len, tag, "the good eager message after a bad one");
}

/* stream_break sends STREAM bytes from a buffer whose pages past the
 * first 8 KiB are PROT_NONE, then the same message from a good buffer
 * (see the top). */
static void stream_break(struct ct_node *a, struct ct_node *b, fi_addr_t ab, uint64_t tag)
{
	struct fi_context sctx, rctx;
	double end = ct_now() + limit();
	unsigned char *m = mmap(NULL, 2 * STREAM, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char what[80];
	ssize_t r;

	CHECK(m != MAP_FAILED && mprotect(m + STREAM, STREAM, PROT_NONE) == 0, "map a half-bad buffer");
	if (m == MAP_FAILED)
		return;
	snprintf(what, sizeof(what), "a stream whose buffer faults (receive %s)", tag & 1 ? "after" : "first");
	memset(rbuf, 0, STREAM);
	if (!(tag & 1))
		CHECK(fi_trecv(b->ep, rbuf, STREAM, NULL, FI_ADDR_UNSPEC, tag, 0, &rctx) == 0, "trecv");
	while ((r = fi_tsend(a->ep, m + STREAM - 8192, STREAM, NULL, ab, tag, &sctx)) == -FI_EAGAIN &&
	       ct_now() < end)
		fi_cq_read(b->cq, NULL, 0);
	CHECK(r == 0 || r == -FI_EFAULT, "%s: fi_tsend = %zd", what, r);
	if (r == 0)
		both(a, b, &sctx, FI_EFAULT, NULL, 0, STREAM, tag, what);
	/* Nothing of it may arrive: let the receiver see what there is. */
	for (int i = 0; i < 100; i++) {
		struct done d;

		CHECK(!poll_one(b, &d), "%s: the receiver got a completion (error %d)", what, d.err);
	}
	fill(sbuf, STREAM, tag);
	while ((r = fi_tsend(a->ep, sbuf, STREAM, NULL, ab, tag, &sctx)) == -FI_EAGAIN && ct_now() < end)
		fi_cq_read(b->cq, NULL, 0);
	CHECK(r == 0, "%s: the good one: fi_tsend = %zd", what, r);
	if (tag & 1)
		CHECK(fi_trecv(b->ep, rbuf, STREAM, NULL, FI_ADDR_UNSPEC, tag, 0, &rctx) == 0, "trecv");
	both(a, b, &sctx, 0, &rctx, 0, STREAM, tag, "the good stream after a broken one");
	munmap(m, 2 * STREAM);
}

/* in_process: the exchanges between two endpoints of this process; with
 * copy set, through the bounce-buffer copy protocol (FI_SHM_DISABLE_CMA,
 * read when an endpoint opens). */
static void in_process(int copy)
{
	struct ct_node a, b;
	fi_addr_t ab;
	uint64_t tag = 100;
	int ret;

	copy_mode = copy;
	if (copy)
		setenv("FI_SHM_DISABLE_CMA", "1", 1);
	ret = ct_open_node(&a) || ct_open_node(&b);
	unsetenv("FI_SHM_DISABLE_CMA");
	CHECK(ret == 0, "open: %d", ret);
	if (ret)
		return;
	ab = insert(&a, b.name);
	insert(&b, a.name);
	for (int k = 0; k < 5; k++) {
		size_t len = k == 0 ? BIG : k == 1 ? MID : k == 2 ? EAGER : k == 3 ? INLINE : ONECELL;

		for (int bad = SENDER; bad <= RECEIVER; bad++) {
			local_exchange(&a, &b, ab, len, bad, tag++);
			local_exchange(&a, &b, ab, len, NONE, tag++);
			local_exchange(&a, &b, ab, len, bad, tag++);
			local_exchange(&a, &b, ab, len, NONE, tag++);
		}
	}
	if (!copy) {
		stream_break(&a, &b, ab, tag++);
		stream_break(&a, &b, ab, tag++);
	}
	ct_close_node(&b);
	ct_close_node(&a);
}

/* The steps of the two-process test: the child sends, the parent
 * receives. */
static const struct step {
	size_t len;
	enum bad bad;
} steps[] = {
	{ BIG, SENDER }, { BIG, NONE }, { BIG, RECEIVER }, { BIG, NONE },
	{ MID, SENDER }, { MID, NONE }, { MID, RECEIVER }, { MID, NONE },
};
#define NSTEPS (sizeof(steps) / sizeof(steps[0]))

/* put_name and get_name pass an endpoint name through a pipe: its
 * length, then exactly that many bytes (a longer read would eat the next
 * step's go-ahead). */
static int put_name(int fd, const struct ct_node *n)
{
	return write(fd, &n->namelen, sizeof(n->namelen)) != sizeof(n->namelen) ||
	       write(fd, n->name, n->namelen) != (ssize_t) n->namelen;
}

static int get_name(int fd, char name[64])
{
	size_t len = 0;

	return read(fd, &len, sizeof(len)) != sizeof(len) || len > 64 ||
	       read(fd, name, len) != (ssize_t) len;
}

/* The child: the sending side. Its checks print their failures; its exit
 * status says whether any failed. */
static int child(int rfd, int wfd)
{
	struct ct_node n;
	char peer[64];
	fi_addr_t dest;
	char go;

	alarm(ct_under_valgrind() ? 600 : 120);
	if (ct_open_node(&n))
		return 2;
	if (put_name(wfd, &n) || get_name(rfd, peer))
		return 3;
	dest = insert(&n, peer);
	for (size_t i = 0; i < NSTEPS; i++) {
		/* The parent's go-ahead for step i: it posts its receive
		 * right after, so the message may arrive before or after. */
		if (read(rfd, &go, 1) != 1)
			return 4;
		send_side(&n, dest, steps[i].len, steps[i].bad, 200 + i, "child");
	}
	if (read(rfd, &go, 1) != 1)	/* the parent is done with us */
		return 5;
	ct_close_node(&n);
	return ct_failed ? 1 : 0;
}

static void two_processes(pid_t pid, int rfd, int wfd)
{
	struct ct_node n;
	char peer[64];
	int st, ret;

	ret = ct_open_node(&n);
	CHECK(ret == 0, "open: %d", ret);
	if (ret) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return;
	}
	CHECK(get_name(rfd, peer) == 0, "the child's name");
	CHECK(put_name(wfd, &n) == 0, "send our name");
	insert(&n, peer);
	for (size_t i = 0; i < NSTEPS; i++) {
		CHECK(write(wfd, "g", 1) == 1, "go");
		recv_side(&n, steps[i].len, steps[i].bad, 200 + i, "parent");
	}
	CHECK(write(wfd, "q", 1) == 1, "quit");
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child failed: %s %d",
	      WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	ct_close_node(&n);
}

int main(void)
{
	int down[2], up[2];
	pid_t pid;

	setvbuf(stdout, NULL, _IONBF, 0);
	none = mmap(NULL, BIG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	sbuf = malloc(BIG);
	rbuf = malloc(BIG);
	if (none == MAP_FAILED || !sbuf || !rbuf || pipe(down) || pipe(up))
		return 2;

	/* The peer process is forked before anything uses the library. */
	pid = fork();
	if (pid == 0) {
		close(down[1]);
		close(up[0]);
		int r = child(down[0], up[1]);

		free(sbuf);
		free(rbuf);
		_exit(r);
	}
	close(down[0]);
	close(up[1]);
	alarm(ct_under_valgrind() ? 900 : 180);
	two_processes(pid, up[0], down[1]);
	in_process(0);
	in_process(1);
	munmap(none, BIG);
	free(sbuf);
	free(rbuf);
	return finish("efault");
}
