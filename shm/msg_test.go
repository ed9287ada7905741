package shm

import (
	"encoding/binary"
	"fmt"

	"github.com/gopsm2/libfabric-psm2/internal/ring"
)

// The test payload of internal/ring's tests, for the segment tests that
// push through a segment's ring: one cell that names (producer, seq) in
// every byte, so a torn or misplaced cell is caught.

// msg builds a full payload that identifies (producer, seq) in every byte.
func msg(producer, seq uint64) []byte {
	b := make([]byte, ring.CellPayload)
	fillMsg(b, producer, seq)
	return b
}

func fillMsg(b []byte, producer, seq uint64) {
	binary.LittleEndian.PutUint64(b[0:], producer)
	binary.LittleEndian.PutUint64(b[8:], seq)
	for i := 16; i < ring.CellPayload; i++ {
		b[i] = byte(seq) + byte(i)
	}
}

// checkMsg decodes a payload built by fillMsg and verifies its filler.
func checkMsg(b []byte) (producer, seq uint64, err error) {
	if len(b) != ring.CellPayload {
		return 0, 0, fmt.Errorf("payload of %d bytes, want %d", len(b), ring.CellPayload)
	}
	producer = binary.LittleEndian.Uint64(b[0:])
	seq = binary.LittleEndian.Uint64(b[8:])
	for i := 16; i < ring.CellPayload; i++ {
		if b[i] != byte(seq)+byte(i) {
			return producer, seq, fmt.Errorf("producer %d seq %d: byte %d is %#x, want %#x",
				producer, seq, i, b[i], byte(seq)+byte(i))
		}
	}
	return producer, seq, nil
}
