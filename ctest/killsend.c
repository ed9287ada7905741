/* killsend.c: senders SIGKILLed at random points, 200 times, must never
 * wedge the receiver (issue 8, findings 4 and 9's neighbour: a producer
 * that dies between reserving a ring cell and publishing it used to stall
 * the ring for every sender, for ever).
 *
 * The receiver (this process) keeps receives posted for two streams: a
 * steady sender that runs throughout and sends numbered 8-byte messages,
 * and a victim sender, started 200 times, that sends messages of every
 * protocol (inline, eager, rendezvous of 1 and 3 MiB) until it is killed
 * at a random moment. Each time:
 *   - the steady stream must keep arriving, in order, none lost;
 *   - the receiver never stops answering (alarm turns a hang into a FAIL).
 * At the end, after FI_PSM2_CONN_TIMEOUT (2 s here) has passed, every
 * victim receive must be either completed or cancellable: one matched to a
 * dead sender's rendezvous must have failed by then, not hang.
 *
 * Senders are this program run again (fork and exec), so that they are
 * fresh processes: the library refuses a child forked after use.
 *
 * ctest: no-valgrind (200 process start-ups under valgrind take too long;
 * the C paths used here are covered under valgrind by fastpath and
 * sigkill).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include "check.h"
#include "node.h"

#define KILLS 200
#define TAG_STEADY 1
#define TAG_VICTIM 2
#define NSTEADY 16
#define NVICTIM 4
#define BIG (3 << 20)
#define CONN_TIMEOUT 2

static void on_alarm(int sig)
{
	(void) sig;
	printf("FAIL: killsend hung (alarm)\n");
	fflush(stdout);
	_exit(3);
}

/* ---- the senders ---------------------------------------------------------- */

static int hexval(char c)
{
	return c <= '9' ? c - '0' : c - 'a' + 10;
}

/* sender connects to the receiver named by hex and sends: the steady
 * stream (numbered 8-byte messages, paced), or the victim's mix until it
 * is killed. It writes one byte to stdout once its first message went. */
static int sender(const char *role, const char *hex)
{
	struct ct_node n;
	unsigned char name[256];
	size_t len = strlen(hex) / 2;
	fi_addr_t dest;
	struct fi_context ctx;
	static const size_t sizes[] = { 8, 200, 4096, 60000, 1 << 20, BIG };
	char *buf = calloc(1, BIG);
	int steady = !strcmp(role, "steady"), announced = 0;

	if (len > sizeof(name) || !buf || ct_open_node(&n))
		return 2;
	for (size_t i = 0; i < len; i++)
		name[i] = hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]);
	if (fi_av_insert(n.av, name, 1, &dest, 0, NULL) != 1)
		return 2;
	srand(getpid());
	for (uint64_t seq = 0;; seq++) {
		size_t sz = steady ? 8 : sizes[rand() % 6];
		struct fi_cq_tagged_entry e;
		ssize_t r;

		memcpy(buf, &seq, sizeof(seq));
		while ((r = fi_tsend(n.ep, buf, sz, NULL, dest, steady ? TAG_STEADY : TAG_VICTIM,
				     &ctx)) == -FI_EAGAIN)
			fi_cq_read(n.cq, &e, 1);
		if (r)
			return 2;
		while ((r = fi_cq_read(n.cq, &e, 1)) == -FI_EAGAIN)
			;
		if (r != 1)
			return steady ? 2 : 0; /* a victim's receiver may be gone at the end */
		if (!announced) {
			announced = 1;
			if (write(1, "r", 1) != 1)
				return 2;
		}
		if (steady)
			usleep(200);
	}
}

/* spawn runs this program as role, its stdout on a pipe; *rd gets the
 * pipe's read end. */
static pid_t spawn(const char *role, const char *hex, int *rd)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execl("/proc/self/exe", "killsend", role, hex, (char *) NULL);
		_exit(127);
	}
	close(p[1]);
	*rd = p[0];
	return pid;
}

/* ---- the receiver --------------------------------------------------------- */

static struct ct_node rx;
static uint64_t steady_buf[NSTEADY];
static struct fi_context steady_ctx[NSTEADY], victim_ctx[NVICTIM];
static char *victim_buf[NVICTIM];
static uint64_t steady_next, steady_bad, victim_ok, victim_err, other_err;
static int cancelling, cancelled;

static void post_steady(int k)
{
	ssize_t r = fi_trecv(rx.ep, &steady_buf[k], 8, NULL, FI_ADDR_UNSPEC, TAG_STEADY, 0,
			     &steady_ctx[k]);

	CHECK(r == 0, "posting a steady receive: %zd", r);
}

static void post_victim(int k)
{
	ssize_t r = fi_trecv(rx.ep, victim_buf[k], BIG, NULL, FI_ADDR_UNSPEC, TAG_VICTIM, 0,
			     &victim_ctx[k]);

	CHECK(r == 0, "posting a victim receive: %zd", r);
}

