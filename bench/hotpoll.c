/* hotpoll: what an empty fi_cq_read costs while the network wire is hot
 * (its polls read the socket themselves, for FI_PSM2_HFI_SPIN after the
 * last packet), beside the bare system calls such a poll could make.
 *
 *   PSM2_DEVICES=self,hfi FI_PSM2_HFI_SPIN=10000000 hotpoll [READS]
 *
 * Two endpoints of this process exchange a few messages over UDP on the
 * loopback interface (PSM2_DEVICES=self,hfi sends same-host peers over
 * the network wire), which makes the receiver's wire hot; then READS
 * (default 1000000) empty reads of its CQ are timed, and as many
 * non-blocking recvfrom and recvmmsg calls on an idle UDP socket. Prints
 * the three in ns a call. With the default FI_PSM2_HFI_SPIN (5 ms) the
 * wire cools after 5 ms and the reads measure the idle path instead (so
 * does, now and then, a run with a long spin: it says so). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <rdma/fi_tagged.h>
#include "../ctest/node.h"

int main(int argc, char **argv)
{
	struct ct_node a, b;
	struct fi_cq_tagged_entry e[4];
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) }, from;
	struct mmsghdr mh;
	struct iovec iov;
	char msg[64] = "hot", rb[64], ctl[64];
	long n = argc > 1 ? atol(argv[1]) : 1000000, got = 0;
	fi_addr_t ab, ba;
	socklen_t fl;
	double t0, hot, rf, rm;
	int s;

	if (n <= 0 || ct_open_node(&a) || ct_open_node(&b) || fi_av_insert(a.av, b.name, 1, &ab, 0, NULL) != 1 ||
	    fi_av_insert(b.av, a.name, 1, &ba, 0, NULL) != 1) {
		fprintf(stderr, "hotpoll: cannot open two psm2 endpoints\n");
		return 1;
	}
	for (int r = 0; r < 5; r++) {
		if (fi_trecv(b.ep, rb, sizeof(rb), NULL, ba, 1, 0, NULL))
			return 1;
		while (fi_tsend(a.ep, msg, 8, NULL, ab, 1, NULL) == -FI_EAGAIN)
			fi_cq_read(a.cq, e, 4);
		for (double until = ct_now() + 5; fi_cq_read(b.cq, e, 4) <= 0;) {
			fi_cq_read(a.cq, e, 4);
			if (ct_now() > until) {
				fprintf(stderr, "hotpoll: no message in 5 s\n");
				return 1;
			}
		}
	}
	t0 = ct_now();
	for (long i = 0; i < n; i++)
		if (fi_cq_read(b.cq, e, 4) > 0)
			got++;
	hot = (ct_now() - t0) / n * 1e9;

	if ((s = socket(AF_INET, SOCK_DGRAM, 0)) < 0 || bind(s, (struct sockaddr *) &sa, sizeof(sa))) {
		perror("hotpoll: socket");
		return 1;
	}
	t0 = ct_now();
	for (long i = 0; i < n; i++) {
		fl = sizeof(from);
		(void) recvfrom(s, rb, sizeof(rb), MSG_DONTWAIT, (struct sockaddr *) &from, &fl);
	}
	rf = (ct_now() - t0) / n * 1e9;
	t0 = ct_now();
	for (long i = 0; i < n; i++) {
		memset(&mh, 0, sizeof(mh));
		iov.iov_base = rb;
		iov.iov_len = sizeof(rb);
		mh.msg_hdr.msg_iov = &iov;
		mh.msg_hdr.msg_iovlen = 1;
		mh.msg_hdr.msg_name = &from;
		mh.msg_hdr.msg_namelen = sizeof(from);
		mh.msg_hdr.msg_control = ctl;
		mh.msg_hdr.msg_controllen = sizeof(ctl);
		(void) recvmmsg(s, &mh, 1, MSG_DONTWAIT, NULL);
	}
	rm = (ct_now() - t0) / n * 1e9;
	/* (tens of ns: C answered the reads, so the wire had cooled before
	 * them; then run it again) */
	printf("empty fi_cq_read %.0f ns (%ld entries)%s, recvfrom %.0f ns, recvmmsg %.0f ns\n", hot, got,
	       hot < rf / 2 ? " (the wire was cool)" : "", rf, rm);
	close(s);
	ct_close_node(&a);
	ct_close_node(&b);
	return 0;
}
