/* atomic.c: fi_atomic*, fi_fetch_atomic* and fi_compare_atomic* for every
 * op and datatype, between two endpoints of this process and to oneself.
 *
 * fi_*atomicvalid must accept exactly psm2's table of (op, datatype) pairs
 * (psm2 itself accepts some its target refuses; we do not). For each pair
 * it accepts, node a runs the op on 5 elements of node b's region, and the
 * test computes what the region (and the fetched old values) must hold
 * with the same C types. Then:
 * a count far past psm2's 8 KiB chunk, the vectored and msg forms, the
 * answers of fi_query_atomic, and the errors (a bad key, a read-only
 * region, unknown ops and types, NULL arguments). */
#include <complex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include "check.h"
#include "node.h"

#define N 5
#define BIG 5000

static struct ct_node a, b;
static fi_addr_t a2b;
static uint8_t *region;
static struct fid_mr *mr, *mr_ro;
static uint64_t key, key_ro;

static const size_t dsize[FI_DATATYPE_LAST] = {
	1, 1, 2, 2, 4, 4, 8, 8, sizeof(float), sizeof(double), sizeof(float complex),
	sizeof(double complex), sizeof(long double), sizeof(long double complex),
};

static int is_int(int dt) { return dt <= FI_UINT64; }
static int is_cplx(int dt) { return dt == FI_FLOAT_COMPLEX || dt == FI_DOUBLE_COMPLEX || dt == FI_LONG_DOUBLE_COMPLEX; }

/* pair_ok: does op apply to dt (psm2's table)? */
static int pair_ok(int dt, int op)
{
	switch (op) {
	case FI_MIN: case FI_MAX: case FI_CSWAP_LE: case FI_CSWAP_LT: case FI_CSWAP_GE: case FI_CSWAP_GT:
		return !is_cplx(dt);
	case FI_LOR: case FI_LAND: case FI_BOR: case FI_BAND: case FI_LXOR: case FI_BXOR: case FI_MSWAP:
		return is_int(dt);
	}
	return 1;
}

/* Values: small numbers every type holds exactly, different per element. */
#define SETV(T, p, i, v) (((T *) (p))[i] = (T) (v))

static void set(int dt, void *p, int i, int v)
{
	switch (dt) {
	case FI_INT8: SETV(int8_t, p, i, v); break;
	case FI_UINT8: SETV(uint8_t, p, i, v); break;
	case FI_INT16: SETV(int16_t, p, i, v); break;
	case FI_UINT16: SETV(uint16_t, p, i, v); break;
	case FI_INT32: SETV(int32_t, p, i, v); break;
	case FI_UINT32: SETV(uint32_t, p, i, v); break;
	case FI_INT64: SETV(int64_t, p, i, v); break;
	case FI_UINT64: SETV(uint64_t, p, i, v); break;
	case FI_FLOAT: SETV(float, p, i, v); break;
	case FI_DOUBLE: SETV(double, p, i, v); break;
	case FI_FLOAT_COMPLEX: ((float complex *) p)[i] = v + 2.0f * I; break;
	case FI_DOUBLE_COMPLEX: ((double complex *) p)[i] = v + 3.0 * I; break;
	case FI_LONG_DOUBLE: SETV(long double, p, i, v); break;
	case FI_LONG_DOUBLE_COMPLEX: ((long double complex *) p)[i] = v + 4.0L * I; break;
	}
}

/* The expected result of op on one element, by type. */
#define REAL_OP(T)                                                             \
	static void ref_##T(int op, T *x, T y, T c)                            \
	{                                                                      \
		switch (op) {                                                  \
		case FI_MIN: if (y < *x) *x = y; break;                       \
		case FI_MAX: if (y > *x) *x = y; break;                       \
		case FI_SUM: *x += y; break;                                   \
		case FI_PROD: *x *= y; break;                                  \
		case FI_ATOMIC_WRITE: *x = y; break;                           \
		case FI_CSWAP: if (c == *x) *x = y; break;                    \
		case FI_CSWAP_NE: if (c != *x) *x = y; break;                 \
		case FI_CSWAP_LE: if (c <= *x) *x = y; break;                 \
		case FI_CSWAP_LT: if (c < *x) *x = y; break;                  \
		case FI_CSWAP_GE: if (c >= *x) *x = y; break;                 \
		case FI_CSWAP_GT: if (c > *x) *x = y; break;                  \
		}                                                              \
	}
