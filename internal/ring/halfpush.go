package ring

// HalfPush reserves a unit of len(cells)/CellPayload cells, as
// TryPushCells does, and publishes every cell but the first: what a
// producer killed in the middle of TryPushCells leaves behind. It exists
// for the tests of the repair (SkipDead) across processes, which need a
// real process to die holding a reservation; nothing else calls it.
func (r *Ring) HalfPush(cells []byte) error {
	n := uint64(len(cells) / CellPayload)
	if len(cells)%CellPayload != 0 || n < 2 || n > MaxPushCells || n > r.n {
		return ErrTooBig
	}
	pos, err := r.reserveN(n)
	if err != nil {
		return err
	}
	for k := n - 1; k > 0; k-- {
		r.publish(r.cellOff(pos+k), pos+k, cells[k*CellPayload:(k+1)*CellPayload])
	}
	return nil
}
