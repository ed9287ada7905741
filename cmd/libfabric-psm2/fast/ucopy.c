/* ucopy.c: copies between the application's buffers and shared memory
 * that survive a buffer the kernel refuses.
 *
 * The C fast path (send.c, deliver.c) copies a send's bytes out of the caller's
 * buffer and a message's bytes into a receive buffer. Either may be
 * PROT_NONE, unmapped or read-only; a plain memcpy would kill the process
 * with SIGSEGV, where the same call through Go fails the operation with
 * FI_EFAULT (internal/umem). So the fast path copies with psm2_ucopy: a fault
 * during it returns -1, the fast path leaves the operation to Go, and Go's
 * guarded copy reports it.
 *
 * How: a SIGSEGV/SIGBUS handler, installed once, after the Go runtime's
 * (which it chains to), jumps back into psm2_ucopy when the fault happened
 * on a thread that is inside one; any other fault goes to the handler that
 * was there before, with its arguments, as if ours were not there. A copy
 * costs a sigsetjmp that saves no signal mask (no system call) and two
 * stores of a thread-local word. As with Go's guard, an application that
 * later installs its own handler without chaining takes such faults
 * itself, as it would for memcpy in any C library. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif
#include <rdma/fi_domain.h>
#include "layout.h"
#include "ucopy.h"

static __thread sigjmp_buf *ucopy_env __attribute__((tls_model("initial-exec")));
static struct sigaction ucopy_prev_segv, ucopy_prev_bus;
static pthread_once_t ucopy_once = PTHREAD_ONCE_INIT;
static int ucopy_ready;

static void ucopy_fault(int sig, siginfo_t *si, void *uc)
{
	sigjmp_buf *env = ucopy_env;
	struct sigaction *prev = sig == SIGBUS ? &ucopy_prev_bus : &ucopy_prev_segv;

	if (env) {
		ucopy_env = NULL;
		siglongjmp(*env, 1);
	}
	if (prev->sa_flags & SA_SIGINFO) {
		prev->sa_sigaction(sig, si, uc);
		return;
	}
	if (prev->sa_handler == SIG_IGN || prev->sa_handler == SIG_DFL) {
		/* Put it back and return: the instruction faults again and the
		 * default action (a core dump) is the one the process had. */
		sigaction(sig, prev, NULL);
		return;
	}
	prev->sa_handler(sig);
}

static void ucopy_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = ucopy_fault;
	/* SA_ONSTACK: Go's handler, which this one calls, expects its
	 * signal stack; SA_NODEFER: a jump out of the handler leaves the
	 * signal unblocked. */
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &ucopy_prev_segv) != 0)
		return;
	if (sigaction(SIGBUS, &sa, &ucopy_prev_bus) != 0) {
		sigaction(SIGSEGV, &ucopy_prev_segv, NULL);
		return;
	}
	__atomic_store_n(&ucopy_ready, 1, __ATOMIC_RELEASE);
}

/* psm2_ucopy_ready installs the handler (once) and says whether it is in
 * place; without it, the fast path leaves copies of user memory to Go. */
int psm2_ucopy_ready(void)
{
	if (__builtin_expect(__atomic_load_n(&ucopy_ready, __ATOMIC_ACQUIRE), 1))
		return 1;
	pthread_once(&ucopy_once, ucopy_install);
	return __atomic_load_n(&ucopy_ready, __ATOMIC_ACQUIRE);
}

#if defined(__x86_64__)
/* ucopy_blocks copies n bytes in 64-byte blocks of 16-byte loads and
 * stores, non-temporal ones with nt (dst 16-byte aligned; the caller
 * fences them), then the tail with memcpy. */
static inline __attribute__((always_inline)) void ucopy_blocks(void *dst, const void *src, size_t n, int nt)
{
	char *d = dst;
	const char *s = src;
	size_t i = 0;

	for (; i + 64 <= n; i += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *) (s + i));
		__m128i b = _mm_loadu_si128((const __m128i *) (s + i + 16));
		__m128i c = _mm_loadu_si128((const __m128i *) (s + i + 32));
		__m128i e = _mm_loadu_si128((const __m128i *) (s + i + 48));

		if (nt) {
			_mm_stream_si128((__m128i *) (d + i), a);
			_mm_stream_si128((__m128i *) (d + i + 16), b);
			_mm_stream_si128((__m128i *) (d + i + 32), c);
			_mm_stream_si128((__m128i *) (d + i + 48), e);
		} else {
			_mm_storeu_si128((__m128i *) (d + i), a);
			_mm_storeu_si128((__m128i *) (d + i + 16), b);
			_mm_storeu_si128((__m128i *) (d + i + 32), c);
			_mm_storeu_si128((__m128i *) (d + i + 48), e);
		}
	}
	memcpy(d + i, s + i, n - i);
}
#endif