#define INT_OP(T)                                                              \
	REAL_OP(T)                                                             \
	static void refi_##T(int op, T *x, T y, T c)                           \
	{                                                                      \
		switch (op) {                                                  \
		case FI_LOR: *x = *x || y; break;                             \
		case FI_LAND: *x = *x && y; break;                            \
		case FI_BOR: *x |= y; break;                                  \
		case FI_BAND: *x &= y; break;                                 \
		case FI_LXOR: *x = (*x != 0) != (y != 0); break;              \
		case FI_BXOR: *x ^= y; break;                                 \
		case FI_MSWAP: *x = (y & c) | (*x & ~c); break;               \
		default: ref_##T(op, x, y, c);                                 \
		}                                                              \
	}
#define CPLX_OP(T)                                                             \
	static void refc_##T(int op, T *x, T y, T c)                           \
	{                                                                      \
		switch (op) {                                                  \
		case FI_SUM: *x += y; break;                                   \
		case FI_PROD: *x *= y; break;                                  \
		case FI_ATOMIC_WRITE: *x = y; break;                           \
		case FI_CSWAP: if (c == *x) *x = y; break;                    \
		case FI_CSWAP_NE: if (c != *x) *x = y; break;                 \
		}                                                              \
	}
typedef long double ldouble;
typedef float complex fcplx;
typedef double complex dcplx;
typedef long double complex lcplx;
INT_OP(int8_t) INT_OP(uint8_t) INT_OP(int16_t) INT_OP(uint16_t)
INT_OP(int32_t) INT_OP(uint32_t) INT_OP(int64_t) INT_OP(uint64_t)
REAL_OP(float) REAL_OP(double) REAL_OP(ldouble)
CPLX_OP(fcplx) CPLX_OP(dcplx) CPLX_OP(lcplx)

#define REF(F, T, op, x, y, c, i) F(op, &((T *) (x))[i], ((T *) (y))[i], c ? ((T *) (c))[i] : 0)

static void ref(int dt, int op, void *x, const void *y, const void *c, int n)
{
	if (op == FI_ATOMIC_READ)
		return;
	for (int i = 0; i < n; i++) {
		switch (dt) {
		case FI_INT8: REF(refi_int8_t, int8_t, op, x, y, c, i); break;
		case FI_UINT8: REF(refi_uint8_t, uint8_t, op, x, y, c, i); break;
		case FI_INT16: REF(refi_int16_t, int16_t, op, x, y, c, i); break;
		case FI_UINT16: REF(refi_uint16_t, uint16_t, op, x, y, c, i); break;
		case FI_INT32: REF(refi_int32_t, int32_t, op, x, y, c, i); break;
		case FI_UINT32: REF(refi_uint32_t, uint32_t, op, x, y, c, i); break;
		case FI_INT64: REF(refi_int64_t, int64_t, op, x, y, c, i); break;
		case FI_UINT64: REF(refi_uint64_t, uint64_t, op, x, y, c, i); break;
		case FI_FLOAT: REF(ref_float, float, op, x, y, c, i); break;
		case FI_DOUBLE: REF(ref_double, double, op, x, y, c, i); break;
		case FI_LONG_DOUBLE: REF(ref_ldouble, ldouble, op, x, y, c, i); break;
		case FI_FLOAT_COMPLEX: REF(refc_fcplx, fcplx, op, x, y, c, i); break;
		case FI_DOUBLE_COMPLEX: REF(refc_dcplx, dcplx, op, x, y, c, i); break;
		case FI_LONG_DOUBLE_COMPLEX: REF(refc_lcplx, lcplx, op, x, y, c, i); break;
		}
	}
}

/* same compares n elements by value (long double's padding bytes are not
 * part of it). */
static int same(int dt, const void *x, const void *y, int n)
{
	for (int i = 0; i < n; i++) {
		if (dt == FI_LONG_DOUBLE) {
			if (((const long double *) x)[i] != ((const long double *) y)[i])
				return 0;
		} else if (dt == FI_LONG_DOUBLE_COMPLEX) {
			if (((const long double complex *) x)[i] != ((const long double complex *) y)[i])
				return 0;
		} else if (memcmp((const char *) x + i * dsize[dt], (const char *) y + i * dsize[dt], dsize[dt])) {
			return 0;
		}
	}
	return 1;
}

static int wait_tx(void)
{
	return ct_wait_one(&a, &b, NULL, NULL);
}

