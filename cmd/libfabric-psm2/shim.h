/* shim.h: declarations shared by the C side of the libfabric-psm2 shim.
 *
 * The shim is what the ABI needs: exported entry points, static ops tables
 * and trampolines into Go (psm2go_*), which the data-path calls skip when
 * the C fast path (fast/fast.h) does the call whole. Objects handed to the
 * application are C structs whose first member is the libfabric fid, with
 * the Go handle of the object behind it. */
#ifndef PSM2_SHIM_H
#define PSM2_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_trigger.h>
#include <rdma/providers/fi_prov.h>
#include <rdma/providers/fi_log.h>

/* start.c: the Go runtime starts on the first call that needs it, and a
 * child forked after it started answers -FI_EOPNOTSUPP everywhere. */
extern int psm2_forked;
extern int psm2_go_started;
int psm2_go_enter_slow(const char *func);
void psm2_fork_refused(const char *func);
int psm2_log_warn_enabled(void);

/* For the entry points that come before any fid (fi_getinfo, fi_fabric,
 * parameters, logging): start Go if it has not started; 0 or -FI_E*. */
static inline int psm2_go_enter(const char *func)
{
	if (__builtin_expect(__atomic_load_n(&psm2_go_started, __ATOMIC_ACQUIRE) &&
			     !psm2_forked, 1))
		return 0;
	return psm2_go_enter_slow(func);
}

/* The first line of every ops function reached through a fid: in a child
 * forked after the runtime started, answer ret without touching Go or the
 * parent's shared memory. */
#define PSM2_FORK_GUARD(ret) do {					\
		if (__builtin_expect(psm2_forked, 0)) {			\
			psm2_fork_refused(__func__);			\
			return (ret);					\
		}							\
	} while (0)

/* fid_fabric plus its Go object. */
struct psm2_fabric {
	struct fid_fabric fabric_fid;
	void *handle;
};

/*
 * The objects below the fabric. Each is the libfabric fid struct, then the
 * Go handle (newHandle/handleValue in handles.go: the control paths, open,
 * close, bind, control). Objects on the data path also carry a slot: their
 * index in Go's objTable, which the data path resolves without a lock.
 * Slot 0 is never used, so a zeroed struct resolves to nothing.
 */
struct psm2_domain {
	struct fid_domain domain_fid;
	void *handle;
	struct psm2_fabric *fabric;
};

struct psm2_av {
	struct fid_av av_fid;
	void *handle;
};

/* fid_av_set plus its Go object (coll.c). */
struct psm2_av_set {
	struct fid_av_set set_fid;
	void *handle;
};

/* fid_mc of a collective group: the endpoint that joined it (coll.c). */
struct psm2_mc {
	struct fid_mc mc_fid;
	struct psm2_ep *ep;
};

struct psm2_cq {
	struct fid_cq cq_fid;
	void *handle;
	uint32_t slot;		/* objTable.cq */
	int32_t wait_obj;	/* attr->wait_obj, for FI_GETWAITOBJ */
	uint64_t spin_ns;	/* fi_cq_sread polls this long first (FI_PSM2_SREAD_SPIN) */
	/* The idle fast path (provider/fastpath.go): entries queued at +0,
	 * the domain block's address at +8. NULL: always call Go. */
	const uint64_t *fast;
	/* Idle answers given in C in a row, and since when (cq.c). */
	uint32_t idle_polls;
	uint64_t idle_since;
	/* Yielding when idle (cq.c): empty answers in a row (from C or
	 * Go), ns of them before a yield at the least (FI_PSM2_YIELD_SPIN;
	 * 0: never) and now, and when the stretch being timed began (set at
	 * its first clock reading, the YIELD_CLOCK_EVERY-th empty answer in
	 * a row). */
	uint32_t empty_polls;
	uint64_t yield_ns;
	uint64_t yield_next;
	uint64_t yield_from;
	/* Whether more threads were runnable than CPUs, and until when
	 * that answer holds; the least spin before a yield now: yield_ns,
	 * or less where the job's own ranks outnumber the CPUs (cq.c),
	 * which own_crowd says. */
	uint64_t crowd_until;
	uint64_t yield_least;
	int32_t crowded;
	int32_t own_crowd;
	/* When a stretch of empty answers last saw this thread lose its
	 * CPU for more than PREEMPT_GAP_NS (cq.c; 0: never): what a nap
	 * waits for besides the crowd. */
	uint64_t preempted_at;
	/* Moving off a CPU shared with the peer (cq.c cq_unshare): the
	 * clock at the last check of a stretch of empty answers (0: none
	 * yet), the last move tried, the earliest next one and the wait
	 * between them. */
	uint64_t poll_clock;
	uint64_t unshare_tried;
	uint64_t unshare_after;
	uint64_t unshare_wait;
	/* The last read went to Go and returned entries (cq.c). */
	int32_t after_go_entries;
};

struct psm2_cntr {
	struct fid_cntr cntr_fid;
	void *handle;
	uint32_t slot;		/* objTable.cntr */
	int32_t wait_obj;
};

struct psm2_eq {
	struct fid_eq eq_fid;
	void *handle;
	void *err_data;		/* err_data handed out by the last readerr (malloc) */
	uint32_t api_version;	/* the fabric's */
};

struct psm2_wait {
	struct fid_wait wait_fid;
	void *handle;
};

struct psm2_poll {
	struct fid_poll poll_fid;
	void *handle;
};

struct psm2_stx {
	struct fid_stx stx_fid;
	void *handle;
};

struct psm2_mr {
	struct fid_mr mr_fid;
	void *handle;
};

