package shm

import (
	"github.com/gopsm2/libfabric-psm2/internal/cabi"
	"github.com/gopsm2/libfabric-psm2/internal/ring"
)

// CLayout lists the shm memory the C side reads and writes: the ring
// (ring.go, version 3), its cells as an inline send builds and a C
// delivery parses them (cell.go), the probe word (RingProbe) and the
// fast-peer descriptor (fastpeer.go), for cmd/libfabric-psm2/fast/layout.h.
func CLayout() []cabi.Group {
	return []cabi.Group{
		ring.CLayout(),
		{Title: "Memory", Source: "shm/sys_unsafe.go", Consts: []cabi.Const{
			cabi.Value("PAGE_BYTES", pageBytes, "the smallest page: a copy within one faults on its first byte or not at all"),
			cabi.Value("ALIAS_SPAN", aliasSpan, "a copy to 1..ALIAS_NEAR-1 bytes past its source modulo ALIAS_SPAN stalls"),
			cabi.Value("ALIAS_NEAR", aliasNear, ""),
		}},
		{Title: "Cells, bytes from the payload's start", Source: "shm/cell.go", Consts: []cabi.Const{
			cabi.Value("CELL_INLINE", cellInline, "kind: head cell of an inline message"),
			cabi.Value("CELL_CONT", cellCont, "kind: continuation cell"),
			cabi.Value("CELL_TAKEN", cellTaken, "kind: written by the receiver over every cell of a message C delivered out of ring order"),
			cabi.Value("CELL_EAGER", cellEager, "kind: a message in the sender's bounce buffer CELL_SHORT"),
			cabi.Value("CELL_RTS", cellRTS, "kind: a rendezvous request: length CELL_LEN at address CELL_W5, send id CELL_W6"),
			cabi.Value("CELL_FIN", cellFIN, "kind: a rendezvous ended at the receiver: send id CELL_TAG, status CELL_FLAGS"),
			cabi.Value("CELL_ANSWER_BUF", cellAnswerBuf, "kind: a message in the receiver's own bounce buffer CELL_SHORT (an atomic's answer)"),
			cabi.Value("CELL_HAS_DATA", cellHasData, "flag: the data word is present"),
			cabi.Value("CELL_STREAM", cellStream, "flag: an eager cell whose buffer the sender still fills (stream CELL_W5)"),
			cabi.Value("STREAM_BROKEN", streamBroken, "stream word, low half: the sender's copy faulted"),
			cabi.Value("STREAM_MIN", streamMin, "bytes: an eager message this long or longer is streamed"),
			cabi.Value("STREAM_FIRST", streamFirst, "bytes copied before the cell is pushed"),
			cabi.Value("STREAM_CHUNK", streamChunk, "bytes copied between stream word updates"),
			cabi.Value("STREAM_NT_MIN", streamNTMin, "bytes: from here the copy is non-temporal"),
			cabi.Value("STREAM_WAIT_NS", streamWaitNS, "a C receiver waits this long for progress"),
			cabi.Value("CELL_KIND", offCellKind, "uint8"),
			cabi.Value("CELL_FLAGS", offCellFlags, "uint8"),
			cabi.Value("CELL_SHORT", offCellShort, "uint16: inline length"),
			cabi.Value("CELL_HFLAGS", offCellHFlags, "uint32: message header flags (HF_*)"),
			cabi.Value("CELL_EPID", offCellEPID, "uint64: sender's endpoint id"),
			cabi.Value("CELL_TAG", offCellW2, "uint64"),
			cabi.Value("CELL_DATA", offCellW3, "uint64, with CELL_HAS_DATA"),
			cabi.Value("CELL_LEN", offCellW4, "uint64: an eager or rendezvous message's length"),
			cabi.Value("CELL_W5", offCellW5, "uint64: 0 in an eager cell, the sender's address in an RTS"),
			cabi.Value("CELL_W6", offCellW6, "uint64: 0 in an eager cell, the send id in an RTS"),
			cabi.Value("INLINE_HEAD", inlineHead, "payload bytes in a head cell without data"),
			cabi.Value("INLINE_HEAD_DATA", inlineHeadData, "... with the data word"),
			cabi.Value("CONT_KIND", offContKind, "in a continuation cell: its kind byte"),
			cabi.Value("CONT_PAYLOAD_OFF", offContPayload, "... then its payload"),
			cabi.Value("CONT_PAYLOAD", contPayload, "payload bytes in a continuation cell"),
			cabi.Value("PUSH_CELLS_MAX", ring.MaxPushCells, "cells of one unit (an inline message) at most"),
			cabi.Value("FAST_INLINE_CELLS", FastInlineCells, "cells of an inline message C sends, at most"),
			cabi.Value("HOLD_UNITS", holdUnits, "messages a ring's head may hold for receives not posted yet"),
			cabi.Value("TAKE_SPAN", takeSpan, "cells behind the head C takes a message out of ring order within"),
		}},
		{Title: "Fast-peer descriptor, words", Source: "shm/fastpeer.go", Consts: []cabi.Const{
			cabi.Word("FP_OK", fpOK, ""),
			cabi.Word("FP_RING", fpRing, ""),
			cabi.Word("FP_WAIT", fpWait, ""),
			cabi.Word("FP_SEQ", fpSeq, ""),
			cabi.Word("FP_STATE", fpState, ""),
			cabi.Word("FP_EPID", fpEPID, ""),
			cabi.Word("FP_SENT", fpSent, ""),
			cabi.Word("FP_FENCE", fpFence, ""),
			cabi.Word("FP_PEER", fpPeer, ""),
			cabi.Word("FP_MASK", fpMask, ""),
			cabi.Word("FP_SLOT", fpSlot, ""),
			cabi.Word("FP_EAGER_MAX", fpEagerMax, ""),
			cabi.Word("FP_BUSY", fpBusy, ""),
			cabi.Word("FP_BUFS", fpBufs, ""),
			cabi.Word("FP_BUF_SIZE", fpBufSize, ""),
			cabi.Word("FP_ALL_BUFS", fpAllBufs, ""),
			cabi.Word("FP_HOLDER", fpHolder, ""),
			cabi.Word("FP_IDX", fpIdx, ""),
			cabi.Word("FP_EAGER_SENT", fpEagerSent, ""),
			cabi.Word("FP_PEER_BUSY", fpPeerBusy, ""),
			cabi.Word("FP_PEER_BUFS", fpPeerBufs, ""),
			cabi.Word("FP_PEER_BUF_SIZE", fpPeerBufSz, ""),
			cabi.Word("FP_PEER_NBUFS", fpPeerNBufs, ""),
			cabi.Word("FP_PEER_PID", fpPeerPID, ""),
			cabi.Word("FP_RNDV_MAX", fpRndvMax, ""),
			cabi.Word("FP_RNDV_CMA", fpRndvCMA, ""),
			cabi.Word("FP_RNDV_ALONE", fpRndvAlone, ""),
			cabi.Word("FP_STREAM", fpStream, ""),
			cabi.Word("FP_PEER_STREAM", fpPeerStream, ""),
			cabi.Word("FP_SENT_BYTES", fpSentBytes, "bytes of the inline messages C sent"),
			cabi.Word("FP_EAGER_BYTES", fpEagerBytes, "bytes of the eager messages C sent"),
			cabi.Word("FP_FETCH_BYTES", fpFetchBytes, "bytes of the rendezvous C fetched"),
			cabi.Value("FP_SIZE", FastPeerSize, "bytes of a descriptor"),
		}},
	}
}
