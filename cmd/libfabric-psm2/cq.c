/* cq.c: the completion queue fid. read/readfrom are the completion hot
 * path: the C fast path first (completions it queued, messages it
 * delivers, atomics it serves or completes, the idle answer: fast/), then
 * one call into Go with the CQ's slot, with yields when the job's own
 * ranks crowd the CPUs, naps when other jobs do, and a move when a
 * spinning reader shares its CPU. */
#define _GNU_SOURCE /* sched_getcpu, CPU_COUNT */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "shim.h"
#include "fast.h"
#include "_cgo_export.h"

extern struct fi_ops psm2_cq_fi_ops;
extern struct fi_ops_cq psm2_cq_ops;

struct psm2_cq *psm2_cq_new(void *context, int32_t wait_obj)
{
	struct psm2_cq *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cq_fid.fid.fclass = FI_CLASS_CQ;
	c->cq_fid.fid.context = context;
	c->cq_fid.fid.ops = &psm2_cq_fi_ops;
	c->cq_fid.ops = &psm2_cq_ops;
	c->wait_obj = wait_obj;
	return c;
}

/* cq_quiet is psm2_fast_idle, except that an idle answer is not given for more
 * than IDLE_NET_NS in a row: then the read goes to Go anyway. A safety net,
 * so that work Go has but the idle words do not show (a bug; none is
 * known) costs at most that long, never a hang. The clock (the coarse one,
 * a few nanoseconds in the vDSO) is read every IDLE_CLOCK_EVERY idle
 * answers. The fields are racy across threads, which only moves the net. */
#define IDLE_NET_NS 10000000
#define IDLE_CLOCK_EVERY 256

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000 + (uint64_t) ts.tv_nsec;
}