/*
 * An endpoint, or an alias of one (fi_ep_alias). An alias is a copy of the
 * endpoint's struct with its own op flags and base pointing at the
 * endpoint; it shares the handle and slot. The endpoint counts its open
 * aliases and cannot be closed while any is open (-FI_EBUSY).
 */
struct psm2_ep {
	struct fid_ep ep_fid;
	void *handle;
	uint32_t slot;		/* objTable.ep */
	int32_t aliases;	/* open aliases (atomic), on the endpoint itself */
	uint64_t tx_op_flags;	/* fid op flags: sends without explicit flags */
	uint64_t rx_op_flags;	/* receives without explicit flags */
	uint64_t *fast;		/* the fast path's endpoint page (fast/), or NULL */
	struct psm2_ep *base;	/* NULL for an endpoint, the endpoint for an alias */
};

/* A scalable endpoint (sep.c, provider/sep.go): an endpoint struct of
 * class FI_CLASS_SEP whose handle is the Go SEP and whose slot is 0 (its
 * own data calls fail), and its n contexts, each an endpoint that the
 * application reaches through aliases of class FI_CLASS_TX_CTX or
 * FI_CLASS_RX_CTX (fi_tx_context, fi_rx_context). */
struct psm2_sep {
	struct psm2_ep ep;
	int32_t n;
	struct psm2_ep **ctx;
};

/* Context roles, as provider.RoleTx and RoleRx. */
#define PSM2_ROLE_TX 1
#define PSM2_ROLE_RX 2

struct psm2_sep *psm2_sep_new(void *context, int32_t n);
void psm2_ep_data_ops(struct fid_ep *dst);
int psm2_ep_alias(struct psm2_ep *e, size_t fclass, uint64_t flags, void *context,
		  struct fid **out);
extern struct fi_ops psm2_sep_fi_ops;

/* Ops tables shared by the link modes. */
extern struct fi_ops psm2_nic_ops;
extern struct fi_ops psm2_fabric_fi_ops;
extern struct fi_ops_fabric psm2_fabric_ops;

/* Constructors: calloc'd, fid class, context and ops set; NULL on ENOMEM.
 * Released with free(). */
struct psm2_domain *psm2_domain_new(struct psm2_fabric *fabric, void *context);
struct psm2_av *psm2_av_new(void *context);
struct psm2_cq *psm2_cq_new(void *context, int32_t wait_obj);
struct psm2_cntr *psm2_cntr_new(void *context, int32_t wait_obj);
struct psm2_eq *psm2_eq_new(void *context, uint32_t api_version);
struct psm2_wait *psm2_wait_new(void);
struct psm2_poll *psm2_poll_new(void);
struct psm2_stx *psm2_stx_new(void *context);
struct psm2_mr *psm2_mr_new(void *context, uint64_t key);
struct psm2_ep *psm2_ep_new(void *context);

/* The Go handle behind any fid of ours (NULL for a fid that is not one:
 * the class says which struct it is, the ops table proves it is ours). */
void *psm2_fid_handle(const struct fid *fid);

/* FI_GETWAIT's answer for an object whose wait object is fd: an int, or
 * for FI_WAIT_POLLFD a struct fi_wait_pollfd holding that one fd. */
int psm2_getwait_out(int32_t wait_obj, int fd, void *arg);

/* Thread-local buffer for the *_strerror calls given no buffer. */
char *psm2_strerror_buf(size_t *len);

/* Stubs for unsupported ops slots. */
int psm2_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int psm2_no_control(struct fid *fid, int command, void *arg);
int psm2_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen);
int psm2_no_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen);
int psm2_no_listen(struct fid_pep *pep);
int psm2_no_accept(struct fid_ep *ep, const void *param, size_t paramlen);
int psm2_no_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen);
int psm2_no_shutdown(struct fid_ep *ep, uint64_t flags);
int psm2_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		     void **ops, void *context);
int psm2_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		    void *ops, void *context);

/* retire.c: a closed object's struct: its ops fail with -FI_EINVAL, the
 * bytes from keep to size are zeroed, and it is freed only after
 * RETIRED_MAX later closes (instead of free()). keep is the size of the
 * libfabric fid struct it starts with. */
extern struct fi_ops psm2_closed_fi_ops;
void psm2_retire(struct fid *fid, size_t keep, size_t size);
extern struct fi_ops_collective psm2_collective_ops;
struct psm2_av_set *psm2_av_set_new(void *context);
int psm2_join_collective(struct psm2_ep *ep, const void *addr, struct fid_mc **mc, void *context);

/* Info memory, the same in both link modes (malloc'd, freed with free). */
void psm2_freeinfo(struct fi_info *info);
struct fi_info *psm2_dupinfo(const struct fi_info *info);
struct fid_nic *psm2_nic_new(void);
void psm2_nic_free(struct fid_nic *nic);

/* cntr.c: the counter and threshold of a triggered call's context. */
int psm2_trigger_cntr(void *ctx, struct psm2_cntr **cntr, uint64_t *threshold);

/* atomic.c: the size of a datatype (0: none), and the long double ops Go
 * cannot do itself (provider.LongDoubleApply): 0 done, -1 not an op for
 * the type. ep.c: fi_query_atomic. */
size_t psm2_datatype_size(enum fi_datatype datatype);
int psm2_ld_apply(int op, int datatype, void *dst, const void *src, const void *cmp, size_t count);
int psm2_query_atomic(enum fi_datatype datatype, enum fi_op op, struct fi_atomic_attr *attr,
		      uint64_t flags);

/* Buffer helper: append s to buf (capacity len), always NUL-terminated. */
void psm2_strncat(char *buf, size_t len, const char *s);

#endif
