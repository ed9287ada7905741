//go:build amd64 && !race

#include "textflag.h"

// func StoreRel64(p *uint64, v uint64)
// A plain 64-bit MOV: on x86-TSO stores are not reordered with earlier
// loads or stores, which is release ordering. The compiler does not move
// memory accesses across a call into assembly.
TEXT ·StoreRel64(SB), NOSPLIT, $0-16
	MOVQ	p+0(FP), AX
	MOVQ	v+8(FP), BX
	MOVQ	BX, (AX)
	RET

// func StoreRel32(p *uint32, v uint32)
TEXT ·StoreRel32(SB), NOSPLIT, $0-12
	MOVQ	p+0(FP), AX
	MOVL	v+8(FP), BX
	MOVL	BX, (AX)
	RET