static inline uint64_t coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* cq_yield_check gives the CPU away once empty answers have gone on for
 * yield_next ns: with more busy-polling threads than cores (MPICH ranks,
 * which never yield by themselves, oversubscribed), a peer that has the
 * message this thread waits for may be waiting for this very core. Empty
 * answers from Go count as much as C's idle ones: a thread waiting for
 * the end of a rendezvous (its FIN, the peer's fetch) reads through Go,
 * since the wire is not idle, and it waits for a peer all the same. It is
 * called every YIELD_CLOCK_EVERY empty answers in a row, so it costs a
 * fraction of a nanosecond per read, and a stretch is timed by the clock,
 * not by reads, whose cost depends on the caller's loop. A yield that
 * comes back at once found no such thread: the next waits twice as long
 * (up to YIELD_BACKOFF times the least), so where every thread has its
 * own core, yields soon cost nothing. One that took longer (another
 * thread ran) brings the least back.
 *
 * It yields only while the machine has more runnable threads than CPUs
 * (/proc/loadavg's fourth field, read at most every CROWD_CHECK_NS of
 * idleness): where every thread has a CPU, a yield buys nothing, and the
 * scheduler placed two unpinned ping-pong processes worse for it.
 *
 * Where the job's own ranks on this host outnumber its CPUs (the AVs'
 * count, provider/localprocs.go), the peer a reader waits for is likely
 * one of those waiting for a CPU, as with Open MPI's mpi_yield_when_idle
 * for vader: the least spin is then OWN_CROWD_SPIN_NS. Two pairs of ranks
 * ping-ponging on 2 cores (Open MPI cm/ofi), 64 KiB + 1 B: 33 us a one-way
 * trip with a 20 us spin, 18 with 5, 11.3 with 2 (vader 11.2).
 *
 * On a host crowded by other jobs it does not yield but naps, after
 * yield_ns of empty answers: psm2go_cq_nap sleeps as fi_cq_sread does, for
 * up to NAP_NS, until an arrival on the domain's wires (a ring's futex, the
 * hfi receive thread's wake-up), a completion or a timer of the network
 * wire. A reader that spins or yields on a crowded CPU sees a message only
 * at its next turn, after the other jobs' time slices (each yield handed
 * them one); one asleep is woken when the message comes, and the
 * scheduler runs a thread that slept ahead of the ones that spin.
 * fi_pingpong with 2 CPU spinners a core, medians of 5-7 alternating runs,
 * before -> after (Debian's shm or tcp): on one host, yielding -> napping,
 * 64 B 0.99 -> 0.61 us (100), 64 KiB 21 -> 15.5 (1582), 1 MiB 2873 -> 307
 * (1287); across two namespace hosts, spinning -> napping, 64 B 82 -> 73
 * (64), 64 KiB 368 -> 284 (748), 1 MiB 4376 -> 2585 (8002). An idle
 * machine never naps, and FI_PSM2_YIELD_SPIN=0 turns naps off with the
 * yields.
 *
 * A nap also needs this thread to have lost its CPU for more than
 * PREEMPT_GAP_NS while it spun, within the last PREEMPT_HOLD_NS: the
 * runnable count alone cannot tell other jobs from this job's own helper
 * threads, and it fed itself. Two processes ping-ponging 256 KiB across
 * two namespace hosts on an idle 2-CPU machine found a third thread
 * runnable now and then (a Go runtime thread, the hfi receive thread);
 * each read that waited more than yield_ns then napped, and each nap woke
 * more such threads: fi_pingpong -S 262144 -I 2000, 8300-9800 context
 * switches a side and 148-158 us a one-way trip; with this rule 720-1150
 * and 96-99 (three alternating runs). A thread that spins beside other
 * jobs' loses its CPU for their time slices (a millisecond or more)
 * within milliseconds, one beside a helper thread for microseconds (the
 * longest gaps seen idle, at start-up: 0.3-0.9 ms). */
#define PREEMPT_GAP_NS 1000000
#define PREEMPT_HOLD_NS 100000000
#define YIELD_CLOCK_EVERY 64
#define YIELD_RAN_NS 2000
#define YIELD_BACKOFF 64
#define CROWD_CHECK_NS 10000000
#define OWN_CROWD_SPIN_NS 2000
#define NAP_NS 1000000
#define UNSHARE_GAP_NS 15000
#define UNSHARE_WAIT_NS 1000000
#define UNSHARE_WAIT_MAX_NS 1000000000

/* cpus_crowded: 1 if more threads are runnable than there are CPUs
 * online, or if that cannot be told; *own: 1 if the job's ranks on this
 * host outnumber them. */
static int cpus_crowded(int *own)
{
	char buf[128];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN), running = 0;
	int fd;
	ssize_t n;
	char *p;

	*own = cpus > 0 && psm2go_local_procs() > cpus;
	fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	buf[n] = 0;
	/* "0.50 0.40 0.30 3/150 12345": runnable/total after three loads. */
	p = buf;
	for (int i = 0; i < 3 && p; i++)
		if ((p = strchr(p, ' ')))
			p++;
	if (!p || sscanf(p, "%ld/", &running) != 1 || cpus <= 0)
		return 1;
	return running > cpus;
}

/* cq_unshare is called when a read ends a stretch of empty answers from
 * C with an entry after a gap: the thread was off its CPU for more than
 * UNSHARE_GAP_NS since the stretch's last clock reading
 * (cq_yield_check's, every YIELD_CLOCK_EVERY answers, a microsecond or
 * two apart), so another thread ran on its CPU meanwhile.
 *
 * Two unpinned processes ping-ponging can end up on one CPU while another
 * idles: a thread woken by one of its process's own (a Go thread ending a
 * set-up call) is placed on the waker's CPU, which may be the one where
 * the peer already spins. The scheduler then takes turns between the two
 * (23-106 us slices on the 2-CPU machines this is measured on, so 50-200
 * us a round trip instead of 0.1), and its load balancer leaves two
 * cache-hot spinners where they are for 5-30 ms, the whole of a short
 * job: fi_pingpong -I 2000 took 2.7-7.4 us a round trip in a quarter of
 * the runs, 0.2 in the others. A thread that sleeps is woken on the same
 * CPU, so sleeping does not part them; the thread moves itself instead,
 * by leaving its CPU out of its affinity mask for a moment: the kernel
 * moves it at once, the mask it had goes back, and the move stays.
 *
 * It moves only if the message that ended the wait came from its CPU: the
 * latest C producer into one of the rings the CQ's lock slot lists ran there
 * (psm2_fast_peer_cpu, RING_PROD_CPU). So one of the two goes, not both:
 * the first to resume moves before it answers, and its answer, which ends
 * the other's wait, comes from the other CPU. A gap with the peer
 * elsewhere (Go's own threads, an interrupt) moves nothing. A thread whose
 * affinity allows one CPU has nowhere to go, and where the job's own
 * ranks outnumber the CPUs (own_crowd) a CPU is shared anyway: it yields
 * instead (cq_yield_check). A move is tried at most every
 * UNSHARE_WAIT_NS; where moves do not end the sharing (other jobs'
 * threads on every CPU) that wait doubles, up to UNSHARE_WAIT_MAX_NS.
 * FI_PSM2_YIELD_SPIN=0 turns this off with the yields. */
