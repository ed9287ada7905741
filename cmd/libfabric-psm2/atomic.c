/* atomic.c: what the atomics need from C.
 *
 * Go applies the atomic ops of every type it has (provider/atomic.go);
 * long double and long double complex (x86-64's 80-bit extended format in
 * 16 bytes) it has not, so it calls psm2_ld_apply, with the provider's
 * atomic lock held and the op and datatype already checked against the
 * psm2 table. Elements may be unaligned (they come from the wire). */
#include <complex.h>
#include <string.h>
#include "shim.h"

size_t psm2_datatype_size(enum fi_datatype datatype)
{
	static const size_t size[FI_DATATYPE_LAST] = {
		[FI_INT8] = 1, [FI_UINT8] = 1, [FI_INT16] = 2, [FI_UINT16] = 2,
		[FI_INT32] = 4, [FI_UINT32] = 4, [FI_INT64] = 8, [FI_UINT64] = 8,
		[FI_FLOAT] = sizeof(float), [FI_DOUBLE] = sizeof(double),
		[FI_FLOAT_COMPLEX] = sizeof(float complex),
		[FI_DOUBLE_COMPLEX] = sizeof(double complex),
		[FI_LONG_DOUBLE] = sizeof(long double),
		[FI_LONG_DOUBLE_COMPLEX] = sizeof(long double complex),
	};

	return (unsigned) datatype < FI_DATATYPE_LAST ? size[datatype] : 0;
}

/* ld_real applies op to one long double: 1 if the swap (or op) applies. */
static int ld_real(int op, long double *x, long double y, long double c)
{
	switch (op) {
	case FI_MIN: if (y < *x) *x = y; return 1;
	case FI_MAX: if (y > *x) *x = y; return 1;
	case FI_SUM: *x += y; return 1;
	case FI_PROD: *x *= y; return 1;
	case FI_ATOMIC_WRITE: *x = y; return 1;
	case FI_CSWAP: if (c == *x) *x = y; return 1;
	case FI_CSWAP_NE: if (c != *x) *x = y; return 1;
	case FI_CSWAP_LE: if (c <= *x) *x = y; return 1;
	case FI_CSWAP_LT: if (c < *x) *x = y; return 1;
	case FI_CSWAP_GE: if (c >= *x) *x = y; return 1;
	case FI_CSWAP_GT: if (c > *x) *x = y; return 1;
	}
	return 0;
}

static int ld_complex(int op, long double complex *x, long double complex y, long double complex c)
{
	switch (op) {
	case FI_SUM: *x += y; return 1;
	case FI_PROD: *x *= y; return 1;
	case FI_ATOMIC_WRITE: *x = y; return 1;
	case FI_CSWAP: if (c == *x) *x = y; return 1;
	case FI_CSWAP_NE: if (c != *x) *x = y; return 1;
	}
	return 0;
}

int psm2_ld_apply(int op, int datatype, void *dst, const void *src, const void *cmp, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		if (datatype == FI_LONG_DOUBLE) {
			long double x, y, c = 0;
			size_t k = sizeof(x);

			memcpy(&x, (char *) dst + i * k, k);
			memcpy(&y, (const char *) src + i * k, k);
			if (cmp)
				memcpy(&c, (const char *) cmp + i * k, k);
			if (!ld_real(op, &x, y, c))
				return -1;
			memcpy((char *) dst + i * k, &x, k);
		} else if (datatype == FI_LONG_DOUBLE_COMPLEX) {
			long double complex x, y, c = 0;
			size_t k = sizeof(x);

			memcpy(&x, (char *) dst + i * k, k);
			memcpy(&y, (const char *) src + i * k, k);
			if (cmp)
				memcpy(&c, (const char *) cmp + i * k, k);
			if (!ld_complex(op, &x, y, c))
				return -1;
			memcpy((char *) dst + i * k, &x, k);
		} else {
			return -1;
		}
	}
	return 0;
}
