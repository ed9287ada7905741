/* udppp: the floor of any UDP design, for bench/bench.sh. A UDP
 * ping-pong whose both sides busy-poll their socket (non-blocking
 * recvfrom in a loop). One-way latency = round trip / 2.
 *
 *   udppp -s [-p port]                         server: echoes every packet
 *   udppp -c host [-p port] [-S size] [-I iters]  client: prints
 *                                              "size usec_one_way MB/s"
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	int server = 0, port = 47000, size = 64, iters = 10000, opt, fd;
	const char *host = NULL;
	struct sockaddr_in a = { .sin_family = AF_INET }, peer;
	socklen_t plen = sizeof(peer);
	static char buf[65536];

	while ((opt = getopt(argc, argv, "sc:p:S:I:")) != -1) {
		switch (opt) {
		case 's': server = 1; break;
		case 'c': host = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'S': size = atoi(optarg); break;
		case 'I': iters = atoi(optarg); break;
		default: fprintf(stderr, "usage: udppp -s | -c host [-p port] [-S size] [-I iters]\n"); return 2;
		}
	}
	if (size < 1 || size > 65000 || (!server && !host)) {
		fprintf(stderr, "udppp: bad arguments\n");
		return 2;
	}
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		perror("socket");
		return 1;
	}
	a.sin_port = htons(port);
	if (server) {
		a.sin_addr.s_addr = htonl(INADDR_ANY);
		if (bind(fd, (struct sockaddr *) &a, sizeof(a))) {
			perror("bind");
			return 1;
		}
		for (int got = 0; got < iters + 100;) {
			ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *) &peer, &plen);

			if (n < 0) {
				if (errno == EAGAIN)
					continue;
				perror("recvfrom");
				return 1;
			}
			sendto(fd, buf, n, 0, (struct sockaddr *) &peer, plen);
			got++;
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