static void cq_unshare(struct psm2_cq *c, uint64_t now)
{
	cpu_set_t all, others;
	int cpu;

	if (c->own_crowd || now < c->unshare_after)
		return;
	cpu = sched_getcpu();
	if (cpu < 0 || cpu >= CPU_SETSIZE || !psm2_fast_peer_cpu(c->fast, cpu))
		return;
	if (c->unshare_tried && now - c->unshare_tried < 2 * c->unshare_wait) {
		if (c->unshare_wait < UNSHARE_WAIT_MAX_NS)
			c->unshare_wait *= 2;
	} else {
		c->unshare_wait = UNSHARE_WAIT_NS;
	}
	c->unshare_tried = now;
	c->unshare_after = now + c->unshare_wait;
	if (sched_getaffinity(0, sizeof(all), &all) || CPU_COUNT(&all) <= 1 || !CPU_ISSET(cpu, &all))
		return;
	others = all;
	CPU_CLR(cpu, &others);
	if (sched_setaffinity(0, sizeof(others), &others) == 0)
		sched_setaffinity(0, sizeof(all), &all);
}

/* cq_stretch_end: a read answered with entries after a stretch of at
 * least YIELD_CLOCK_EVERY empty ones; a gap since the stretch's last clock
 * reading goes to cq_unshare. */
static void cq_stretch_end(struct psm2_cq *c)
{
	uint64_t now = mono_ns();

	if (c->poll_clock && now - c->poll_clock > UNSHARE_GAP_NS) {
		if (now - c->poll_clock > PREEMPT_GAP_NS)
			c->preempted_at = now;
		cq_unshare(c, now);
	}
	c->poll_clock = 0;
}

static void cq_yield_check(struct psm2_cq *c)
{
	uint64_t now = mono_ns(), after;

	if (c->empty_polls == YIELD_CLOCK_EVERY) {	/* a new stretch */
		c->yield_from = now;
		c->poll_clock = now;
		return;
	}
	if (c->poll_clock && now - c->poll_clock > PREEMPT_GAP_NS)
		c->preempted_at = now;
	c->poll_clock = now;
	if (now - c->yield_from < c->yield_next)
		return;
	if (now >= c->crowd_until) {
		int own;
		uint64_t least;

		c->crowded = cpus_crowded(&own);
		c->own_crowd = own;
		c->crowd_until = now + CROWD_CHECK_NS;
		least = own && c->yield_ns > OWN_CROWD_SPIN_NS ? OWN_CROWD_SPIN_NS : c->yield_ns;
		if (least != c->yield_least) {
			c->yield_least = least;
			c->yield_next = least;
			if (now - c->yield_from < least)
				return;
		}
	}
	if (!c->crowded) {
		c->yield_from = now;
		return;
	}
	if (!c->own_crowd) {	/* crowded by other jobs: a nap */
		if (!c->preempted_at || now - c->preempted_at > PREEMPT_HOLD_NS) {
			c->yield_from = now;	/* not preempted lately: spin on */
			return;
		}
		psm2go_cq_nap(c->slot, NAP_NS);
		c->yield_from = mono_ns();
		c->poll_clock = 0;	/* a sleep is no sign of a shared CPU */
		return;
	}
	now = mono_ns();
	sched_yield();
	after = mono_ns();
	if (after - now > YIELD_RAN_NS)
		c->yield_next = c->yield_least;
	else if (c->yield_next < c->yield_least * YIELD_BACKOFF)
		c->yield_next *= 2;
	c->yield_from = after;
	/* The time another thread ran meanwhile is a gap (cq_unshare). */
	c->poll_clock = now;
}