/* one runs kind (0 atomic, 1 fetch, 2 compare) of op on dt. */
static void one(int kind, int dt, int op)
{
	long double complex init[N], opnd[N], cmpv[N], want[N], old[N];
	size_t count = 0, sz = dsize[dt];
	int valid, ret;

	valid = kind == 0 ? fi_atomicvalid(a.ep, dt, op, &count) :
		kind == 1 ? fi_fetch_atomicvalid(a.ep, dt, op, &count) :
			    fi_compare_atomicvalid(a.ep, dt, op, &count);
	{
		int want = pair_ok(dt, op) &&
			   (kind == 2 ? op >= FI_CSWAP : op <= FI_BXOR || op == FI_ATOMIC_WRITE ||
							 (kind == 1 && op == FI_ATOMIC_READ));

		CHECK(want ? valid == 0 : valid == -FI_EOPNOTSUPP, "valid(%d/%d/%d) = %d", kind, dt, op, valid);
	}
	if (valid)
		return;
	CHECK(count == 8128 / (kind == 2 ? 2 * sz : sz), "count %zu for %d/%d/%d", count, kind, dt, op);
	for (int i = 0; i < N; i++) {
		set(dt, init, i, 10 + i);
		set(dt, opnd, i, i + 1);
		set(dt, cmpv, i, (i % 2) ? 10 + i : 7); /* some compares hit */
	}
	if (is_int(dt) && op == FI_MSWAP)
		for (int i = 0; i < N; i++)
			set(dt, cmpv, i, 0x5);
	memcpy(region, init, N * sz);
	memcpy(want, init, N * sz);
	memset(old, 0, sizeof(old));
	if (kind == 0)
		ret = fi_atomic(a.ep, opnd, N, NULL, a2b, 0, key, dt, op, NULL);
	else if (kind == 1)
		ret = fi_fetch_atomic(a.ep, opnd, N, NULL, old, NULL, a2b, 0, key, dt, op, NULL);
	else
		ret = fi_compare_atomic(a.ep, opnd, N, NULL, cmpv, NULL, old, NULL, a2b, 0, key, dt, op, NULL);
	CHECK(ret == 0, "post %d/%d/%d: %d", kind, dt, op, ret);
	if (ret)
		return;
	ret = wait_tx();
	CHECK(ret == 0, "%d/%d/%d completes: %d", kind, dt, op, ret);
	ref(dt, op, want, opnd, kind == 2 ? cmpv : NULL, N);
	CHECK(same(dt, region, want, N), "%d/%d/%d: the region holds the result", kind, dt, op);
	if (kind)
		CHECK(same(dt, old, init, N), "%d/%d/%d: the old values came back", kind, dt, op);
}

static void every_op(void)
{
	for (int kind = 0; kind < 3; kind++)
		for (int dt = 0; dt < FI_DATATYPE_LAST; dt++)
			for (int op = 0; op < FI_ATOMIC_OP_LAST; op++)
				one(kind, dt, op);
}

