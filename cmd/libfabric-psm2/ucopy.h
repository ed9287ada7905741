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

#endif
