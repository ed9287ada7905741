/* reconnect: a peer that could not be reached for longer than the
 * connection timeout, or that restarted at the same address, is reachable
 * again: the next send to it succeeds, and the data arrives intact (the
 * sends that failed stay failed; the application sends again).
 *
 *   reconnect                       on this host over the network wire
 *                                   (PSM2_DEVICES=self,hfi, UDP on
 *                                   loopback): a receiver process on a
 *                                   fixed port is killed after a few rounds
 *                                   and a new one started on that port; the
 *                                   sender's rounds all end up delivered
 *   reconnect recv NAMEFILE [-n N]  write our name to NAMEFILE, receive
 *                                   rounds until round N-1 has come
 *   reconnect send NAMEFILE [-n N]  read the receiver's name, send rounds
 *                                   0..N-1, each again until it completes
 *                                   without error; a line per round
 *                                   ("sent R" or "round R failed: ...")
 *
 * Round r is one tagged message of SIZE bytes (a rendezvous over the
 * network) with tag r; byte j is a function of (r, j). A receiver takes
 * any tag, checks the bytes, and accepts a round again (sent again after
 * a failure the receiver did not see) but never an older one.
 * scripts/multihost.sh cuts the link between two namespace hosts for
 * twice the connection timeout while rounds go.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <rdma/fi_tagged.h>
#include "node.h"

#define SIZE 200000

static long rounds = 30;

static unsigned char byte_of(long r, size_t j) { return (unsigned char)(r * 131 + j * 7 + (j >> 9)); }

static void die(const char *what, int ret)
{
	fprintf(stderr, "reconnect: %s: %s (%d)\n", what, fi_strerror(ret < 0 ? -ret : ret), ret);
	exit(2);
}

/* wait_cq waits up to secs for one completion: 0, the error entry's
 * err (positive), or -FI_ETIMEDOUT. */
static int wait_cq(struct ct_node *n, double secs, uint64_t *tag, size_t *len)
{
	struct fi_cq_tagged_entry e;
	double t0 = ct_now();

	for (;;) {
		ssize_t got = fi_cq_read(n->cq, &e, 1);

		if (got == 1) {
			if (tag)
				*tag = e.tag;
			if (len)
				*len = e.len;
			return 0;
		}
		if (got == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(n->cq, &err, 0);
			return err.err ? err.err : EIO;
		}
		if (got != -FI_EAGAIN)
			die("fi_cq_read", (int)got);
		if (ct_now() - t0 > secs)
			return -FI_ETIMEDOUT;
	}
}

static int receiver(const char *namefile)
{
	struct ct_node n;
	char tmp[4096];
	char *buf = malloc(SIZE);
	long last = -1;
	int fd, ret;

	if ((ret = ct_open_node(&n)))
		die("open", ret);
	snprintf(tmp, sizeof(tmp), "%s.tmp", namefile);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, n.name, n.namelen) != (ssize_t)n.namelen || close(fd) || rename(tmp, namefile)) {
		perror("reconnect: name file");
		return 2;
	}
	while (last < rounds - 1) {
		uint64_t tag = 0;
		size_t len = 0;

		memset(buf, 0, SIZE);
		if ((ret = fi_trecv(n.ep, buf, SIZE, NULL, FI_ADDR_UNSPEC, 0, ~0ull, NULL)))
			die("fi_trecv", ret);
		ret = wait_cq(&n, 600, &tag, &len);
		if (ret > 0) {
			/* (The sender died or was cut off in the middle.) */
			printf("receive failed: %s\n", fi_strerror(ret));
			fflush(stdout);
			continue;
		}
		if (ret)
			die("receive", ret);
		if ((long)tag < last || len != SIZE) {
			fprintf(stderr, "reconnect: round %ld after %ld, %zu bytes\n", (long)tag, last, len);
			return 1;
		}
		for (size_t j = 0; j < SIZE; j++)
			if ((unsigned char)buf[j] != byte_of((long)tag, j)) {
				fprintf(stderr, "reconnect: round %ld: byte %zu differs\n", (long)tag, j);
				return 1;
			}
		printf("got %ld\n", (long)tag);
		fflush(stdout);
		last = (long)tag;
	}
	printf("reconnect: receiver: rounds to %ld received and verified\n", last);
	free(buf);
	ct_close_node(&n);
	return 0;
}

/* read_name reads the receiver's name from namefile (waiting up to 60 s
 * for it to appear). */
static ssize_t read_name(const char *namefile, char *name, size_t size)
{
	for (double t0 = ct_now(); ct_now() - t0 < 60; usleep(10000)) {
		int fd = open(namefile, O_RDONLY);

		if (fd >= 0) {
			ssize_t k = read(fd, name, size);

			close(fd);
			return k;
		}
	}
	return -1;
}

/* send_rounds sends rounds from..to-1 to peer, each again until it
 * completes; on_round(r) is called before round r (may be NULL). The
 * count of failed attempts goes to *failures. */
