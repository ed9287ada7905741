package shm

import (
	"encoding/binary"

	"github.com/gopsm2/libfabric-psm2/internal/ring"
)

// The endpoint protocol's cells. Every message and control packet is one
// ring cell (CellPayload bytes), except an inline message longer than fits
// in one, which is a unit of consecutive cells pushed with TryPushCells: a
// head cell followed by continuation cells. Words are native-endian; all
// offsets are into the cell's payload (the 8-byte sequence word is the
// ring's).
//
// Every cell starts with the same 16 bytes:
//
//	0   u8   kind (cellInline ... cellData; 0 is never valid)
//	1   u8   flags: cellHasData for messages, a finStatus for cellFIN
//	         and cellData
//	2   u16  inline length (cellInline) or bounce buffer index (cellEager, cellData)
//	4   u32  the message header's Flags (messages only)
//	8   u64  the sender's endpoint id
//
// then, by kind:
//
//	cellInline  16 tag, 24 data if cellHasData, then the payload:
//	            32 bytes in the head cell (24 with data), 55 in each
//	            continuation
//	cellCont    0 kind, 1..55 payload (no common header)
//	cellEager   16 tag, 24 data, 32 length; the payload is in the sender's
//	            bounce buffer at index [2:4]
//	cellRTS     16 tag, 24 data, 32 length, 40 the sender's address of the
//	            data, 48 send id
//	cellFIN     16 send id; [1] is a finStatus
//	cellCTS     16 send id, 24 fetch id, 32 bytes wanted
//	cellData    16 fetch id, 24 offset, 32 length, 40 send id; the bytes are
//	            in the sender's bounce buffer at index [2:4]. With a
//	            nonzero finStatus in [1] (finSrcFault or finFailed) it
//	            carries nothing: the sender gave up streaming and the
//	            fetch fails. Such a cell has index noBuffer, offset and
//	            length 0, so a receiver that predates it drops it and
//	            releases no buffer.
//	cellSplit   16 send id, 24 split id (generation<<32 | slot of the
//	            receiver's split slots), 32 the receiver's address of the
//	            data, 40 bytes wanted, 48 chunk size (split.go)
//	cellAnswerBuf like cellEager, but the bounce buffer named is one of
//	            the receiver's own: the answer to an atomic request that
//	            came in it, whose old values the sender (the target,
//	            fast/serve.c: psm2_serve_one) wrote over the request; the
//	            receiver frees the buffer once it has them
//	cellTaken   written by the receiver, never sent: a cell of a message
//	            the C fast path delivered while an earlier one stayed at
//	            the head of the ring (fast/deliver.c, psm2_later_match);
//	            every cell of the message carries it, and the consumer
//	            passes over it
//
// Ids are (generation<<32 | slot) of a table in the process that made
// them; a stale or forged id fails the generation check and is dropped.
const (
	cellInline = 1 + iota
	cellCont
	cellEager
	cellRTS
	cellFIN
	cellCTS
	cellData
	cellSplit
	cellAnswerBuf
	cellTaken
)

