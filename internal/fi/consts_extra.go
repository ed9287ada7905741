package fi

// Deferred operation types (enum fi_op_type, fi_trigger.h), the values
// printed for TYPE_OP_TYPE.
const (
	OP_RECV int32 = iota
	OP_SEND
	OP_TRECV
	OP_TSEND
	OP_READ
	OP_WRITE
	OP_ATOMIC
	OP_FETCH_ATOMIC
	OP_COMPARE_ATOMIC
	OP_CNTR_SET
	OP_CNTR_ADD
)

// SHARED_CONTEXT is FI_SHARED_CONTEXT (SIZE_MAX), the tx_ctx_cnt and
// rx_ctx_cnt value of an endpoint that uses shared contexts.
const SHARED_CONTEXT = ^uint64(0)
