package shm

import "github.com/gopsm2/libfabric-psm2/internal/cabi"

// CLayout lists the shm memory the C side reads and writes: the ring
// (ring.go, version 3), its cells as an inline send builds and a C
// delivery parses them (cell.go), the probe word (RingProbe) and the
// fast-peer descriptor (fastpeer.go), for cmd/libfabric-psm2/layout.h.
func CLayout() []cabi.Group {
	b := func(name string, v int, doc string) cabi.Const {
		return cabi.Const{Name: name, Value: uint64(v), Doc: doc}
	}
	w := func(name string, off int, doc string) cabi.Const {
		return cabi.Const{Name: name, Value: uint64(off / 8), Doc: doc}
	}
	return []cabi.Group{
		{Title: "Ring, bytes", Source: "shm/ring.go", Consts: []cabi.Const{
			b("RING_PROD", offRingProd, "uint64: producers' reservation counter"),
			b("RING_SEEN", offRingSeen, "uint64: producers' copy of cons"),
			b("RING_CONS", offRingCons, "uint64: consumer counter"),
			b("RING_HDR", ringHeaderSize, "cell i starts at RING_HDR + i*CELL_SIZE"),
			b("CELL_SIZE", CellSize, ""),
			b("CELL_SEQ", offCellSeq, "in a cell: the uint64 sequence word"),
			b("CELL_PAYLOAD_OFF", offCellPayload, "in a cell: where the payload starts"),
			b("CELL_PAYLOAD", CellPayload, "payload bytes in a cell"),
			b("PROBE_LOG2_MASK", ProbeLog2Mask, "probe word: log2 of the cell count; the rest is the ring"),
			w("SLOT_POS", 0, "a producer slot, from its pos word (FP_SLOT): first position reserved"),
			w("SLOT_N", offSlotN-offSlotPos, "... its number of cells"),
		}},
		{Title: "Cells, bytes from the payload's start", Source: "shm/cell.go", Consts: []cabi.Const{
			b("CELL_INLINE", cellInline, "kind: head cell of an inline message"),
			b("CELL_CONT", cellCont, "kind: continuation cell"),
			b("CELL_HAS_DATA", cellHasData, "flag: the data word is present"),
			b("CELL_KIND", offCellKind, "uint8"),
			b("CELL_FLAGS", offCellFlags, "uint8"),
			b("CELL_SHORT", offCellShort, "uint16: inline length"),
			b("CELL_HFLAGS", offCellHFlags, "uint32: message header flags (HF_*)"),
			b("CELL_EPID", offCellEPID, "uint64: sender's endpoint id"),
			b("CELL_TAG", offCellW2, "uint64"),
			b("CELL_DATA", offCellW3, "uint64, with CELL_HAS_DATA"),
			b("INLINE_HEAD", inlineHead, "payload bytes in a head cell without data"),
			b("INLINE_HEAD_DATA", inlineHeadData, "... with the data word"),
			b("CONT_KIND", offContKind, "in a continuation cell: its kind byte"),
			b("CONT_PAYLOAD_OFF", offContPayload, "... then its payload"),
			b("CONT_PAYLOAD", contPayload, "payload bytes in a continuation cell"),
			b("PUSH_CELLS_MAX", MaxPushCells, "cells of one unit (an inline message) at most"),
			b("FAST_INLINE_CELLS", FastInlineCells, "cells of an inline message C sends, at most"),
		}},
		{Title: "Fast-peer descriptor, words", Source: "shm/fastpeer.go", Consts: []cabi.Const{
			w("FP_OK", fpOK, ""),
			w("FP_RING", fpRing, ""),
			w("FP_WAIT", fpWait, ""),
			w("FP_SEQ", fpSeq, ""),
			w("FP_STATE", fpState, ""),
			w("FP_EPID", fpEPID, ""),
			w("FP_SENT", fpSent, ""),
			w("FP_FENCE", fpFence, ""),
			w("FP_PEER", fpPeer, ""),
			w("FP_MASK", fpMask, ""),
			w("FP_SLOT", fpSlot, ""),
		}},
	}
}
