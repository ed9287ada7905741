/*
 * fi_trigger.h: triggered (deferred) operations -- the trigger conditions
 * passed in place of a struct fi_context, and the deferred-work requests
 * queued with FI_QUEUE_WORK.
 *
 * Matches the libfabric 1.17 ABI; written for the libfabric-psm2 project.
 */
#ifndef FI_TRIGGER_H
#define FI_TRIGGER_H

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_atomic.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What fires a triggered operation. */
enum fi_trigger_event {
	FI_TRIGGER_THRESHOLD = 0,	/* a counter reaching a threshold */
	FI_TRIGGER_XPU = 1		/* a device-side (GPU etc.) signal */
};

/* Kind of operation carried by a struct fi_deferred_work. */
enum fi_op_type {
	FI_OP_RECV = 0,
	FI_OP_SEND = 1,
	FI_OP_TRECV = 2,
	FI_OP_TSEND = 3,
	FI_OP_READ = 4,
	FI_OP_WRITE = 5,
	FI_OP_ATOMIC = 6,
	FI_OP_FETCH_ATOMIC = 7,
	FI_OP_COMPARE_ATOMIC = 8,
	FI_OP_CNTR_SET = 9,
	FI_OP_CNTR_ADD = 10
};

/* FI_TRIGGER_THRESHOLD: run once cntr reaches threshold. */
struct fi_trigger_threshold {
	struct fid_cntr *cntr;
	size_t threshold;
};

/* One device variable used by an FI_TRIGGER_XPU trigger. */
struct fi_trigger_var {
	enum fi_datatype datatype;
	int count;
	void *addr;
	union {
		uint8_t val8;
		uint16_t val16;
		uint32_t val32;
		uint64_t val64;
		uint8_t *data;
	} value;
};

/* FI_TRIGGER_XPU: device identity plus the variables it signals through. */
struct fi_trigger_xpu {
	int count;
	enum fi_hmem_iface iface;
	union {
		uint64_t reserved;
		int cuda;
		int ze;
	} device;
	struct fi_trigger_var *var;
};

/* Deferred operations, one per transfer class. */
struct fi_op_msg {
	struct fid_ep *ep;
	struct fi_msg msg;
	uint64_t flags;
};

struct fi_op_tagged {
	struct fid_ep *ep;
	struct fi_msg_tagged msg;
	uint64_t flags;
};

struct fi_op_rma {
	struct fid_ep *ep;
	struct fi_msg_rma msg;
	uint64_t flags;
};

struct fi_op_atomic {
	struct fid_ep *ep;
	struct fi_msg_atomic msg;
	uint64_t flags;
};

struct fi_op_fetch_atomic {
	struct fid_ep *ep;
	struct fi_msg_atomic msg;
	struct fi_msg_fetch fetch;
	uint64_t flags;
};

struct fi_op_compare_atomic {
	struct fid_ep *ep;
	struct fi_msg_atomic msg;
	struct fi_msg_fetch fetch;
	struct fi_msg_compare compare;
	uint64_t flags;
};

/* FI_OP_CNTR_SET / FI_OP_CNTR_ADD */
struct fi_op_cntr {
	struct fid_cntr *cntr;
	uint64_t value;
};

#ifdef FABRIC_DIRECT
#include <rdma/fi_direct_trigger.h>
#endif

#ifndef FABRIC_DIRECT_TRIGGER

/*
 * Passed as the context argument of a triggered call.  The two variants
 * are laid out to occupy exactly a struct fi_context / struct fi_context2.
 */
struct fi_triggered_context {
	enum fi_trigger_event event_type;
	union {
		struct fi_trigger_threshold threshold;
		struct fi_trigger_xpu xpu;
		void *internal[3];
	} trigger;
};

struct fi_triggered_context2 {
	enum fi_trigger_event event_type;
	union {
		struct fi_trigger_threshold threshold;
		struct fi_trigger_xpu xpu;
		void *internal[7];
	} trigger;
};

/* A request queued on a domain with fi_control(FI_QUEUE_WORK). */
struct fi_deferred_work {
	struct fi_context2 context;

	uint64_t threshold;
	struct fid_cntr *triggering_cntr;
	struct fid_cntr *completion_cntr;

	enum fi_op_type op_type;
	union {
		struct fi_op_msg *msg;
		struct fi_op_tagged *tagged;
		struct fi_op_rma *rma;
		struct fi_op_atomic *atomic;
		struct fi_op_fetch_atomic *fetch_atomic;
		struct fi_op_compare_atomic *compare_atomic;
		struct fi_op_cntr *cntr;
	} op;
};

#endif /* !FABRIC_DIRECT_TRIGGER */

#ifdef __cplusplus
}
#endif

#endif /* FI_TRIGGER_H */
