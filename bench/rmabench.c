/* rmabench: RMA and atomic latency and bandwidth over libfabric, for make
 * bench.
 *
 *   rmabench -p PROVIDER [-t SECONDS] [-s BWSIZE] [-w WINDOW] [-F] [-m]
 *   rmabench -p PROVIDER -S PORT                 (target, another host)
 *   rmabench -p PROVIDER -S PORT -C HOST [...]   (initiator)
 *
 * One process forks (before any libfabric call) into an initiator and a
 * target on this host; they swap endpoint names, the target's region key
 * and address through pipes. With -S the target waits for one initiator
 * on TCP port PORT instead, and -C HOST is that initiator: the same
 * exchange over the connection, whose end ends the target. The target only polls its CQ (it serves the
 * RMA, as a provider without hardware offload needs). The initiator
 * measures, each for about SECONDS (default 0.5) after a warm-up:
 *
 *   write_lat  us per 8-byte fi_write, issued when the previous completed
 *   read_lat   us per 8-byte fi_read
 *   fadd_lat   us per 8-byte fi_fetch_atomic(FI_UINT64, FI_SUM)
 *   write_bw   MB/s of BWSIZE-byte (default 1 MiB) fi_writes, WINDOW
 *              (default 16) in flight
 *   read_bw    MB/s of BWSIZE-byte fi_reads, WINDOW in flight
 *
 * and prints one "NAME VALUE" line each (with -m the latencies of writes
 * and reads come from fi_writemsg and fi_readmsg, FI_DELIVERY_COMPLETE,
 * as MPICH posts them). With -F it measures instead
 * fi_fetch_atomic(FI_UINT64, FI_SUM) latency at every power of two from
 * 8 B to 4 KiB of operands (the most Debian's shm provider takes) and
 * prints "fadd SIZE US" lines. Built against include/rdma and
 * linked with -lfabric, it runs unchanged on our library and on Debian's
 * (LD_LIBRARY_PATH picks which). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <netdb.h>
#include <sys/socket.h>
#define BENCH_NAME "rmabench"
#include "benchutil.h"
#include "../ctest/node.h"
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>

#define MAXW 256

struct node {
	struct ct_node c;
	struct fid_mr *mr;
	fi_addr_t peer;
	struct fi_context2 ctx[MAXW];
};

struct target_info {
	uint64_t key, addr;
	size_t namelen;
	char name[256];
};

static void open_node(struct node *n, const char *prov)
{
	struct ct_opts o = {
		.prov = prov, .version = FI_VERSION(1, 6), .caps = FI_RMA | FI_ATOMIC, .mode = FI_CONTEXT | FI_CONTEXT2,
		.mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, .av_type = FI_AV_MAP,
		.cq_format = FI_CQ_FORMAT_CONTEXT, .cq_size = 4 * MAXW,
	};
	int rc;

	if ((rc = ct_open(&n->c, &o)))
		die("set-up", rc);
}

static void target(const char *prov, size_t size, int wfd, int rfd)
{
	struct node n;
	struct target_info ti = { 0 };
	char *region = aligned_alloc(4096, size);
	struct fi_cq_entry e[16];
	int rc;

	memset(region, 0, size);
	open_node(&n, prov);
	if ((rc = fi_mr_reg(n.c.domain, region, size, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &n.mr, NULL)))
		die("fi_mr_reg", rc);
	if ((n.c.info->domain_attr->mr_mode & FI_MR_ENDPOINT) &&
	    ((rc = fi_mr_bind(n.mr, &n.c.ep->fid, 0)) || (rc = fi_mr_enable(n.mr))))
		die("fi_mr_bind", rc);
	ti.key = fi_mr_key(n.mr);
	ti.addr = (n.c.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t) (uintptr_t) region : 0;
	ti.namelen = sizeof(ti.name);
	if ((rc = fi_getname(&n.c.ep->fid, ti.name, &ti.namelen)))
		die("fi_getname", rc);
	if (write(wfd, &ti, sizeof(ti)) != sizeof(ti))
		die("write", -FI_EIO);
	/* Serve until the initiator closes the pipe. */
	fcntl(rfd, F_SETFL, O_NONBLOCK);
	for (;;) {
		char c;
		ssize_t r;

		for (int i = 0; i < 1000; i++)
			fi_cq_read(n.c.cq, e, 16);
		r = read(rfd, &c, 1);
		if (r == 0 || (r < 0 && errno != EAGAIN))
			break;
	}
	exit(0);
}

static int use_msg;	/* -m */

/* lat measures one 8-byte operation at a time (a fetch-add of count
 * uint64, kind 2); returns us per op. */
