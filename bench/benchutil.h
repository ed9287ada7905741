/* benchutil.h: what the libfabric benchmark clients (msgrate.c,
 * rmabench.c) share: failing loudly, the clock, reading completions by
 * busy polling, and the TCP connection two hosts' halves talk over. Each
 * client defines BENCH_NAME before including it. */
#ifndef BENCHUTIL_H
#define BENCHUTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netdb.h>
#include <sys/socket.h>
#include <rdma/fabric.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

static inline void die(const char *what, int rc)
{
	fprintf(stderr, "%s: %s: %s (%d)\n", BENCH_NAME, what, fi_strerror(-rc), rc);
	exit(1);
}

static inline double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* wait_comps takes want completions off cq, and no more: one of the next
 * round may already be there. An error entry is fatal. */
static int bench_sread; /* wait_comps blocks in fi_cq_sread (a CQ with a wait object) */
/* With bench_cntr set, completions are counted there instead (the CQ is
 * bound with FI_SELECTIVE_COMPLETION and gets none): wait_comps blocks in
 * fi_cntr_wait for want more than it has waited for so far. */
static struct fid_cntr *bench_cntr;
static uint64_t bench_cntr_want;

static inline void wait_comps(struct fid_cq *cq, int want)
{
	struct fi_cq_tagged_entry e[64];
	struct fi_cq_err_entry err;

	if (bench_cntr) {
		int rc;

		if (want <= 0)
			return;
		bench_cntr_want += (uint64_t) want;
		if ((rc = fi_cntr_wait(bench_cntr, bench_cntr_want, -1)))
			die("fi_cntr_wait", rc);
		return;
	}
	while (want > 0) {
		size_t k = want < 64 ? (size_t) want : 64;
		ssize_t got = bench_sread ? fi_cq_sread(cq, e, k, NULL, -1) : fi_cq_read(cq, e, k);

		if (got > 0) {
			want -= (int) got;
		} else if (got == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(cq, &err, 0);
			die("completion error", -err.err);
		} else if (got != -FI_EAGAIN) {
			die("fi_cq_read", (int) got);
		}
	}
}

/* POST retries call while it says -FI_EAGAIN, counting the completions it
 * reads from cq meanwhile in *done. */
#define POST(cq, call, done)                                                  \
	do {                                                                  \
		ssize_t rc_;                                                  \
		while ((rc_ = (call)) == -FI_EAGAIN) {                        \
			struct fi_cq_tagged_entry e_[64];                     \
			ssize_t g_ = fi_cq_read((cq), e_, 64);                \
			if (g_ > 0)                                           \
				*(done) += (int) g_;                          \
		}                                                             \
		if (rc_)                                                      \
			die(#call, (int) rc_);                                \
	} while (0)

/* tcp_fd is a connected socket: accepted on port (host NULL) or to
 * host:port. */
static inline int tcp_fd(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM, .ai_flags = host ? 0 : AI_PASSIVE };
	struct addrinfo *ai;
	int fd, cfd, one = 1;

	if (getaddrinfo(host, port, &hints, &ai))
		die("getaddrinfo", -FI_EINVAL);
	fd = socket(ai->ai_family, ai->ai_socktype, 0);
	if (fd < 0)
		die("socket", -FI_EIO);
	if (host) {
		for (int i = 0; connect(fd, ai->ai_addr, ai->ai_addrlen); i++) {
			if (i == 100)
				die("connect", -FI_ECONNREFUSED);
			usleep(100000);
		}
		freeaddrinfo(ai);
		return fd;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 1))
		die("bind", -FI_EADDRINUSE);
	freeaddrinfo(ai);
	if ((cfd = accept(fd, NULL, NULL)) < 0)
		die("accept", -FI_EIO);
	close(fd);
	return cfd;
}

#endif