// Offsets in a cell.
const (
	offCellKind   = 0
	offCellFlags  = 1
	offCellShort  = 2 // u16: inline length or buffer index
	offCellHFlags = 4
	offCellEPID   = 8
	offCellW2     = 16 // tag, or the first id of a control cell
	offCellW3     = 24 // data, or the second word of a control cell
	offCellW4     = 32 // length, or the third word
	offCellW5     = 40
	offCellW6     = 48

	// cellHasData says the message's Data word is present. Without it the
	// inline payload starts at offCellW3, 8 bytes earlier.
	cellHasData = 1
	// cellStream marks an eager cell pushed before its bounce buffer was
	// filled: the C fast path (cmd/libfabric-psm2/fast: send.c) copies a long message in chunks
	// and publishes the bytes filled in the sender's stream word
	// (offSegStream), so the receiver copies out while the sender copies
	// in. W5 holds the stream's number; the receiver waits for the
	// buffer to be full (or the word to name a later stream) before it
	// reads past what is filled.
	cellStream = 2
	// streamBroken in the stream word's low half: the sender's copy
	// faulted; the message is void (its send failed with FI_EFAULT).
	streamBroken = 0xffffffff

	// A C sender streams an eager message of streamMin bytes or more: it
	// pushes the cell once the first streamFirst bytes are in the bounce
	// buffer, then copies the rest in streamChunk pieces, publishing the
	// bytes filled after each. The two copies, each a line at a time from
	// the other core, overlap instead of adding up.
	streamMin   = 8192
	streamFirst = 4096
	streamChunk = 8192
	// From streamNTMin bytes the sender's stores are non-temporal: measured
	// between two cores here, a plain copy into a buffer the other core
	// read last costs 0.5 us at 8 KiB, 2 at 16 and 4.7 at 32 (each line
	// taken back from that core); around the caches, 0.2, 0.3 and 0.9, but
	// the reader then loads from memory (1.4, 1.5-1.9 and 2.2-3.0 against
	// 0.4, 0.6 and 1.0).
	streamNTMin = 16384
	// streamWaitNS is how long a C receiver waits for a stream's next
	// bytes before it leaves the message to Go (which waits with liveness
	// checks): a sender taken off its CPU.
	streamWaitNS = 2000000

	// inlineHead is the payload a head cell carries, without and with the
	// Data word; contPayload is what a continuation cell carries.
	inlineHead     = ring.CellPayload - offCellW3
	inlineHeadData = ring.CellPayload - offCellW4
	contPayload    = ring.CellPayload - offContPayload

	// FastInlineCells is the most cells the C fast path (send.c) puts in
	// one inline message it sends: up to 197 bytes (189 with CQ data).
	// Longer messages up to the eager threshold go, from C too, through
	// one of the sender's bounce buffers and one cell, and fi_cq_read
	// delivers both kinds in C. Each cell of a message is a line the
	// receiver must take from the sender's core, and a bounce buffer the
	// receiver copies with wide aligned loads: measured with fi_pingpong
	// -e rdm (pinned, best of 5, same run), 20 cells (1077 bytes) against
	// 4 cells: 256 B 0.31 -> 0.15-0.20 us, 1 KiB 0.49 -> 0.24 us (shm
	// 0.33); 2 and 4 cells were even at 64-200 B. Go's own sends keep
	// InlineCells (2 by default): its multi-cell path is slower than its
	// bounce buffer (BenchmarkEndpointPingPong).
	FastInlineCells = 4

	// A continuation cell has no common header: its kind, then payload.
	offContKind    = 0
	offContPayload = 1
)

// finStatus says how a rendezvous ended at the receiver (FIN), or why the
// sender stopped streaming one (DATA). The values are part of segment
// version 3: 0-2 were its first, 3-5 came later. A receiver that
// predates them never sends them, and a sender that predates them fails
// the send on any status but finOK and finTimeout, as it should. A status
// above finMax (a later version's) still fails the send, as a copy
// failure: a FIN is never dropped for it, or the send would wait for
// ever.
const (
	finOK        = 0 // fetched (possibly truncated) or discarded
	finTimeout   = 1 // the receiver gave up waiting for the data
	finSrcFault  = 2 // the sender's buffer could not be read
	finDstFault  = 3 // the receiver's buffer could not be written
	finBothFault = 4 // neither buffer was accessible
	finFailed    = 5 // the copy failed otherwise (ENOMEM, EINTR without end, ...)
	finMax       = finFailed

	// noBuffer is the bounce-buffer index of a DATA cell without data.
	noBuffer = 0xFFFF
)

// cell is the bytes of one cell's payload.
type cell = [ring.CellPayload]byte

func get16(b []byte, off int) uint16    { return binary.NativeEndian.Uint16(b[off:]) }
func get32(b []byte, off int) uint32    { return binary.NativeEndian.Uint32(b[off:]) }
func get64(b []byte, off int) uint64    { return binary.NativeEndian.Uint64(b[off:]) }
func put16(b []byte, off int, v uint16) { binary.NativeEndian.PutUint16(b[off:], v) }
func put32(b []byte, off int, v uint32) { binary.NativeEndian.PutUint32(b[off:], v) }
func put64(b []byte, off int, v uint64) { binary.NativeEndian.PutUint64(b[off:], v) }

// putCommon writes the 16 bytes every cell starts with.
func putCommon(b []byte, kind, flags byte, short uint16, hflags uint32, epid uint64) {
	b[offCellKind] = kind
	b[offCellFlags] = flags
	put16(b, offCellShort, short)
	put32(b, offCellHFlags, hflags)
	put64(b, offCellEPID, epid)
}

// inlineCells returns the number of cells an inline message of n bytes
// takes, with or without the Data word.
func inlineCells(n int, hasData bool) int {
	head := inlineHead
	if hasData {
		head = inlineHeadData
	}
	if n <= head {
		return 1
	}
	return 1 + (n-head+contPayload-1)/contPayload
}

// inlineMax returns the longest inline message that fits in cells cells.
func inlineMax(cells int, hasData bool) int {
	head := inlineHead
	if hasData {
		head = inlineHeadData
	}
	return head + (cells-1)*contPayload
}

// makeID and splitID build and take apart a split id (generation<<32 | split slot
// of the receiver's segment; split.go).
func makeID(gen uint32, slot int) uint64 { return uint64(gen)<<32 | uint64(uint32(slot)) }
func splitID(id uint64) (gen uint32, slot int) {
	return uint32(id >> 32), int(uint32(id))
}