static double lat(struct node *n, int kind, const struct target_info *ti, double secs, size_t count)
{
	static uint64_t av[512], aold[512];
	uint64_t v = 1, old;
	long ops = 0;
	double t0 = 0, end = 0;
	struct iovec iov = { .iov_base = kind == 0 ? (void *) &v : (void *) &old, .iov_len = 8 };
	struct fi_rma_iov riov = { .addr = ti->addr, .len = 8, .key = ti->key };
	struct fi_msg_rma msg = { .msg_iov = &iov, .iov_count = 1, .addr = n->peer, .rma_iov = &riov,
				  .rma_iov_count = 1, .context = &n->ctx[0] };

	for (int warm = 1; warm >= 0; warm--) {
		t0 = now();
		end = t0 + (warm ? secs / 5 : secs);
		ops = 0;
		while (now() < end) {
			for (int i = 0; i < 100; i++) {
				int done = 0;

				if (kind == 0 && use_msg)
					POST(n->c.cq, fi_writemsg(n->c.ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE), &done);
				else if (kind == 1 && use_msg)
					POST(n->c.cq, fi_readmsg(n->c.ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE), &done);
				else if (kind == 0)
					POST(n->c.cq, fi_write(n->c.ep, &v, 8, NULL, n->peer, ti->addr, ti->key, &n->ctx[0]), &done);
				else if (kind == 1)
					POST(n->c.cq, fi_read(n->c.ep, &old, 8, NULL, n->peer, ti->addr, ti->key, &n->ctx[0]), &done);
				else
					POST(n->c.cq, fi_fetch_atomic(n->c.ep, av, count, NULL, aold, NULL, n->peer, ti->addr + 64,
								ti->key, FI_UINT64, FI_SUM, &n->ctx[0]), &done);
				wait_comps(n->c.cq, 1 - done);
			}
			ops += 100;
		}
	}
	return (now() - t0) / ops * 1e6;
}

/* bw measures size-byte writes (kind 0) or reads, win in flight: MB/s. */
static double bw(struct node *n, int kind, const struct target_info *ti, char *buf, size_t size, int win, double secs)
{
	long bytes = 0;
	double t0 = 0;

	for (int warm = 1; warm >= 0; warm--) {
		double end;

		t0 = now();
		end = t0 + (warm ? secs / 5 : secs);
		bytes = 0;
		while (now() < end) {
			int done = 0;

			for (int i = 0; i < win; i++) {
				if (kind == 0)
					POST(n->c.cq, fi_write(n->c.ep, buf, size, NULL, n->peer, ti->addr, ti->key, &n->ctx[i]), &done);
				else
					POST(n->c.cq, fi_read(n->c.ep, buf, size, NULL, n->peer, ti->addr, ti->key, &n->ctx[i]), &done);
			}
			wait_comps(n->c.cq, win - done);
			bytes += (long) size * win;
		}
	}
	return bytes / (now() - t0) / 1e6;
}

int main(int argc, char **argv)
{
	const char *prov = "psm2", *port = NULL, *host = NULL;
	double secs = 0.5;
	size_t size = 1 << 20;
	int win = 16, opt, up[2], down[2], sock = -1, fsweep = 0;
	struct target_info ti;
	struct node n;
	char *buf;
	pid_t pid = 0;

	while ((opt = getopt(argc, argv, "p:t:s:w:S:C:Fm")) != -1) {
		switch (opt) {
		case 'p': prov = optarg; break;
		case 't': secs = atof(optarg); break;
		case 's': size = strtoul(optarg, NULL, 0); break;
		case 'w': win = atoi(optarg); break;
		case 'S': port = optarg; break;
		case 'C': host = optarg; break;
		case 'F': fsweep = 1; break;
		case 'm': use_msg = 1; break;
		default:
			fprintf(stderr, "usage: rmabench -p PROVIDER [-t SECONDS] [-s BWSIZE] [-w WINDOW] [-F] [-m] [-S PORT [-C HOST]]\n");
			return 2;
		}
	}
	if (win < 1 || win > MAXW || size < 64 || (host && !port))
		die("bad arguments", -FI_EINVAL);
	if (port && !host) {
		sock = tcp_fd(NULL, port);
		target(prov, size, sock, sock);
	}
	if (port) {
		sock = tcp_fd(host, port);
		up[0] = down[1] = sock;
	} else {
		if (pipe(up) || pipe(down))
			die("pipe", -FI_EIO);
		if ((pid = fork()) == 0) {
			close(up[0]);
			close(down[1]);
			target(prov, size, up[1], down[0]);
		}
		close(up[1]);
		close(down[0]);
	}
	if (read(up[0], &ti, sizeof(ti)) != sizeof(ti))
		die("the target did not start", -FI_EIO);
	open_node(&n, prov);
	if (fi_av_insert(n.c.av, ti.name, 1, &n.peer, 0, NULL) != 1)
		die("fi_av_insert", -FI_EINVAL);
	buf = aligned_alloc(4096, size);
	memset(buf, 1, size);
	if (fsweep) {
		for (size_t c = 1; c <= 512; c *= 2)
			printf("fadd %zu %.3f\n", c * 8, lat(&n, 2, &ti, secs, c));
	} else {
		printf("write_lat %.3f\n", lat(&n, 0, &ti, secs, 1));
		printf("read_lat %.3f\n", lat(&n, 1, &ti, secs, 1));
		printf("fadd_lat %.3f\n", lat(&n, 2, &ti, secs, 1));
		printf("write_bw %.1f\n", bw(&n, 0, &ti, buf, size, win, secs));
		printf("read_bw %.1f\n", bw(&n, 1, &ti, buf, size, win, secs));
	}
	fflush(stdout);
	close(down[1]);
	if (pid)
		waitpid(pid, NULL, 0);
	return 0;
}
