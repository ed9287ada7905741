/* xfer: many messages of every size between two processes, each checked
 * byte for byte, delivered exactly once. Built for the wire under loss,
 * reordering and duplication (scripts/multihost.sh runs it across namespace
 * hosts), and for a peer that dies in the middle.
 *
 *   xfer recv NAMEFILE [options]   write our endpoint name to NAMEFILE, receive
 *   xfer send NAMEFILE [options]   read the receiver's name from NAMEFILE, send
 *   xfer                           both, in two processes on this host: once
 *                                  over the default wires (shm), once with
 *                                  PSM2_DEVICES=self,hfi (UDP on loopback)
 *
 * Options:
 *   -n N     messages (default 10000)
 *   -s SEED  the plan's seed (default 1); both sides must agree
 *   -w W     operations in flight per side (default 32)
 *   -l PCT   per mille of messages above the eager threshold (default 30)
 *   -k       survivor: the peer will be killed. Exit 0 when every operation
 *            posted has completed, with an error or not, and at least one
 *            failed (a receiver cancels what is left once nothing has
 *            arrived for the connection timeout, and checks each cancel).
 *            An inject that the provider had queued and that fails later
 *            is reported by an error entry without a context: it counts
 *            as a failure, like any other.
 *   -p FILE  write a line to FILE after the first 10% of the messages
 *            (the killing script waits for it)
 *
 * The plan (message i: its kind, size and tag) comes from SEED and i alone:
 * sizes 1 B..64 KiB log-uniform, and some 64 KiB..4 MiB (every 500th is
 * exactly 4 MiB, others sit on the eager boundaries: psm2's 64000 bytes,
 * and our default across hosts, 256 KiB); kinds tagged
 * (tag i), untagged, inject (tagged or untagged, up to inject_size). Byte j
 * of message i is a function of (i, j), so a message given to the wrong
 * receive, truncated or corrupted fails the check. After the last message
 * the receiver posts one more tagged and one more untagged receive and
 * waits: a duplicate would complete one of them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include "node.h"

#define MAXSIZE (4u << 20)
#define MAXW 256

enum kind { K_TAGGED, K_MSG, K_TINJECT, K_INJECT };

struct plan {
	enum kind kind;
	size_t size;
	uint64_t tag;
};

struct op {
	struct fi_context ctx;	/* first: the completion's op_context */
	long i;			/* message index, -1 when free */
	int extra;		/* one of the receiver's final probes */
	char *buf;
};

static long nmsg = 10000;
static uint64_t seed = 1;
static int window = 32;
static int large_pm = 30;
static int survivor;
static const char *progress_file;
static size_t inject_size;

static struct ct_node node;	/* what follows are its parts */
static struct fid_av *av;
static struct fid_cq *cq;
static struct fid_ep *ep;
static struct fi_info *info;

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void plan_of(long i, struct plan *p)
{
	uint64_t r = mix(seed * 0x100000001b3ull ^ (uint64_t)i);
	uint64_t r2 = mix(r);
	unsigned k;

	if (i % 500 == 499) {
		p->size = MAXSIZE;
	} else if ((long)(r % 1000) < large_pm) {
		switch ((r >> 10) % 8) {
		case 0: p->size = (r2 & 1) ? 262144 : 64000; break;
		case 1: p->size = (r2 & 1) ? 262145 : 64001; break;
		default:
			k = 16 + (r2 >> 8) % 7;		/* 64 KiB .. 4 MiB */
			p->size = ((size_t)1 << k) + (r2 >> 16) % ((size_t)1 << k);
			if (p->size > MAXSIZE)
				p->size = MAXSIZE;
		}
	} else {
		k = (r >> 10) % 17;			/* 1 B .. 64 KiB */
		p->size = 1 + (r2 >> 16) % ((size_t)1 << k);
	}
	switch ((r >> 20) % 4) {
	case 0: p->kind = K_TAGGED; break;
	case 1: p->kind = K_MSG; break;
	case 2: p->kind = p->size <= inject_size ? K_TINJECT : K_TAGGED; break;
	default: p->kind = p->size <= inject_size ? K_INJECT : K_MSG; break;
	}
	p->tag = (uint64_t)i;
}

static int tagged(enum kind k) { return k == K_TAGGED || k == K_TINJECT; }

static unsigned char byte_of(long i, size_t j)
{
	return (unsigned char)(i * 131 + (j >> 3) * 7 + j + seed);
}

static void fill(long i, char *b, size_t n)
{
	for (size_t j = 0; j < n; j++)
		b[j] = byte_of(i, j);
}