static void pump_once(void)
{
	struct fi_cq_tagged_entry e;
	ssize_t r = fi_cq_read(rx.cq, &e, 1);

	if (r == 1) {
		struct fi_context *c = e.op_context;

		if (c >= steady_ctx && c < steady_ctx + NSTEADY) {
			int k = c - steady_ctx;

			if (steady_buf[k] != steady_next && steady_bad++ < 3)
				printf("FAIL: steady message %lu, want %lu\n",
				       (unsigned long) steady_buf[k], (unsigned long) steady_next);
			steady_next = steady_buf[k] + 1;
			post_steady(k);
		} else {
			victim_ok++;
			post_victim(c - victim_ctx);
		}
	} else if (r == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };
		struct fi_context *c;

		if (fi_cq_readerr(rx.cq, &err, 0) != 1)
			return;
		c = err.op_context;
		if (c >= victim_ctx && c < victim_ctx + NVICTIM) {
			if (cancelling && err.err == FI_ECANCELED) {
				cancelled++;
				return;
			}
			victim_err++;
			post_victim(c - victim_ctx);
		} else {
			if (other_err++ < 3)
				printf("FAIL: error completion %d (%s) on a steady receive\n", err.err,
				       fi_strerror(err.err));
			if (c >= steady_ctx && c < steady_ctx + NSTEADY)
				post_steady(c - steady_ctx);
		}
	}
}

static void pump_for(double secs)
{
	double end = ct_now() + secs;

	while (ct_now() < end)
		pump_once();
}

int main(int argc, char **argv)
{
	unsigned char name[256];
	char hex[520];
	size_t len = sizeof(name);
	pid_t steady;
	int steady_rd, stalls = 0, r;
	double worst = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3)
		return sender(argv[1], argv[2]);
	setenv("FI_PSM2_CONN_TIMEOUT", "2", 1);
	signal(SIGALRM, on_alarm);
	alarm(300);

	r = ct_open_node(&rx);
	CHECK(r == 0, "opening the receiver: %d (%s)", r, fi_strerror(-r));
	if (r)
		return finish("killsend");
	CHECK(fi_getname(&rx.ep->fid, name, &len) == 0, "fi_getname");
	for (size_t i = 0; i < len; i++)
		sprintf(hex + 2 * i, "%02x", name[i]);
	for (int k = 0; k < NSTEADY; k++)
		post_steady(k);
	for (int k = 0; k < NVICTIM; k++) {
		victim_buf[k] = malloc(BIG);
		post_victim(k);
	}

	steady = spawn("steady", hex, &steady_rd);
	{
		char c;
		double end = ct_now() + 20;

		/* The steady sender is up once its first message went. */
		while (steady_next == 0 && ct_now() < end)
			pump_once();
		CHECK(steady_next > 0 && read(steady_rd, &c, 1) == 1, "the steady sender started");
	}

	srand(12345);
	for (int i = 0; i < KILLS; i++) {
		int rd;
		char c;
		pid_t v = spawn("victim", hex, &rd);
		double t0 = ct_now(), end = t0 + 20, t;
		uint64_t before;
		int ready = 0;

		/* Wait until the victim has sent something, pumping. */
		while (!ready && ct_now() < end) {
			struct timeval tv = { 0, 0 };
			fd_set fds;

			pump_once();
			FD_ZERO(&fds);
			FD_SET(rd, &fds);
			if (select(rd + 1, &fds, NULL, NULL, &tv) == 1)
				ready = read(rd, &c, 1) == 1;
		}
		CHECK(ready, "victim %d never sent", i);
		pump_for((rand() % 3000) / 1e5); /* 0 to 30 ms into its stream */
		kill(v, SIGKILL);
		waitpid(v, NULL, 0);
		close(rd);

		/* The steady stream goes on: 5 more messages within 5 s. */
		before = steady_next;
		t0 = ct_now();
		while (steady_next < before + 5 && ct_now() - t0 < 5)
			pump_once();
		t = ct_now() - t0;
		if (t > worst)
			worst = t;
		if (steady_next < before + 5 && stalls++ < 3)
			printf("FAIL: kill %d: the steady stream stalled (%lu -> %lu in %.1f s)\n", i,
			       (unsigned long) before, (unsigned long) steady_next, t);
	}
	CHECK(stalls == 0, "%d of %d kills stalled the other sender", stalls, KILLS);

	/* After the connection timeout, no victim receive is stuck on a dead
	 * sender: each one not completed can be cancelled. */
	pump_for(CONN_TIMEOUT + 1);
	cancelling = 1;
	for (int k = 0; k < NVICTIM; k++)
		fi_cancel(&rx.ep->fid, &victim_ctx[k]);
	{
		double end = ct_now() + 2;

		while (cancelled < NVICTIM && ct_now() < end)
			pump_once();
	}
	CHECK(cancelled == NVICTIM, "%d of %d victim receives cancelled after the timeout (the rest are stuck)",
	      cancelled, NVICTIM);
	CHECK(steady_bad == 0 && other_err == 0, "steady stream: %lu out of order, %lu errors",
	      (unsigned long) steady_bad, (unsigned long) other_err);
	printf("# %d kills: %lu steady messages in order, %lu victim messages received, %lu victim "
	       "receives failed; slowest recovery of the steady stream %.3f s\n", KILLS,
	       (unsigned long) steady_next, (unsigned long) victim_ok, (unsigned long) victim_err, worst);

	kill(steady, SIGKILL);
	waitpid(steady, NULL, 0);
	ct_close_node(&rx);
	for (int k = 0; k < NVICTIM; k++)
		free(victim_buf[k]);
	alarm(0);
	return finish("killsend");
}