static int send_rounds(struct ct_node *n, fi_addr_t peer, long from, long to, long *failures,
		       void (*on_round)(long))
{
	char *buf = malloc(SIZE);

	for (long r = from; r < to; r++) {
		if (on_round)
			on_round(r);
		for (size_t j = 0; j < SIZE; j++)
			buf[j] = (char)byte_of(r, j);
		for (;;) {
			int ret = fi_tsend(n->ep, buf, SIZE, NULL, peer, (uint64_t)r, NULL);

			if (ret == -FI_EAGAIN) {
				fi_cq_read(n->cq, NULL, 0);
				continue;
			}
			if (ret)
				die("fi_tsend", ret);
			ret = wait_cq(n, 120, NULL, NULL);
			if (ret == 0)
				break;
			if (ret < 0)
				die("send completion", ret);
			printf("round %ld failed: %s\n", r, fi_strerror(ret));
			fflush(stdout);
			(*failures)++;
			usleep(200000);
		}
		printf("sent %ld\n", r);
		fflush(stdout);
		usleep(100000);
	}
	free(buf);
	return 0;
}

static int sender(const char *namefile)
{
	struct ct_node n;
	char name[64];
	fi_addr_t peer;
	long failures = 0;
	ssize_t k;
	int ret;

	if ((ret = ct_open_node(&n)))
		die("open", ret);
	if ((k = read_name(namefile, name, sizeof(name))) <= 0) {
		fprintf(stderr, "reconnect: no receiver name in %s\n", namefile);
		return 2;
	}
	if ((ret = fi_av_insert(n.av, name, 1, &peer, 0, NULL)) != 1)
		die("fi_av_insert", ret);
	send_rounds(&n, peer, 0, rounds, &failures, NULL);
	printf("reconnect: sender: %ld rounds delivered, %ld attempts failed on the way\n", rounds, failures);
	ct_close_node(&n);
	return 0;
}

/* ---- on this host: a receiver restarted at the same address ---- */

static const char *self_path;
static char namefile[64];
static char port_range[32]; /* the receiver's one port */
static pid_t child;

static pid_t start_receiver(void)
{
	pid_t p = fork();

	if (p == 0) {
		char n[32];

		setenv("FI_PSM2_PORT_RANGE", port_range, 1);
		snprintf(n, sizeof(n), "%ld", rounds);
		execl(self_path, self_path, "recv", namefile, "-n", n, (char *)NULL);
		_exit(127);
	}
	return p;
}

static long kill_at;

static void maybe_restart(long r)
{
	if (r != kill_at)
		return;
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	unlink(namefile);
	child = start_receiver(); /* same port (FI_PSM2_PORT_RANGE): same name */
}

static int local(void)
{
	struct ct_node n;
	char name[64], name2[64];
	fi_addr_t peer;
	long failures = 0;
	ssize_t k, k2;
	int status, ret;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	/* A free port for the receiver (and its restart). */
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) || getsockname(s, (struct sockaddr *)&sa, &sl)) {
		perror("reconnect: port");
		return 2;
	}
	close(s);
	snprintf(port_range, sizeof(port_range), "%u-%u", ntohs(sa.sin_port), ntohs(sa.sin_port));
	setenv("PSM2_DEVICES", "self,hfi", 1);
	setenv("FI_PSM2_IFACE", "127.0.0.1", 1);
	setenv("FI_PSM2_CONN_TIMEOUT", "2", 1);
	snprintf(namefile, sizeof(namefile), "/tmp/reconnect.%d", (int)getpid());
	unlink(namefile);
	child = start_receiver();
	if ((k = read_name(namefile, name, sizeof(name))) <= 0) {
		fprintf(stderr, "reconnect: no receiver name\n");
		return 2;
	}
	if ((ret = ct_open_node(&n)))
		die("open", ret);
	if ((ret = fi_av_insert(n.av, name, 1, &peer, 0, NULL)) != 1)
		die("fi_av_insert", ret);
	rounds = 12;
	kill_at = 5;
	send_rounds(&n, peer, 0, rounds, &failures, maybe_restart);
	ct_close_node(&n);
	k2 = read_name(namefile, name2, sizeof(name2));
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "reconnect: the restarted receiver failed\n");
		return 1;
	}
	unlink(namefile);
	if (k2 != k || memcmp(name, name2, (size_t)k)) {
		fprintf(stderr, "reconnect: the restarted receiver has another name: the test proves nothing\n");
		return 1;
	}
	printf("reconnect: a receiver killed and restarted at the same address after round %ld: all %ld rounds delivered (%ld attempts failed on the way)\n",
	       kill_at - 1, rounds, failures);
	return 0;
}

int main(int argc, char **argv)
{
	int opt;

	self_path = argv[0];
	if (argc < 2)
		return local();
	if (argc < 3) {
		fprintf(stderr, "usage: reconnect [recv|send NAMEFILE [-n N]]\n");
		return 2;
	}
	optind = 3;
	while ((opt = getopt(argc, argv, "n:")) != -1)
		if (opt == 'n')
			rounds = atol(optarg);
	if (!strcmp(argv[1], "recv"))
		return receiver(argv[2]);
	return sender(argv[2]);
}