/* cq_answered counts an answer of n entries (or an error) for yielding:
 * -FI_EAGAIN continues a stretch of empty answers, anything else ends it. */
static inline ssize_t cq_answered(struct psm2_cq *c, ssize_t n)
{
	if (n != -FI_EAGAIN) {
		if (c->empty_polls >= YIELD_CLOCK_EVERY && c->yield_ns)
			cq_stretch_end(c);
		c->empty_polls = 0;
	} else if (++c->empty_polls % YIELD_CLOCK_EVERY == 0 && c->yield_ns)
		cq_yield_check(c);
	return n;
}

/* cq_answered_go is cq_answered for an answer from Go, which costs a few
 * hundred nanoseconds, not a few: each empty one reads the clock. Counted
 * as one idle answer, a stretch of Go's answers (a thread waiting for the
 * FIN of its rendezvous send) reached the clock only every 64 of them,
 * 20-30 us, and Open MPI's ofi MTL waits for a blocking send's completion
 * in a loop of fi_cq_read alone (no yield of its own): two pairs of ranks
 * on 2 cores ping-ponging 64 KiB + 1 B took 40 us a one-way trip against
 * vader's 8.5. */
static inline ssize_t cq_answered_go(struct psm2_cq *c, ssize_t n)
{
	if (n == -FI_EAGAIN)
		c->empty_polls += YIELD_CLOCK_EVERY - 1 - c->empty_polls % YIELD_CLOCK_EVERY;
	return cq_answered(c, n);
}

static inline int cq_quiet_as(struct psm2_cq *c, int idle)
{
	uint64_t now;

	if (!idle) {
		c->idle_polls = 0;
		return 0;
	}
	if (++c->idle_polls % IDLE_CLOCK_EVERY)
		return 1;
	now = coarse_ns();
	if (!c->idle_since) {
		c->idle_since = now;
		return 1;
	}
	if (now - c->idle_since < IDLE_NET_NS)
		return 1;
	c->idle_since = 0;
	return 0;
}

static inline int cq_quiet(struct psm2_cq *c)
{
	return cq_quiet_as(c, psm2_fast_idle(c->fast));
}

static ssize_t cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_cq *c = (struct psm2_cq *) cq;
	struct psm2_held held;
	ssize_t n;

	if (buf && count) {
		if (cq_quiet(c))
			return cq_answered(c, -FI_EAGAIN);
		if (c->after_go_entries) {
			/* The read right after one that Go answered with
			 * entries: answered here if nothing is queued and no
			 * cell waits in a ring, even though Go has work (a
			 * network to read). A caller that reads until
			 * -FI_EAGAIN (Open MPI's ofi MTL) then gets it in
			 * nanoseconds, not after a receive system call (0.5-1
			 * us), before it answers the message; the next read
			 * goes to Go. */
			c->after_go_entries = 0;
			if (psm2_fast_empty(c->fast))
				return cq_answered(c, -FI_EAGAIN);
		}
		if ((n = psm2_fast_completions(c->fast, buf, count)) > 0)
			return cq_answered(c, n);
		if ((n = psm2_fast_deliver(c->fast, buf, count, &held)) > 0)
			return cq_answered(c, n);
		if ((n = psm2_fast_answers(c->fast, buf, count)) > 0)
			return cq_answered(c, n);
		/* Atomic requests C served leave no entry here; if they were
		 * all there was, the read ends without Go. */
		if (psm2_fast_serve(c->fast) > 0 && psm2_fast_idle(c->fast))
			return cq_answered(c, -FI_EAGAIN);
		/* A message no receive takes yet, the last in its ring, and
		 * nothing else: idle, without Go (which would queue it as
		 * unexpected, and take every receive until one claims it). The
		 * idle clock still sends the read to Go now and then. */
		if (held.n && cq_quiet_as(c, psm2_fast_idle_held(c->fast, &held)))
			return cq_answered(c, -FI_EAGAIN);
	}
	n = psm2go_cq_read(c->slot, buf, count, NULL);
	c->after_go_entries = n > 0;
	return cq_answered_go(c, n);
}

