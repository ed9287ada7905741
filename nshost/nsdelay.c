/* nsdelay: holds the Ethernet frames that reach a tap device for a while
 * and then sends them on, in the order their (randomised) hold times run
 * out, not the order they came in. nshost/nshosts.sh uses it to reorder
 * packets between its namespace hosts (the kernel here has no netem, and
 * nftables has no queue statement): an nftables rule in the switch
 * namespace diverts a random share of a host's packets to the tap
 * ("fwd to"), this program holds each one for DELAY_US +- JITTER_US and
 * writes it back into the tap, a bridge port that neither learns
 * addresses nor gets flooded, so the bridge forwards it to where it was
 * going; the packets that were not diverted overtake it.
 *
 *   nsdelay TAPNAME DELAY_US [JITTER_US]
 *
 * Runs until killed (SIGTERM/SIGINT: exits, frames still held are lost,
 * which is what a wire does too). At most 4096 frames are held; more are
 * dropped. Frames longer than 16 KiB are dropped. No libraries beyond libc.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 4096
#define FRAME 16384

struct slot {
	int64_t due; /* monotonic ns; 0 = free */
	int len;
	unsigned char data[FRAME];
};

static struct slot *slots;
static volatile sig_atomic_t stop;

static void onsig(int sig)
{
	(void)sig;
	stop = 1;
}

static int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* xorshift64*: good enough to spread hold times */
static uint64_t rng_state;
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

int main(int argc, char **argv)
{
	struct ifreq ifr;
	struct sigaction sa;
	int64_t delay, jitter;
	unsigned long held = 0, sent = 0, dropped = 0;
	int fd, i, used = 0;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: nsdelay TAPNAME DELAY_US [JITTER_US]\n");
		return 2;
	}
	delay = strtoll(argv[2], NULL, 10) * 1000;
	jitter = argc > 3 ? strtoll(argv[3], NULL, 10) * 1000 : 0;
	if (delay < 0 || jitter < 0 || jitter > delay) {
		fprintf(stderr, "nsdelay: need 0 <= JITTER_US <= DELAY_US\n");
		return 2;
	}
	/* keep no descriptor of whoever started us (locks, pipes) */
	for (fd = 3; fd < 1024; fd++)
		close(fd);
	slots = calloc(SLOTS, sizeof(*slots));
	if (!slots) {
		perror("nsdelay: calloc");
		return 1;
	}
	rng_state = (uint64_t)now_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ULL;

	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK);
	if (fd < 0) {
		perror("nsdelay: /dev/net/tun");
		return 1;
	}
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", argv[1]);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		fprintf(stderr, "nsdelay: TUNSETIFF %s: %s\n", argv[1], strerror(errno));
		return 1;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = onsig;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	while (!stop) {
		int64_t t = now_ns(), next = 0;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct timespec ts, *tp = NULL;

		/* send everything that is due, earliest first */
		for (;;) {
			int best = -1;

			for (i = 0; i < SLOTS && used; i++)
				if (slots[i].due && slots[i].due <= t &&
				    (best < 0 || slots[i].due < slots[best].due))
					best = i;
			if (best < 0)
				break;
			if (write(fd, slots[best].data, slots[best].len) < 0 && errno != EAGAIN)
				dropped++;
			else
				sent++;
			slots[best].due = 0;
			used--;
		}
		for (i = 0; i < SLOTS && used; i++)
			if (slots[i].due && (!next || slots[i].due < next))
				next = slots[i].due;
		if (next) {
			int64_t wait_ns = next - t;

			if (wait_ns < 0)
				wait_ns = 0;
			ts.tv_sec = wait_ns / 1000000000;
			ts.tv_nsec = wait_ns % 1000000000;
			tp = &ts;
		}
		if (ppoll(&p, 1, tp, NULL) < 0) {
			if (errno == EINTR)
				continue;
			perror("nsdelay: ppoll");
			return 1;
		}
		if (!(p.revents & POLLIN))
			continue;
		for (;;) {
			unsigned char buf[FRAME];
			ssize_t n = read(fd, buf, sizeof(buf));
			int64_t hold;

			if (n < 0)
				break;
			if (n == 0 || n >= FRAME || used == SLOTS) {
				dropped++;
				continue;
			}
			for (i = 0; slots[i].due; i++)
				;
			hold = delay;
			if (jitter)
				hold += (int64_t)(rnd() % (uint64_t)(2 * jitter + 1)) - jitter;
			slots[i].due = now_ns() + (hold > 0 ? hold : 1);
			slots[i].len = (int)n;
			memcpy(slots[i].data, buf, (size_t)n);
			used++;
			held++;
		}
	}
	fprintf(stderr, "nsdelay %s: held %lu, sent %lu, dropped %lu\n", argv[1], held, sent, dropped);
	return 0;
}
