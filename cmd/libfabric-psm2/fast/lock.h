/* lock.h: the domain lock's words and the atomic lock, futex words Go takes too (provider/lock.go, provider/fastrma.go). */
#ifndef PSM2_FAST_LOCK_H
#define PSM2_FAST_LOCK_H

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include "fast.h"
#include "layout.h"
#include "ucopy.h"

static inline long psm2_futex(uint32_t *w, int op, uint32_t val)
{
	return syscall(SYS_futex, w, op, val, NULL, NULL, 0);
}

/* A lock slot's word (the domain lock is all of them): 0 free, 1 held, 2 held and someone may sleep. An
 * uncontended unlock is a plain release store (no full barrier, so the
 * thread does not wait for its ring cells to reach the receiver's core);
 * waiters therefore sleep at most 200 us at a time (provider/lock.go). */
static inline void psm2_dlock(uint32_t *w)
{
	uint32_t z = 0;

	if (__atomic_compare_exchange_n(w, &z, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	for (int i = 0; i < 64; i++) {
		z = 0;
		if (__atomic_load_n(w, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(w, &z, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return;
		__builtin_ia32_pause();
	}
	while (__atomic_exchange_n(w, 2, __ATOMIC_ACQUIRE) != 0) {
		struct timespec nap = { 0, 200000 };

		syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, 2, &nap, NULL, 0);
	}
}

static inline void psm2_dunlock(uint32_t *w)
{
	if (__atomic_load_n(w, __ATOMIC_RELAXED) == 1) {
		__atomic_store_n(w, 0, __ATOMIC_RELEASE);
		return;
	}
	if (__atomic_exchange_n(w, 0, __ATOMIC_RELEASE) == 2)
		psm2_futex(w, FUTEX_WAKE_PRIVATE, 1);
}

/* psm2_alock takes the process's atomic lock word w (Go's lockAtomics
 * takes the same); psm2_aunlock lets it go. */
static inline void psm2_alock(uint32_t *w)
{
	for (unsigned i = 0;; i++) {
		uint32_t z = 0;

		if (__atomic_compare_exchange_n(w, &z, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return;
		if (i >= 64)
			sched_yield();
#if defined(__x86_64__)
		__builtin_ia32_pause();
#endif
	}
}

static inline void psm2_aunlock(uint32_t *w) { __atomic_store_n(w, 0, __ATOMIC_RELEASE); }

#endif /* PSM2_FAST_LOCK_H */
