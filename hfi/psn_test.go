package hfi

import "testing"

// PSN arithmetic wraps at 2^31: the packet after the last PSN is 0, and
// order and distance hold across the wrap.
func TestPSNWraps(t *testing.T) {
	last := psn(psnMask)
	if last.plus(1) != 0 || last.plus(3) != 2 {
		t.Fatalf("plus across the wrap: %d %d", last.plus(1), last.plus(3))
	}
	if !last.before(2) || psn(2).before(last) {
		t.Error("order across the wrap")
	}
	if d := last.to(2); d != 3 {
		t.Errorf("distance across the wrap: %d", d)
	}
	if psn(5).before(5) || !psn(5).before(6) || psn(6).before(5) {
		t.Error("order")
	}
	// 2^30 away is the farthest "after"; one more reads as "before".
	if !psn(0).before(1<<30) || psn(0).before(1<<30+1) || !psn(1<<30+1).before(0) {
		t.Error("half-space boundary")
	}
}
