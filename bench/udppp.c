/* udppp: the floor of any UDP design, for bench/bench.sh. A UDP
 * ping-pong whose both sides busy-poll their socket (non-blocking
 * receives in a loop). One-way latency = round trip / 2.
 *
 *   udppp -s [-p port] [-I iters]                 server: echoes every packet
 *   udppp -c host [-p port] [-S size] [-I iters]  client: prints
 *                                                 "size usec_one_way MB/s"
 *
 * With -G (on both sides; the server also needs -S) a message is SIZE
 * bytes, up to 8 MiB, sent as datagrams of -M bytes (default 1472, a 1500
 * byte MTU's) with UDP_SEGMENT, up to 44 (64 KiB) a system call, and read
 * with UDP_GRO into 64 KiB receives until SIZE bytes came: what a UDP
 * design moves at best when it copies nothing in user space. The message
 * is the application's buffer itself; no header, no checks, no loss
 * recovery (a lost datagram stops the run after a second, exit 1). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

enum { MAXMSG = 8 << 20, CHUNK = 65536 };

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* gso_send sends size bytes of buf to a in segments of seg bytes, as many
 * segments as fit in 64 KiB a call. */
static int gso_send(int fd, const char *buf, int size, int seg, const struct sockaddr_in *a)
{
	int per = (65535 - 8 - 20) / seg * seg;

	for (int off = 0; off < size;) {
		int n = size - off < per ? size - off : per;
		struct iovec iov = { .iov_base = (char *) buf + off, .iov_len = n };
		char ctl[CMSG_SPACE(sizeof(uint16_t))] = { 0 };
		struct msghdr m = { .msg_name = (void *) a, .msg_namelen = sizeof(*a), .msg_iov = &iov, .msg_iovlen = 1 };

		if (n > seg) {
			struct cmsghdr *c;

			m.msg_control = ctl;
			m.msg_controllen = sizeof(ctl);
			c = CMSG_FIRSTHDR(&m);
			c->cmsg_level = SOL_UDP;
			c->cmsg_type = UDP_SEGMENT;
			c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
			*(uint16_t *) CMSG_DATA(c) = seg;
		}
		if (sendmsg(fd, &m, 0) != n) {
			if (errno == EAGAIN || errno == ENOBUFS)
				continue;
			perror("sendmsg");
			return -1;
		}
		off += n;
	}
	return 0;
}

/* gso_recv reads until size bytes came into buf (each receive up to 64
 * KiB, coalesced by UDP_GRO); with peer, notes the sender's address. */
static int gso_recv(int fd, char *buf, int size, struct sockaddr_in *peer)
{
	double start = now();

	for (int off = 0; off < size;) {
		socklen_t plen = sizeof(*peer);
		int room = size - off < CHUNK ? size - off : CHUNK;
		ssize_t n = recvfrom(fd, buf + off, room, 0, (struct sockaddr *) peer, peer ? &plen : NULL);

		if (n < 0) {
			if (errno != EAGAIN) {
				perror("recvfrom");
				return -1;
			}
			if (off > 0 && now() - start > 1.0) {
				fprintf(stderr, "udppp: a datagram was lost\n");
				return -1;
			}
			continue;
		}
		off += n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int server = 0, gso = 0, port = 47000, size = 64, iters = 10000, seg = 1472, opt, fd;
	const char *host = NULL;
	struct sockaddr_in a = { .sin_family = AF_INET }, peer;
	socklen_t plen = sizeof(peer);
	static char buf[65536];
	char *big = buf;

	while ((opt = getopt(argc, argv, "sc:p:S:I:GM:")) != -1) {
		switch (opt) {
		case 's': server = 1; break;
		case 'c': host = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'S': size = atoi(optarg); break;
		case 'I': iters = atoi(optarg); break;
		case 'G': gso = 1; break;
		case 'M': seg = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: udppp -s | -c host [-p port] [-S size] [-I iters] [-G [-M seg]]\n");
			return 2;
		}
	}
	if (size < 1 || size > (gso ? MAXMSG : 65000) || seg < 64 || seg > 9000 || (!server && !host)) {
		fprintf(stderr, "udppp: bad arguments\n");
		return 2;
	}
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		perror("socket");
		return 1;
	}
	if (gso) {
		int one = 1, bufsz = 16 << 20;

		big = malloc(size);
		if (!big || setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one))) {
			perror("udppp: UDP_GRO");
			return 1;
		}
		memset(big, 1, size);
		setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bufsz, sizeof(bufsz));
		setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bufsz, sizeof(bufsz));
	}
	a.sin_port = htons(port);
	if (server) {
		a.sin_addr.s_addr = htonl(INADDR_ANY);
		if (bind(fd, (struct sockaddr *) &a, sizeof(a))) {
			perror("bind");
			return 1;
		}
		for (int got = 0; got < iters + 100; got++) {
			if (gso) {
				if (gso_recv(fd, big, size, &peer) || gso_send(fd, big, size, seg, &peer))
					return 1;
				continue;
			}
			ssize_t n;

			while ((n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *) &peer, &plen)) < 0) {
				if (errno != EAGAIN) {
					perror("recvfrom");
					return 1;
				}
			}
			sendto(fd, buf, n, 0, (struct sockaddr *) &peer, plen);
		}
		return 0;
	}
	if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
		fprintf(stderr, "udppp: %s is not an IPv4 address\n", host);
		return 2;
	}
	double t0 = 0;
	for (int i = 0; i < iters + 100; i++) {
		if (i == 100)
			t0 = now();
		if (gso) {
			if (gso_send(fd, big, size, seg, &a) || gso_recv(fd, big, size, NULL))
				return 1;
			continue;
		}
		sendto(fd, buf, size, 0, (struct sockaddr *) &a, sizeof(a));
		double start = now();
		while (recvfrom(fd, buf, sizeof(buf), 0, NULL, NULL) < 0) {
			if (errno != EAGAIN) {
				perror("recvfrom");
				return 1;
			}
			if (now() - start > 1.0) { /* lost: send again */
				sendto(fd, buf, size, 0, (struct sockaddr *) &a, sizeof(a));
				start = now();
			}
		}
	}
	double el = now() - t0;
	printf("%d %.2f %.2f\n", size, el / iters / 2 * 1e6, (double) size * iters * 2 / el / 1e6);
	return 0;
}
