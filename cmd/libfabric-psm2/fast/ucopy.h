/* ucopy.h: copies of the application's memory that fail instead of
 * faulting (ucopy.c). */
#ifndef PSM2_UCOPY_H
#define PSM2_UCOPY_H

#include <stddef.h>

/* psm2_ucopy_ready installs the fault handler psm2_ucopy needs (once) and
 * returns 1 when it is in place, 0 if it could not be. */
int psm2_ucopy_ready(void);

/* psm2_ucopy copies n bytes from src to dst and returns 0, or -1 if either
 * buffer faulted (then dst holds part of the bytes). */
int psm2_ucopy(void *dst, const void *src, size_t n);

/* psm2_ucopy_nt is psm2_ucopy with non-temporal stores (for a 16-byte
 * aligned dst; others take psm2_ucopy), fenced before it returns: for a
 * bounce buffer the other core read last, whose lines a plain store must
 * first take back from it (32 KiB: 4.7 us that way, 0.9 us around the
 * caches; the reader then loads from memory). */
int psm2_ucopy_nt(void *dst, const void *src, size_t n);

/* A piece of memory: psm2_ucopy_segs' list. */
struct psm2_seg {
	void *p;
	size_t n;
};

/* psm2_ucopy_segs copies between buf and the nseg pieces seg lists, in
 * order (to_buf: from the pieces into buf, else from buf into them), under
 * one guard: 0, or -1 if a buffer faulted. For an inline message's ring
 * cells, whose bytes lie in several pieces, without a staging copy. */
int psm2_ucopy_segs(const struct psm2_seg *seg, int nseg, void *buf, int to_buf);

/* psm2_uapply applies atomic op (enum fi_op) to the count integer
 * elements of datatype dt (FI_INT8 .. FI_UINT64) at dst, aligned, with
 * operands src and compare values cmp, first copying the old values to
 * old: as provider/atomic.go's applyInt does, element by element, each
 * loaded and stored whole (FI_ATOMIC_READ only loads; src may be NULL). Returns 0; -1 if dst faulted (nothing was
 * written when dst lies within one page: its first store faults); -2 for
 * an op or datatype it does not apply. The caller holds the process's
 * atomic lock. */
int psm2_uapply(int op, int dt, void *dst, const void *src, const void *cmp, void *old, size_t count);

#endif