static ssize_t cq_readfrom(struct fid_cq *cq, void *buf, size_t count,
			   fi_addr_t *src_addr)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_cq *c = (struct psm2_cq *) cq;

	if (buf && count) {
		if (cq_quiet(c))
			return cq_answered(c, -FI_EAGAIN);
		if (psm2_fast_serve(c->fast) > 0 && psm2_fast_idle(c->fast))
			return cq_answered(c, -FI_EAGAIN);
	}
	return cq_answered_go(c, psm2go_cq_read(c->slot, buf, count, src_addr));
}

static ssize_t cq_readerr(struct fid_cq *cq, struct fi_cq_err_entry *buf,
			  uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!cq || !buf)
		return -FI_EINVAL;
	return psm2go_cq_readerr(((struct psm2_cq *) cq)->slot, buf, flags);
}

static ssize_t cq_sread(struct fid_cq *cq, void *buf, size_t count,
			const void *cond, int timeout)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_cq *c = (struct psm2_cq *) cq;
	ssize_t n;

	if (!cq)
		return -FI_EINVAL;
	/* First poll as fi_cq_read does, for up to spin_ns (less if the
	 * timeout is shorter): waking a thread that slept in the kernel costs
	 * more than most waits last. For a CQ with a wait object (else Go
	 * answers -FI_ENOSYS) and no threshold; otherwise, or after the spin,
	 * Go waits. */
	if (buf && count && !cond && c->wait_obj != FI_WAIT_NONE) {
		uint64_t spin = c->spin_ns, t0;

		if (timeout >= 0 && (uint64_t) timeout * 1000000 < spin)
			spin = (uint64_t) timeout * 1000000;
		t0 = spin ? mono_ns() : 0;
		for (uint32_t i = 1;; i++) {
			if ((n = cq_read(cq, buf, count)) != -FI_EAGAIN)
				return n;
			if (!spin || (i % 16 == 0 && mono_ns() - t0 >= spin))
				break;
		}
	}
	return psm2go_cq_sread(c->slot, buf, count, NULL, (void *) cond, timeout);
}

static ssize_t cq_sreadfrom(struct fid_cq *cq, void *buf, size_t count,
			    fi_addr_t *src_addr, const void *cond, int timeout)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!cq)
		return -FI_EINVAL;
	return psm2go_cq_sread(((struct psm2_cq *) cq)->slot, buf, count, src_addr,
			       (void *) cond, timeout);
}

static int cq_signal(struct fid_cq *cq)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!cq)
		return -FI_EINVAL;
	return psm2go_cq_signal((struct psm2_cq *) cq);
}

static const char *cq_strerror(struct fid_cq *cq, int prov_errno,
			       const void *err_data, char *buf, size_t len)
{
	PSM2_FORK_GUARD(NULL);
	(void) err_data;
	if (!buf || !len)
		buf = psm2_strerror_buf(&len);
	psm2go_cq_strerror((struct psm2_cq *) cq, prov_errno, buf, len);
	return buf;
}

static int cq_close(struct fid *fid)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!fid)
		return -FI_EINVAL;
	return psm2go_cq_close((struct psm2_cq *) fid);
}

static int cq_control(struct fid *fid, int command, void *arg)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_cq *c = (struct psm2_cq *) fid;
	int fd;

	if (!fid || !arg)
		return -FI_EINVAL;
	switch (command) {
	case FI_GETWAIT:
		fd = psm2go_cq_waitfd(c);
		return fd < 0 ? fd : psm2_getwait_out(c->wait_obj, fd, arg);
	case FI_GETWAITOBJ:
		*(enum fi_wait_obj *) arg = (enum fi_wait_obj) c->wait_obj;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

struct fi_ops psm2_cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cq_close,
	.bind = psm2_no_bind,
	.control = cq_control,
	.ops_open = psm2_no_ops_open,
	.tostr = NULL,
	.ops_set = psm2_no_ops_set,
};

struct fi_ops_cq psm2_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = cq_read,
	.readfrom = cq_readfrom,
	.readerr = cq_readerr,
	.sread = cq_sread,
	.sreadfrom = cq_sreadfrom,
	.signal = cq_signal,
	.strerror = cq_strerror,
};
