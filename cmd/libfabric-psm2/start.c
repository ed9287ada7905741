/* start.c: the Go runtime starts on first use, not when the library loads,
 * and a child forked after it started gets errors instead of a hang.
 *
 * A c-shared Go library normally starts its runtime from a constructor
 * (.init_array), in a thread of its own, as soon as it is loaded. A process
 * that forks while that thread runs, or after, has a child whose Go runtime
 * lost every thread but the forking one: the first call into Go waits
 * forever. extld.sh (the external linker the Makefile gives go build)
 * renames the Go runtime's .init_array section of go.o to psm2_goinit, so
 * the loader no longer runs it; psm2_go_enter runs it on the first call
 * that needs Go, with the arguments and signal mask the loader would have
 * given it.
 *
 * Built without extld.sh (plain go build), psm2_goinit does not exist and
 * the runtime starts at load as before; only the fork rule below remains.
 *
 * The runtime starts with asynchronous preemption off (GODEBUG
 * asyncpreemptoff=1, ahead of any GODEBUG of the process, which may
 * override it). With it on, the runtime preempts a goroutine by sending
 * its thread SIGURG, and the goroutine of a call into the library runs on
 * the application's thread: a signal sent as the call returns lands in
 * the application's next system call, and one that the kernel does not
 * restart fails with EINTR. fi_pingpong's control socket has a receive
 * timeout (SO_RCVTIMEO), so its read is one of those: a fi_pingpong
 * server across two hosts failed so ("ctrl/read(): ... Interrupted
 * system call"), and a 300-round 1 MiB fi_pingpong took 27 SIGURGs on the
 * server's threads (strace). The runtime reads its environment from the
 * words after argv (not from envp), so it gets an argv array of its own:
 * the process's arguments, then its environment with GODEBUG set so.
 * Goroutines are then preempted at function calls only; the library's
 * loops all call functions.
 *
 * The fork rule: once the runtime has started, a forked child must not
 * enter Go, nor touch the shared memory the parent keeps using (the C fast
 * paths read and write the parent's rings). The pthread_atfork child
 * handler sets psm2_forked, and every entry point then answers
 * -FI_EOPNOTSUPP (PSM2_FORK_GUARD in shim.h) after one log line. A child
 * forked before the runtime started is an ordinary process: it may start
 * its own.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "shim.h"

typedef void (*psm2_rt0_fn)(int argc, char **argv, char **envp);

/* The linker defines these for the section extld.sh makes; weak, so a
 * build without it links and finds none. */
extern psm2_rt0_fn __start_psm2_goinit[] __attribute__((weak, visibility("hidden")));
extern psm2_rt0_fn __stop_psm2_goinit[] __attribute__((weak, visibility("hidden")));

int psm2_forked;
int psm2_go_started;
static int ctor_argc;
static char **ctor_argv, **ctor_envp;
static sigset_t ctor_mask;
static pthread_once_t go_once = PTHREAD_ONCE_INIT;

/* A priority puts this constructor in .init_array.00101, which extld.sh
 * does not rename: it must still run at load. It only saves what the Go
 * runtime's own constructor would have been given. */
__attribute__((constructor(101)))
static void psm2_capture(int argc, char **argv, char **envp)
{
	ctor_argc = argc;
	ctor_argv = argv;
	ctor_envp = envp;
	pthread_sigmask(SIG_SETMASK, NULL, &ctor_mask);
}

static void psm2_child_after_fork(void)
{
	psm2_forked = 1;
}

/* go_args builds the argument vector the runtime starts with, laid out as
 * the loader's: argc arguments, NULL, the environment with
 * "asyncpreemptoff=1" first in GODEBUG, NULL, then the loader's auxiliary
 * vector (the runtime reads the page size and more there). The
 * environment and the auxiliary vector are the ones that follow argv, as
 * the runtime itself would read them (see the top). It is never freed:
 * the runtime may keep pointers into it. NULL if there is no argv or
 * memory is short (the runtime then gets the loader's). */
static char **go_args(int argc, char **argv)
{
	static const char key[] = "GODEBUG=", ours[] = "asyncpreemptoff=1";
	char *godebug = NULL;

	if (!argv || argc < 0)
		return NULL;
	char **env = argv + argc + 1, **e = env;
	while (*e)
		e++;
	size_t nenv = (size_t) (e - env);
	uintptr_t *aux = (uintptr_t *) (e + 1), *a = aux;
	while (a[0] != 0) /* AT_NULL ends it */
		a += 2;
	size_t naux = (size_t) (a - aux) + 2;
	char **v = calloc((size_t) argc + 1 + nenv + 2 + naux, sizeof(char *));
	if (!v)
		return NULL;
	size_t k = 0;
	for (int i = 0; i < argc; i++)
		v[k++] = argv[i];
	v[k++] = NULL;
	for (e = env; *e; e++) {
		if (strncmp(*e, key, sizeof(key) - 1) == 0) {
			godebug = *e + sizeof(key) - 1;
			continue;
		}
		v[k++] = *e;
	}
	size_t n = sizeof(key) + sizeof(ours) + (godebug ? strlen(godebug) + 1 : 0);
	char *g = malloc(n);
	if (!g) {
		free(v);
		return NULL;
	}
	snprintf(g, n, "%s%s%s%s", key, ours, godebug && *godebug ? "," : "", godebug ? godebug : "");
	v[k++] = g;
	v[k++] = NULL;
	memcpy(&v[k], aux, naux * sizeof(uintptr_t));
	return v;
}

static void psm2_go_start(void)
{
	sigset_t old;

	/* Registered before the runtime starts, so a fork at any later
	 * moment marks the child. */
	pthread_atfork(NULL, NULL, psm2_child_after_fork);
	if (__start_psm2_goinit && __stop_psm2_goinit) {
		/* The runtime's first thread inherits the caller's signal mask:
		 * give it the one a load-time start would have had. */
		char **args = go_args(ctor_argc, ctor_argv);
		char **envp = ctor_envp;

		if (args)
			envp = args + ctor_argc + 1;
		else
			args = ctor_argv;
		pthread_sigmask(SIG_SETMASK, &ctor_mask, &old);
		for (psm2_rt0_fn *f = __start_psm2_goinit; f < __stop_psm2_goinit; f++)
			(*f)(ctor_argc, args, envp);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	__atomic_store_n(&psm2_go_started, 1, __ATOMIC_RELEASE);
}

int psm2_go_enter_slow(const char *func)
{
	if (__atomic_load_n(&psm2_forked, __ATOMIC_RELAXED)) {
		psm2_fork_refused(func);
		return -FI_EOPNOTSUPP;
	}
	pthread_once(&go_once, psm2_go_start);
	return 0;
}

void psm2_fork_refused(const char *func)
{
	static int said;

	if (__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		return;
	if (!psm2_log_warn_enabled())
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	fprintf(stderr, "libfabric:%d:%lld::psm2:core:%s():%d<warn> this process was "
		"forked after its parent started the psm2 provider; libfabric calls in "
		"the child answer -FI_EOPNOTSUPP (use the library only before fork, or "
		"only in the child)\n", (int) getpid(), (long long) ts.tv_sec,
		func, __LINE__);
}