/* check returns the first wrong byte's offset, or -1. */
static long check(long i, const char *b, size_t n)
{
	for (size_t j = 0; j < n; j++)
		if ((unsigned char)b[j] != byte_of(i, j))
			return (long)j;
	return -1;
}

static void die(const char *what, int ret)
{
	fprintf(stderr, "xfer: %s: %d (%s)\n", what, ret, fi_strerror(-ret));
	exit(1);
}

static void open_ep(void)
{
	int ret = ct_open_node_caps(&node, FI_TAGGED | FI_MSG);

	if (ret)
		die("open", ret);
	info = node.info;
	av = node.av;
	cq = node.cq;
	ep = node.ep;
	inject_size = info->tx_attr->inject_size;
}

static void close_ep(void)
{
	ct_close_node(&node);
}

static struct op ops[MAXW];
static long inflight;
static long failed, cancelled, completed;

static struct op *free_op(void)
{
	for (int k = 0; k < window; k++)
		if (ops[k].i < 0 && !ops[k].extra)
			return &ops[k];
	return NULL;
}

static void release(struct op *o)
{
	free(o->buf);
	o->buf = NULL;
	o->i = -1;
	o->extra = 0;
	inflight--;
}

/* ---- receiver ---- */

static int recv_complete(struct op *o, const struct fi_cq_tagged_entry *e, long *got)
{
	struct plan p;
	long bad;

	if (o->extra) {
		fprintf(stderr, "xfer: a message arrived after the last one (len %zu tag %" PRIu64 "): a duplicate\n",
			e->len, e->tag);
		return -1;
	}
	plan_of(o->i, &p);
	if (e->len != p.size || (tagged(p.kind) && e->tag != p.tag)) {
		fprintf(stderr, "xfer: message %ld: len %zu tag %" PRIu64 ", want len %zu tag %" PRIu64 "\n",
			o->i, e->len, e->tag, p.size, p.tag);
		return -1;
	}
	if ((bad = check(o->i, o->buf, p.size)) >= 0) {
		fprintf(stderr, "xfer: message %ld (%zu B, kind %d): byte %ld wrong\n", o->i, p.size, p.kind, bad);
		return -1;
	}
	(*got)++;
	return 0;
}

static int post_recv(struct op *o, long i, const struct plan *p)
{
	int ret;

	o->i = i;
	o->buf = malloc(p->size ? p->size : 1);
	memset(o->buf, 0xee, p->size);
	inflight++;
	if (tagged(p->kind))
		ret = fi_trecv(ep, o->buf, p->size, NULL, FI_ADDR_UNSPEC, p->tag, 0, &o->ctx);
	else
		ret = fi_recv(ep, o->buf, p->size, NULL, FI_ADDR_UNSPEC, &o->ctx);
	if (ret)
		release(o);
	return ret;
}

static double last_arrival;
static long received;	/* receiver: messages received and verified */
static int is_receiver;

/* drain reads completions, the receiver checking each message; returns
 * -1 on a failed check or an unexpected error. */
static int drain(void)
{
	struct fi_cq_tagged_entry e[16];
	ssize_t n = fi_cq_read(cq, e, 16);

	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };
		if (fi_cq_readerr(cq, &err, 0) == 1) {
			struct op *o = err.op_context;
			if (o && err.err == FI_ECANCELED && (o->extra || survivor)) {
				cancelled += !o->extra;
				release(o);
				return 0;
			}
			fprintf(stderr, "xfer: %s %ld failed: %s\n", is_receiver ? "receive" : "send",
				o ? o->i : -2, fi_strerror(err.err));
			if (!survivor)
				return -1;
			failed++;
			if (!o)
				return 0; /* an inject (no context): its failure, reported */
			completed++;
			last_arrival = ct_now();
			release(o);
		}
		return 0;
	}
	if (n < 0 && n != -FI_EAGAIN) {
		fprintf(stderr, "xfer: fi_cq_read: %zd\n", n);
		return -1;
	}
	for (ssize_t k = 0; k < n; k++) {
		struct op *o = e[k].op_context;
		if (is_receiver && recv_complete(o, &e[k], &received))
			return -1;
		completed++;
		last_arrival = ct_now();
		release(o);
	}
	return 0;
}

static double conn_timeout(void)
{
	const char *s = getenv("FI_PSM2_CONN_TIMEOUT");
	return s ? atof(s) : 5;
}

