package clock

import (
	"testing"
	"time"
)

func TestManual(t *testing.T) {
	var m Manual
	a := m.Now()
	if a <= 0 {
		t.Fatalf("starts at %d", a)
	}
	m.Advance(3 * time.Millisecond)
	if d := m.Now() - a; d != int64(3*time.Millisecond) {
		t.Fatalf("advanced %d", d)
	}
}

func TestSystemMoves(t *testing.T) {
	a := System.Now()
	for System.Now() == a {
	}
	if System.Now() < a {
		t.Fatal("went back")
	}
}
