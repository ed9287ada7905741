/* fork.c: the library in a process that forks (issue 8, finding 8).
 *
 * - Loading the library starts no thread: the Go runtime inside it starts
 *   on the first call that needs it.
 * - A child forked before that first call uses the library as any process
 *   would (here: a message to itself).
 * - After the parent has used it, system() and popen() work.
 * - A child forked after the parent used it gets -FI_EOPNOTSUPP from every
 *   call, at once (an alarm turns a hang into a failure), and touches
 *   nothing of the parent's: the parent goes on working.
 */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_tagged.h>
#include "check.h"
#include "node.h"

/* The open node's own address in its AV (open_node). */
static fi_addr_t self;

static int threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* open_node opens p and inserts its own name into its AV, as self. */
static int open_node(struct ct_node *p)
{
	int ret = ct_open_node(p);

	if (ret)
		return ret;
	if (fi_av_insert(p->av, p->name, 1, &self, 0, NULL) != 1)
		return -FI_EOTHER;
	return 0;
}

/* One tagged message to ourselves: 0 when it arrives intact. */
static int self_message(struct ct_node *p, uint64_t tag)
{
	struct fi_context ctx[2];
	char out[32] = { 0 }, in[32] = { 0 };
	struct fi_cq_tagged_entry e[2];
	int got = 0, spins = 0;
	ssize_t n;

	snprintf(out, sizeof(out), "hello %llu", (unsigned long long) tag);
	if (fi_trecv(p->ep, in, sizeof(in), NULL, self, tag, 0, &ctx[0]) ||
	    fi_tsend(p->ep, out, sizeof(out), NULL, self, tag, &ctx[1]))
		return -1;
	while (got < 2 && spins++ < 10000000) {
		n = fi_cq_read(p->cq, e, 2 - got);
		if (n > 0)
			got += (int) n;
		else if (n != -FI_EAGAIN)
			return -2;
	}
	return got == 2 && !memcmp(in, out, sizeof(out)) ? 0 : -3;
}

/* Waits for a child; its exit status, or 100+signal if a signal (the
 * alarm of a hang) ended it. */
static int reap(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	if (WIFSIGNALED(st))
		return 100 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

int main(void)
{
	struct ct_node n;
	struct fi_info *info = NULL;
	char line[64] = "";
	pid_t pid;
	FILE *f;
	int r;

	setvbuf(stdout, NULL, _IONBF, 0);
	CHECK(threads() == 1, "the library started %d threads at load", threads() - 1);

	/* Forked before any use: the child is a fresh user. */
	pid = fork();
	if (pid == 0) {
		alarm(20);
		if (open_node(&n))
			_exit(2);
		r = self_message(&n, 7);
		ct_close_node(&n);
		_exit(r ? 3 : 0);
	}
	r = reap(pid);
	CHECK(r == 0, "a child forked before use could not use the library (%d)", r);
	CHECK(threads() == 1, "the parent has %d threads before any call", threads());

	/* The parent uses it. */
	r = open_node(&n);
	CHECK(r == 0, "open: %d", r);
	if (r)
		return finish("fork");
	CHECK(self_message(&n, 1) == 0, "message to self");
	CHECK(threads() > 1, "the Go runtime runs once used");

	/* system() and popen() with the runtime running. */
	r = system("exit 3");
	CHECK(WIFEXITED(r) && WEXITSTATUS(r) == 3, "system: %#x", r);
	f = popen("echo popen-works", "r");
	CHECK(f && fgets(line, sizeof(line), f) && !strcmp(line, "popen-works\n"),
	      "popen read '%s'", line);
	if (f)
		CHECK(pclose(f) == 0, "pclose");

	/* Forked after use: every call answers -FI_EOPNOTSUPP at once. The
	 * child reports each answer as one bit of its exit status. */
	pid = fork();
	if (pid == 0) {
		struct fi_cq_tagged_entry e;
		struct fi_context ctx;
		char buf[8] = "x";
		int bad = 0;

		alarm(10);
		if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info) != -FI_EOPNOTSUPP)
			bad |= 1;
		if (fi_cq_read(n.cq, &e, 1) != -FI_EOPNOTSUPP)
			bad |= 2;
		if (fi_tinject(n.ep, buf, 1, self, 9) != -FI_EOPNOTSUPP)
			bad |= 4;
		if (fi_tsend(n.ep, buf, 1, NULL, self, 9, &ctx) != -FI_EOPNOTSUPP)
			bad |= 8;
		if (fi_close(&n.ep->fid) != -FI_EOPNOTSUPP)
			bad |= 16;
		if (fi_fabric(n.info->fabric_attr, &n.fabric, NULL) != -FI_EOPNOTSUPP)
			bad |= 32;
		_exit(bad);
	}
	r = reap(pid);
	CHECK(r == 0, "a child forked after use: %s (%d)",
	      r >= 100 ? "hung or crashed" : "wrong answers, bits", r);

	/* The parent is untouched by its child. */
	CHECK(self_message(&n, 2) == 0, "message to self after the child");
	ct_close_node(&n);

	/* A child forked after close is still a child of a used library. */
	pid = fork();
	if (pid == 0) {
		alarm(10);
		_exit(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info) == -FI_EOPNOTSUPP ? 0 : 1);
	}
	r = reap(pid);
	CHECK(r == 0, "a child forked after close: %d", r);
	return finish("fork");
}