/* ucopy_small copies n <= 64 bytes with two (possibly overlapping) moves
 * of the largest width that fits, without a call: most fast-path copies
 * are a message of a few bytes, for which glibc's memcpy (through the
 * PLT) cost more than the copy. */
static inline __attribute__((always_inline)) void ucopy_small(void *dst, const void *src, size_t n)
{
	char *d = dst;
	const char *s = src;

	if (n >= 16) {
		uint64_t a[2], b[2], c[2], e[2];

		if (n > 32) {
			memcpy(a, s, 16);
			memcpy(b, s + 16, 16);
			memcpy(c, s + n - 32, 16);
			memcpy(e, s + n - 16, 16);
			memcpy(d, a, 16);
			memcpy(d + 16, b, 16);
			memcpy(d + n - 32, c, 16);
			memcpy(d + n - 16, e, 16);
			return;
		}
		memcpy(a, s, 16);
		memcpy(b, s + n - 16, 16);
		memcpy(d, a, 16);
		memcpy(d + n - 16, b, 16);
	} else if (n >= 8) {
		uint64_t a, b;

		memcpy(&a, s, 8);
		memcpy(&b, s + n - 8, 8);
		memcpy(d, &a, 8);
		memcpy(d + n - 8, &b, 8);
	} else if (n >= 4) {
		uint32_t a, b;

		memcpy(&a, s, 4);
		memcpy(&b, s + n - 4, 4);
		memcpy(d, &a, 4);
		memcpy(d + n - 4, &b, 4);
	} else if (n) {
		char a = s[0], b = s[n / 2], c = s[n - 1];

		d[0] = a;
		d[n / 2] = b;
		d[n - 1] = c;
	}
}

/* ucopy_mem is memcpy, except where glibc's is pathological: a long copy
 * whose destination lies 1 to 63 bytes past its source modulo 4 KiB. There
 * the string-move memcpy uses for such sizes stalls on every store (each
 * next load seems to depend on it), and 32 KiB took 9.8-18.5 us here
 * instead of 0.6 (an eager message into a receive buffer at page offset
 * 8, from our page-aligned bounce buffers). Plain 16-byte loads and
 * stores take 1.9 us there. Go's copy is not affected. */
static inline __attribute__((always_inline)) void ucopy_mem(void *dst, const void *src, size_t n)
{
	if (n <= 64) {
		ucopy_small(dst, src, n);
		return;
	}
#if defined(__x86_64__)
	size_t rel = ((uintptr_t) dst - (uintptr_t) src) & (ALIAS_SPAN - 1);

	if (n >= 1024 && rel != 0 && rel < ALIAS_NEAR) {
		ucopy_blocks(dst, src, n, 0);
		return;
	}
#endif
	memcpy(dst, src, n);
}

/* ucopy_guarded is ucopy_mem (or, with nt, ucopy_blocks' non-temporal
 * copy, fenced) under the fault handler: 0, or -1 if a buffer faulted. */