static void big_and_forms(void)
{
	static uint64_t opnd[BIG], old[BIG], cmpv[BIG];
	uint64_t *r = (uint64_t *) region;
	struct fi_ioc iov[2] = { { opnd, 3 }, { opnd + 3, 2 } }, res[2] = { { old, 4 }, { old + 4, 1 } };
	struct fi_ioc cv[1] = { { cmpv, 5 } };
	struct fi_rma_ioc rio = { .addr = 0, .count = 5, .key = key };
	struct fi_msg_atomic m = { .msg_iov = iov, .iov_count = 2, .addr = a2b, .rma_iov = &rio,
				   .rma_iov_count = 1, .datatype = FI_UINT64, .op = FI_SUM };
	int ret, bad = 0;

	for (int i = 0; i < BIG; i++)
		r[i] = i, opnd[i] = 2 * i;
	ret = fi_fetch_atomic(a.ep, opnd, BIG, NULL, old, NULL, a2b, 0, key, FI_UINT64, FI_SUM, NULL);
	CHECK(ret == 0 && (ret = wait_tx()) == 0, "fetch_atomic of %d elements: %d", BIG, ret);
	for (int i = 0; i < BIG; i++)
		bad += r[i] != (uint64_t) 3 * i || old[i] != (uint64_t) i;
	CHECK(bad == 0, "%d of %d elements wrong", bad, BIG);

	for (int i = 0; i < 5; i++)
		r[i] = 100, opnd[i] = i, cmpv[i] = 100;
	ret = fi_atomicv(a.ep, iov, NULL, 2, a2b, 0, key, FI_UINT64, FI_SUM, NULL);
	CHECK(ret == 0 && wait_tx() == 0 && r[4] == 104, "atomicv: %d", ret);
	ret = fi_atomicmsg(a.ep, &m, 0);
	CHECK(ret == 0 && wait_tx() == 0 && r[4] == 108, "atomicmsg: %d", ret);
	ret = fi_fetch_atomicmsg(a.ep, &m, res, NULL, 2, 0);
	CHECK(ret == 0 && wait_tx() == 0 && r[4] == 112 && old[4] == 108, "fetch_atomicmsg: %d", ret);
	m.op = FI_CSWAP;
	for (int i = 0; i < 5; i++)
		cmpv[i] = r[i];
	ret = fi_compare_atomicmsg(a.ep, &m, cv, NULL, 1, res, NULL, 2, 0);
	CHECK(ret == 0 && wait_tx() == 0 && r[0] == 0 && r[4] == 4 && old[4] == 112, "compare_atomicmsg: %d", ret);
	ret = fi_inject_atomic(a.ep, opnd, 1, a2b, 8, key, FI_UINT64, FI_SUM);
	CHECK(ret == 0, "inject_atomic: %d", ret);
	ret = fi_fetch_atomic(a.ep, NULL, 1, NULL, old, NULL, a2b, 8, key, FI_UINT64, FI_ATOMIC_READ, NULL);
	CHECK(ret == 0 && wait_tx() == 0 && old[0] == 1 + 0, "atomic read after inject: %d %lu", ret,
	      (unsigned long) old[0]);
	/* An atomic read's operand may be NULL in the msg form too, with or
	 * without an iov array (MPICH's MPI_Fetch_and_op(MPI_NO_OP)). */
	{
		struct fi_ioc nio = { NULL, 2 };
		struct fi_ioc rres = { old, 2 };
		struct fi_rma_ioc rr = { .addr = 0, .count = 2, .key = key };
		struct fi_msg_atomic rm = { .msg_iov = &nio, .iov_count = 1, .addr = a2b, .rma_iov = &rr,
					    .rma_iov_count = 1, .datatype = FI_UINT64, .op = FI_ATOMIC_READ };

		old[0] = old[1] = 77;
		ret = fi_fetch_atomicmsg(a.ep, &rm, &rres, NULL, 1, FI_DELIVERY_COMPLETE);
		CHECK(ret == 0 && wait_tx() == 0 && old[0] == r[0] && old[1] == r[1],
		      "fetch_atomicmsg ATOMIC_READ with a NULL operand: %d", ret);
		rm.msg_iov = NULL;
		rm.iov_count = 0;
		old[0] = old[1] = 77;
		ret = fi_fetch_atomicmsg(a.ep, &rm, &rres, NULL, 1, 0);
		CHECK(ret == 0 && wait_tx() == 0 && old[0] == r[0] && old[1] == r[1],
		      "fetch_atomicmsg ATOMIC_READ without an operand iov: %d", ret);
	}
}