static int receiver(const char *namefile)
{
	char name[64], tmp[4096];
	size_t namelen = sizeof(name);
	long next = 0;
	long progress_mark = nmsg / 10;
	double t0;
	int fd, ret;
	uint64_t bytes = 0;

	is_receiver = 1;
	open_ep();
	if ((ret = fi_getname(&ep->fid, name, &namelen)))
		die("fi_getname", ret);
	snprintf(tmp, sizeof(tmp), "%s.tmp", namefile);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, name, namelen) != (ssize_t)namelen || close(fd) || rename(tmp, namefile)) {
		perror("xfer: name file");
		return 1;
	}
	/* Receives are posted in plan order, W at a time: an untagged
	 * receive matches the next untagged message, a tagged one its tag. */
	t0 = last_arrival = ct_now();
	while (received < nmsg) {
		struct op *o;
		struct plan p;

		while (next < nmsg && (o = free_op())) {
			plan_of(next, &p);
			if ((ret = post_recv(o, next, &p)) == -FI_EAGAIN)
				break;
			if (ret)
				die("post receive", ret);
			bytes += p.size;
			next++;
		}
		if (drain())
			return 1;
		if (progress_file && received >= progress_mark) {
			FILE *f = fopen(progress_file, "w");
			if (f) {
				fprintf(f, "%ld\n", received);
				fclose(f);
			}
			progress_file = NULL;
		}
		if (survivor && ct_now() - last_arrival > conn_timeout() + 1)
			break;
		if (!survivor && ct_now() - last_arrival > 120) {
			fprintf(stderr, "xfer: nothing arrived for 120 s; %ld of %ld received\n", received, nmsg);
			return 1;
		}
	}
	if (survivor) {
		double t;

		/* The sender is gone: what is still posted must cancel. */
		for (int k = 0; k < window; k++)
			if (ops[k].i >= 0 && (ret = fi_cancel(&ep->fid, &ops[k].ctx)))
				die("fi_cancel", ret);
		t = ct_now();
		while (inflight > 0 && ct_now() - t < 5)
			if (drain())
				return 1;
		printf("xfer: survivor receiver: %ld of %ld received and verified, %ld failed, %ld cancelled, %ld hung\n",
		       received, nmsg, failed, cancelled, inflight);
		close_ep();
		return inflight == 0 && received < nmsg ? 0 : 1;
	}
	/* Exactly once: nothing more may arrive. */
	{
		struct op *x = &ops[0];
		struct op *y = &ops[1];
		double t;

		x->extra = y->extra = 1;
		x->buf = malloc(MAXSIZE);
		y->buf = malloc(MAXSIZE);
		inflight += 2;
		if ((ret = fi_trecv(ep, x->buf, MAXSIZE, NULL, FI_ADDR_UNSPEC, 0, ~0ull, &x->ctx)) ||
		    (ret = fi_recv(ep, y->buf, MAXSIZE, NULL, FI_ADDR_UNSPEC, &y->ctx)))
			die("post the final receives", ret);
		t = ct_now();
		while (ct_now() - t < 0.5)
			if (drain())
				return 1;
		fi_cancel(&ep->fid, &x->ctx);
		fi_cancel(&ep->fid, &y->ctx);
		t = ct_now();
		while (inflight > 0 && ct_now() - t < 5)
			if (drain())
				return 1;
		if (inflight) {
			fprintf(stderr, "xfer: the final receives did not cancel\n");
			return 1;
		}
	}
	printf("xfer: %ld messages, %" PRIu64 " bytes received and verified in %.2f s, no duplicate\n",
	       received, bytes, ct_now() - t0);
	close_ep();
	return 0;
}

/* ---- sender ---- */

