/* sigkill.c: a peer killed with SIGKILL in the middle of a transfer.
 *
 * The parent and a forked child each open a psm2 endpoint and swap names
 * over a pipe. The parent sends the child a 1 MiB message (a rendezvous:
 * it stays pending until the receiver fetches it) and some small ones the
 * child receives, then kills the child before it posts the receive for
 * the large one. The parent's pending send must complete with an error
 * entry within FI_PSM2_CONN_TIMEOUT (2 s here) plus a poll interval. The
 * dead child's shared-memory segment stays behind (SIGKILL runs no
 * cleanup); a new endpoint opened afterwards reclaims it. */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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

#define BIG (1 << 20)
#define TIMEOUT_S 2

/* segments_of counts the segments of endpoint name in our private
 * directory, /dev/shm/psm2go-<euid> (docs/shm.md): the endpoint id (the
 * name's first word, docs/hfi.md) is the last dot-separated hex field of
 * a segment's name. */
static int segments_of(const char *name)
{
	char want[24], path[64];
	uint64_t epid;
	struct dirent *d;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/dev/shm/psm2go-%u", (unsigned) geteuid());
	dir = opendir(path);
	memcpy(&epid, name, sizeof(epid));
	snprintf(want, sizeof(want), ".%016llx", (unsigned long long) epid);
	if (!dir)
		return -1;
	while ((d = readdir(dir)) != NULL) {
		const char *dot = strrchr(d->d_name, '.');
		if (strncmp(d->d_name, "psm2go.", 7) == 0 && dot &&
		    strcmp(dot, want) == 0)
			n++;
	}
	closedir(dir);
	return n;
}

static void child(int rd, int wr)
{
	struct ct_node p;
	struct fi_cq_tagged_entry e;
	char buf[64];
	fi_addr_t parent;
	char pname[16];
	int got = 0;

	if (ct_open_node(&p)) {
		_exit(2);
	}
	if (write(wr, p.name, 16) != 16 || read(rd, pname, 16) != 16)
		_exit(3);
	if (fi_av_insert(p.av, pname, 1, &parent, 0, NULL) != 1)
		_exit(4);
	/* Receive the small messages, then tell the parent and wait to die
	 * without ever posting the receive for the large one. */
	for (int i = 0; i < 4; i++)
		while (fi_trecv(p.ep, buf, sizeof(buf), NULL, parent, 1, 0, NULL) == -FI_EAGAIN)
			;
	while (got < 4) {
		int ret = fi_cq_read(p.cq, &e, 1);
		if (ret == 1)
			got++;
	}
	if (write(wr, "k", 1) != 1)
		_exit(5);
	for (;;)
		fi_cq_read(p.cq, &e, 1);
}

int main(int argc, char **argv)
{
	int down[2], up[2];
	struct ct_node p;
	fi_addr_t kid;
	char kname[16], c;
	char *big = malloc(BIG);
	char small[64] = "small";
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = { 0 };
	double start, took = -1;
	pid_t pid;
	int ret, sent = 0, status;

	alarm(60);
	if (argc == 4 && strcmp(argv[1], "child") == 0) {
		child(atoi(argv[2]), atoi(argv[3]));
		return 0;
	}
	if (!getenv("FI_PSM2_CONN_TIMEOUT")) {
		/* The library reads its parameters when it loads: re-run with
		 * them in the environment. */
		setenv("FI_PSM2_CONN_TIMEOUT", "2", 1);
		setenv("FI_PROVIDER", "psm2", 1);
		execv(argv[0], argv);
		return 2;
	}
	if (pipe(down) || pipe(up))
		return 2;
	/* The Go runtime inside the library does not survive fork(): the
	 * child runs this program afresh. */
	pid = fork();
	if (pid == 0) {
		char a[16], b[16];
		snprintf(a, sizeof(a), "%d", down[0]);
		snprintf(b, sizeof(b), "%d", up[1]);
		execl(argv[0], argv[0], "child", a, b, (char *) NULL);
		_exit(127);
	}
	CHECK(ct_open_node(&p) == 0, "parent endpoint");
	CHECK(read(up[0], kname, 16) == 16, "child name");
	CHECK(write(down[1], p.name, 16) == 16, "name to child");
	CHECK(fi_av_insert(p.av, kname, 1, &kid, 0, NULL) == 1, "insert child");
	memset(big, 0x5a, BIG);

	/* The large send first (tag 2, never received), then the small ones. */
	while ((ret = fi_tsend(p.ep, big, BIG, NULL, kid, 2, (void *) 0xb16)) == -FI_EAGAIN)
		fi_cq_read(p.cq, &e, 1);
	CHECK(ret == 0, "large send posted: %d", ret);
	for (int i = 0; i < 4; i++) {
		while ((ret = fi_tsend(p.ep, small, sizeof(small), NULL, kid, 1, (void *) 0x5)) == -FI_EAGAIN)
			fi_cq_read(p.cq, &e, 1);
		CHECK(ret == 0, "small send %d: %d", i, ret);
	}
	while (sent < 4) {
		ret = fi_cq_read(p.cq, &e, 1);
		if (ret == 1)
			CHECK(e.op_context == (void *) 0x5 && ++sent, "small send completion first");
		else
			CHECK(ret == -FI_EAGAIN, "cq read while sending: %d", ret);
		if (ret != 1 && ret != -FI_EAGAIN)
			break;
	}
	CHECK(read(up[0], &c, 1) == 1, "child ready");
	CHECK(segments_of(kname) == 1, "the child's segment exists while it lives: %d", segments_of(kname));

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	start = ct_now();
	for (;;) {
		ret = fi_cq_read(p.cq, &e, 1);
		if (ret == -FI_EAVAIL) {
			took = ct_now() - start;
			break;
		}
		if (ret == 1) {
			CHECK(0, "the large send completed successfully after the receiver died");
			break;
		}
		if (ct_now() - start > 3 * TIMEOUT_S)
			break;
	}
	CHECK(took >= 0 && took <= TIMEOUT_S + 1.0, "error completion within the timeout (took %.2f s)", took);
	ret = fi_cq_readerr(p.cq, &err, 0);
	CHECK(ret == 1, "readerr: %d", ret);
	CHECK(err.op_context == (void *) 0xb16, "error entry for the large send: %p", err.op_context);
	CHECK(err.err != 0, "error code set: %d (%s)", err.err, fi_strerror(err.err));
	printf("# pending send failed after %.2f s with %s\n", took, fi_strerror(err.err));

	/* A send to the dead peer now fails at once or through the CQ. */
	ret = fi_tsend(p.ep, small, sizeof(small), NULL, kid, 1, (void *) 0x6);
	if (ret == 0) {
		start = ct_now();
		do
			ret = fi_cq_read(p.cq, &e, 1);
		while (ret == -FI_EAGAIN && ct_now() - start < 2 * TIMEOUT_S);
		CHECK(ret == -FI_EAVAIL, "send to a dead peer reports an error: %d", ret);
		fi_cq_readerr(p.cq, &err, 0);
	} else {
		CHECK(ret < 0 && ret != -FI_EAGAIN, "send to a dead peer: %d", ret);
	}

	/* The dead child's segment is left over until a new endpoint looks. */
	CHECK(segments_of(kname) == 1, "SIGKILL leaves the segment: %d", segments_of(kname));
	{
		struct ct_node q;
		CHECK(ct_open_node(&q) == 0, "a new endpoint");
		CHECK(segments_of(kname) == 0, "the dead peer's segment is reclaimed: %d", segments_of(kname));
		ct_close_node(&q);
	}
	ct_close_node(&p);
	free(big);
	return finish("sigkill");
}