static void queries_and_errors(void)
{
	struct fi_atomic_attr attr;
	uint64_t v = 1, old;
	size_t count;
	int ret;

	CHECK(fi_query_atomic(a.domain, FI_INT32, FI_SUM, &attr, 0) == 0 && attr.size == 4 && attr.count == 2032,
	      "query_atomic(INT32, SUM): size %zu count %zu", attr.size, attr.count);
	CHECK(fi_query_atomic(a.domain, FI_DOUBLE, FI_CSWAP, &attr, FI_COMPARE_ATOMIC) == 0 && attr.count == 508,
	      "query_atomic compare: count %zu", attr.count);
	CHECK(fi_query_atomic(a.domain, FI_DOUBLE, FI_ATOMIC_READ, &attr, FI_FETCH_ATOMIC) == 0,
	      "query_atomic fetch read");
	CHECK(fi_query_atomic(a.domain, FI_DOUBLE, FI_ATOMIC_READ, &attr, 0) == -FI_EOPNOTSUPP,
	      "query_atomic: ATOMIC_READ is not a write op");
	CHECK(fi_query_atomic(a.domain, FI_INT32, FI_SUM, &attr, FI_TAGGED) == -FI_EOPNOTSUPP,
	      "query_atomic with FI_TAGGED");
	CHECK(fi_query_atomic(a.domain, FI_INT32, FI_SUM, NULL, 0) == -FI_EINVAL, "query_atomic(NULL attr)");
	CHECK(fi_atomicvalid(a.ep, FI_FLOAT, FI_BOR, &count) == -FI_EOPNOTSUPP, "writevalid checks the pair");
	CHECK(fi_compare_atomicvalid(a.ep, FI_FLOAT, FI_MSWAP, &count) == -FI_EOPNOTSUPP,
	      "compwritevalid checks the pair");
	CHECK(fi_atomicvalid(a.ep, FI_DATATYPE_LAST, FI_SUM, &count) == -FI_EOPNOTSUPP, "an unknown datatype");
	CHECK(fi_atomicvalid(a.ep, FI_INT32, FI_CSWAP, &count) == -FI_EOPNOTSUPP, "CSWAP is not a write op");
	CHECK(fi_atomic(a.ep, &v, 1, NULL, a2b, 0, key, FI_INT32, FI_ATOMIC_OP_LAST, NULL) == -FI_EOPNOTSUPP,
	      "an unknown op is refused at once");
	CHECK(fi_atomic(a.ep, &v, 1, NULL, a2b, 0, key, 99, FI_SUM, NULL) == -FI_EOPNOTSUPP,
	      "an unknown datatype is refused at once");
	CHECK(fi_atomic(a.ep, NULL, 1, NULL, a2b, 0, key, FI_UINT64, FI_SUM, NULL) == -FI_EINVAL, "NULL operand");
	CHECK(fi_fetch_atomic(a.ep, &v, 1, NULL, NULL, NULL, a2b, 0, key, FI_UINT64, FI_SUM, NULL) == -FI_EINVAL,
	      "NULL result");
	CHECK(fi_atomicmsg(a.ep, NULL, 0) == -FI_EINVAL, "atomicmsg(NULL)");
	ret = fi_atomic(a.ep, &v, 1, NULL, a2b, 0, key + 77, FI_UINT64, FI_SUM, NULL);
	CHECK(ret == 0 && (ret = wait_tx()) == FI_EACCES, "a bad key fails EACCES (as any refused access): %d", ret);
	ret = fi_fetch_atomic(a.ep, &v, 1, NULL, &old, NULL, a2b, 0, key_ro, FI_UINT64, FI_SUM, NULL);
	CHECK(ret == 0 && (ret = wait_tx()) == FI_EACCES, "a fetch-add on a read-only region fails EACCES: %d", ret);
	ret = fi_fetch_atomic(a.ep, &v, 1, NULL, &old, NULL, a2b, 0, key_ro, FI_UINT64, FI_ATOMIC_READ, NULL);
	CHECK(ret == 0 && (ret = wait_tx()) == 0, "an atomic read of a read-only region works: %d", ret);
	ret = fi_atomic(a.ep, &v, 1, NULL, a2b, 1 << 20, key, FI_UINT64, FI_SUM, NULL);
	CHECK(ret == 0 && (ret = wait_tx()) == FI_EACCES, "past the region: EACCES: %d", ret);
}

static void latency(void)
{
	int iters = ct_under_valgrind() ? 20 : 2000;
	uint64_t v = 1, old;
	double t0 = ct_now();

	for (int i = 0; i < iters; i++) {
		fi_fetch_atomic(a.ep, &v, 1, NULL, &old, NULL, a2b, 0, key, FI_UINT64, FI_SUM, NULL);
		wait_tx();
	}
	printf("# 8-byte fetch-add: %.2f us\n", (ct_now() - t0) / iters * 1e6);
}

int main(void)
{
	int ret;

	region = calloc(1, 1 << 20);
	if ((ret = ct_open_node_caps(&a, FI_TAGGED | FI_ATOMIC)) ||
	    (ret = ct_open_node_caps(&b, FI_TAGGED | FI_ATOMIC))) {
		printf("FAIL opening the nodes: %d\n", ret);
		return 1;
	}
	CHECK(fi_av_insert(a.av, b.name, 1, &a2b, 0, NULL) == 1, "insert b");
	ret = fi_mr_reg(b.domain, region, 1 << 20, FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 5, 0, &mr, NULL);
	CHECK(ret == 0, "fi_mr_reg: %d", ret);
	ret = ret ? ret : fi_mr_reg(b.domain, region, 4096, FI_REMOTE_READ, 0, 6, 0, &mr_ro, NULL);
	CHECK(ret == 0, "fi_mr_reg read-only: %d", ret);
	if (ret)
		return finish("atomic");
	key = fi_mr_key(mr);
	key_ro = fi_mr_key(mr_ro);

	every_op();
	big_and_forms();
	queries_and_errors();
	latency();

	CHECK(fi_close(&mr->fid) == 0 && fi_close(&mr_ro->fid) == 0, "close the regions");
	ct_close_node(&a);
	ct_close_node(&b);
	free(region);
	return finish("atomic");
}