static int sender(const char *namefile)
{
	char name[64];
	fi_addr_t peer;
	double t0;
	ssize_t namelen = 0;
	uint64_t bytes = 0;
	int ret;
	char *ibuf;

	open_ep();
	ibuf = malloc(inject_size + 1);
	for (t0 = ct_now(); ct_now() - t0 < 60; usleep(10000)) {
		int fd = open(namefile, O_RDONLY);
		if (fd >= 0) {
			namelen = read(fd, name, sizeof(name));
			close(fd);
			break;
		}
	}
	if (namelen <= 0) {
		fprintf(stderr, "xfer: no receiver name in %s\n", namefile);
		return 1;
	}
	if ((ret = fi_av_insert(av, name, 1, &peer, 0, NULL)) != 1)
		die("fi_av_insert", ret);
	t0 = ct_now();
	for (long i = 0; i < nmsg; i++) {
		struct plan p;
		struct op *o;

		plan_of(i, &p);
		if (survivor && failed)
			break;
		if (p.kind == K_TINJECT || p.kind == K_INJECT) {
			fill(i, ibuf, p.size);
			for (;;) {
				ret = p.kind == K_TINJECT ? fi_tinject(ep, ibuf, p.size, peer, p.tag)
							  : fi_inject(ep, ibuf, p.size, peer);
				if (ret != -FI_EAGAIN)
					break;
				if (drain())
					return 1;
			}
			if (ret) {
				if (survivor) {
					failed++;
					break;
				}
				die("inject", ret);
			}
			bytes += p.size;
			continue;
		}
		while (!(o = free_op()))
			if (drain())
				return 1;
		o->i = i;
		o->buf = malloc(p.size);
		fill(i, o->buf, p.size);
		inflight++;
		for (;;) {
			ret = p.kind == K_TAGGED ? fi_tsend(ep, o->buf, p.size, NULL, peer, p.tag, &o->ctx)
						 : fi_send(ep, o->buf, p.size, NULL, peer, &o->ctx);
			if (ret != -FI_EAGAIN)
				break;
			if (drain())
				return 1;
		}
		if (ret) {
			release(o);
			if (survivor) {
				failed++;
				break;
			}
			die("send", ret);
		}
		bytes += p.size;
	}
	/* Every send completes: normally, or with an error if the peer died. */
	{
		double t = ct_now(), limit = survivor ? conn_timeout() + 5 : 120;
		while (inflight > 0 && ct_now() - t < limit)
			if (drain())
				return 1;
	}
	if (inflight) {
		fprintf(stderr, "xfer: %ld sends never completed\n", inflight);
		return 1;
	}
	if (survivor) {
		printf("xfer: survivor sender: %ld completed, %ld failed\n", completed, failed);
		close_ep();
		return failed > 0 ? 0 : 1;
	}
	printf("xfer: %ld messages, %" PRIu64 " bytes sent in %.2f s (%.0f MB/s)\n", nmsg, bytes,
	       ct_now() - t0, bytes / (ct_now() - t0) / 1e6);
	free(ibuf);
	close_ep();
	return 0;
}

/* pair runs a receiver and a sender in two processes with devices (NULL:
 * the default) and returns 0 if both succeed. */
static int pair(const char *devices)
{
	char namefile[64];
	pid_t r, s;
	int st_r, st_s;

	snprintf(namefile, sizeof(namefile), "/tmp/xfer-%d-%s", (int)getpid(), devices ? devices : "default");
	unlink(namefile);
	if (devices)
		setenv("PSM2_DEVICES", devices, 1);
	else
		unsetenv("PSM2_DEVICES");
	fflush(NULL);
	if ((r = fork()) == 0)
		_exit(receiver(namefile));
	if ((s = fork()) == 0)
		_exit(sender(namefile));
	waitpid(s, &st_s, 0);
	waitpid(r, &st_r, 0);
	unlink(namefile);
	return !(WIFEXITED(st_r) && WEXITSTATUS(st_r) == 0 && WIFEXITED(st_s) && WEXITSTATUS(st_s) == 0);
}

int main(int argc, char **argv)
{
	int c;

	if (argc == 1) {
		/* ctest: no-valgrind (two processes moving half a gigabyte
		 * each way under valgrind would take most of an hour; the
		 * other tests cover the shim there) */
		for (int k = 0; k < MAXW; k++)
			ops[k].i = -1;
		setvbuf(stdout, NULL, _IOLBF, 0);
		if (pair(NULL) || pair("self,hfi"))
			return 1;
		printf("xfer: %ld messages 1 B..4 MiB, every kind, exactly once and intact over shm and over hfi (UDP, loopback)\n", nmsg);
		return 0;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: xfer recv|send NAMEFILE [-n N] [-s SEED] [-w W] [-l PERMILLE] [-k] [-p FILE]\n");
		return 2;
	}
	optind = 3;
	while ((c = getopt(argc, argv, "n:s:w:l:kp:")) != -1) {
		switch (c) {
		case 'n': nmsg = atol(optarg); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'w': window = atoi(optarg); break;
		case 'l': large_pm = atoi(optarg); break;
		case 'k': survivor = 1; break;
		case 'p': progress_file = optarg; break;
		default: return 2;
		}
	}
	if (window < 2 || window > MAXW)
		window = 32;
	for (int k = 0; k < MAXW; k++)
		ops[k].i = -1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "recv"))
		return receiver(argv[2]);
	if (!strcmp(argv[1], "send"))
		return sender(argv[2]);
	fprintf(stderr, "xfer: the role is recv or send\n");
	return 2;
}