static inline int ucopy_guarded(void *dst, const void *src, size_t n, int nt)
{
	sigjmp_buf env;

	if (sigsetjmp(env, 0)) {
		/* A fault: the handler cleared ucopy_env. */
		return -1;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ucopy_env = &env;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
#if defined(__x86_64__)
	if (nt) {
		ucopy_blocks(dst, src, n, 1);
		_mm_sfence();
	} else
#endif
		ucopy_mem(dst, src, n);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ucopy_env = NULL;
	return 0;
}

int psm2_ucopy(void *dst, const void *src, size_t n)
{
	return ucopy_guarded(dst, src, n, 0);
}

int psm2_ucopy_nt(void *dst, const void *src, size_t n)
{
	return ucopy_guarded(dst, src, n, ((uintptr_t) dst & 15) == 0);
}

int psm2_ucopy_segs(const struct psm2_seg *seg, int nseg, void *buf, int to_buf)
{
	sigjmp_buf env;
	char *b = buf;

	if (sigsetjmp(env, 0))
		return -1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ucopy_env = &env;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	for (int i = 0; i < nseg; i++) {
		if (to_buf)
			ucopy_mem(b, seg[i].p, seg[i].n);
		else
			ucopy_mem(seg[i].p, b, seg[i].n);
		b += seg[i].n;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ucopy_env = NULL;
	return 0;
}

/* The element loops of psm2_uapply for integer type T (U: its unsigned
 * twin, in which sums and products wrap as Go's do): one loop per op, the
 * op chosen once. Kept out of line: inlined below sigsetjmp, the loop's
 * variables would live on the stack. */
#define UA_LOOP(T, EXPR)                                                                       \
	for (size_t i = 0; i < n; i++) {                                                       \
		T x = __atomic_load_n(&d[i], __ATOMIC_RELAXED), y = s[i], r;                   \
                                                                                               \
		(void) y;                                                                      \
		old[i] = x;                                                                    \
		r = (T) (EXPR);                                                                \
		__atomic_store_n(&d[i], r, __ATOMIC_RELAXED);                                  \
	}                                                                                      \
	break
#define UAPPLY(T, U)                                                                           \
	static __attribute__((noinline)) void uapply_##T(int op, T *d, const T *s, const T *c, \
							  T *old, size_t n)                    \
	{                                                                                      \
		switch (op) {                                                                  \
		case FI_ATOMIC_READ:                                                           \
			for (size_t i = 0; i < n; i++)                                         \
				old[i] = __atomic_load_n(&d[i], __ATOMIC_RELAXED);             \
			break;                                                                 \
		case FI_MIN: UA_LOOP(T, y < x ? y : x);                                        \
		case FI_MAX: UA_LOOP(T, y > x ? y : x);                                        \
		case FI_SUM: UA_LOOP(T, (U) ((uint64_t) (U) x + (uint64_t) (U) y));            \
		case FI_PROD: UA_LOOP(T, (U) ((uint64_t) (U) x * (uint64_t) (U) y));           \
		case FI_LOR: UA_LOOP(T, x != 0 || y != 0);                                     \
		case FI_LAND: UA_LOOP(T, x != 0 && y != 0);                                    \
		case FI_BOR: UA_LOOP(T, x | y);                                                \
		case FI_BAND: UA_LOOP(T, x & y);                                               \
		case FI_LXOR: UA_LOOP(T, (x != 0) != (y != 0));                                \
		case FI_BXOR: UA_LOOP(T, x ^ y);                                               \
		case FI_ATOMIC_WRITE: UA_LOOP(T, y);                                           \
		case FI_MSWAP: UA_LOOP(T, (y & c[i]) | (x & ~c[i]));                           \
		case FI_CSWAP: UA_LOOP(T, c[i] == x ? y : x);                                  \
		case FI_CSWAP_NE: UA_LOOP(T, c[i] != x ? y : x);                               \
		case FI_CSWAP_LE: UA_LOOP(T, c[i] <= x ? y : x);                               \
		case FI_CSWAP_LT: UA_LOOP(T, c[i] < x ? y : x);                                \
		case FI_CSWAP_GE: UA_LOOP(T, c[i] >= x ? y : x);                               \
		case FI_CSWAP_GT: UA_LOOP(T, c[i] > x ? y : x);                                \
		}                                                                              \
	}

UAPPLY(int8_t, uint8_t)
UAPPLY(uint8_t, uint8_t)
UAPPLY(int16_t, uint16_t)
UAPPLY(uint16_t, uint16_t)
UAPPLY(int32_t, uint32_t)
UAPPLY(uint32_t, uint32_t)
UAPPLY(int64_t, uint64_t)
UAPPLY(uint64_t, uint64_t)

int psm2_uapply(int op, int dt, void *dst, const void *src, const void *cmp, void *old, size_t count)
{
	sigjmp_buf env;
	static const size_t size[] = ATOMIC_DT_SIZES;

	if (dt < FI_INT8 || dt > FI_UINT64 || op < FI_MIN || op > FI_MSWAP ||
	    ((uintptr_t) dst & (size[dt] - 1)) || (!src && op != FI_ATOMIC_READ) || (op >= FI_CSWAP && !cmp))
		return -2;
	if (!src)
		src = old; /* (an atomic read has no operands) */
	if (!cmp)
		cmp = src; /* (read by no op that has none) */
	if (sigsetjmp(env, 0))
		return -1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ucopy_env = &env;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	switch (dt) {
	case FI_INT8: uapply_int8_t(op, dst, src, cmp, old, count); break;
	case FI_UINT8: uapply_uint8_t(op, dst, src, cmp, old, count); break;
	case FI_INT16: uapply_int16_t(op, dst, src, cmp, old, count); break;
	case FI_UINT16: uapply_uint16_t(op, dst, src, cmp, old, count); break;
	case FI_INT32: uapply_int32_t(op, dst, src, cmp, old, count); break;
	case FI_UINT32: uapply_uint32_t(op, dst, src, cmp, old, count); break;
	case FI_INT64: uapply_int64_t(op, dst, src, cmp, old, count); break;
	case FI_UINT64: uapply_uint64_t(op, dst, src, cmp, old, count); break;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ucopy_env = NULL;
	return 0;
}
