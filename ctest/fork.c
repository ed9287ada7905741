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

struct node {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t self;
};

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

static int open_node(struct node *p)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	char name[64];
	size_t len = sizeof(name);
	int ret;

	memset(p, 0, sizeof(*p));
	hints->caps = FI_TAGGED;
	hints->mode = FI_CONTEXT;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup("psm2");
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &p->info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	if ((ret = fi_fabric(p->info->fabric_attr, &p->fabric, NULL)) ||
	    (ret = fi_domain(p->fabric, p->info, &p->domain, NULL)) ||
	    (ret = fi_av_open(p->domain, &av_attr, &p->av, NULL)) ||
	    (ret = fi_cq_open(p->domain, &cq_attr, &p->cq, NULL)) ||
	    (ret = fi_endpoint(p->domain, p->info, &p->ep, NULL)) ||
	    (ret = fi_ep_bind(p->ep, &p->av->fid, 0)) ||
	    (ret = fi_ep_bind(p->ep, &p->cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(p->ep)) ||
	    (ret = fi_getname(&p->ep->fid, name, &len)))
		return ret;
	if (fi_av_insert(p->av, name, 1, &p->self, 0, NULL) != 1)
		return -FI_EOTHER;
	return 0;
}

static void close_node(struct node *p)
{
	fi_close(&p->ep->fid);
	fi_close(&p->av->fid);
	fi_close(&p->cq->fid);
	fi_close(&p->domain->fid);
	fi_close(&p->fabric->fid);
	fi_freeinfo(p->info);
}

/* One tagged message to ourselves: 0 when it arrives intact. */
static int self_message(struct node *p, uint64_t tag)
{
	struct fi_context ctx[2];
	char out[32] = { 0 }, in[32] = { 0 };
	struct fi_cq_tagged_entry e[2];
	int got = 0, spins = 0;
	ssize_t n;

	snprintf(out, sizeof(out), "hello %llu", (unsigned long long) tag);
	if (fi_trecv(p->ep, in, sizeof(in), NULL, p->self, tag, 0, &ctx[0]) ||
	    fi_tsend(p->ep, out, sizeof(out), NULL, p->self, tag, &ctx[1]))
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
	struct node n;
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
		close_node(&n);
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
		if (fi_tinject(n.ep, buf, 1, n.self, 9) != -FI_EOPNOTSUPP)
			bad |= 4;
		if (fi_tsend(n.ep, buf, 1, NULL, n.self, 9, &ctx) != -FI_EOPNOTSUPP)
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
	close_node(&n);

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
