package sys

import (
	"os/exec"
	"testing"
)

// TestProcIdentityGone: a live process is not gone, a zombie (killed, not
// reaped) is, and so is a live pid whose start time differs from the
// recorded one (the pid was reused).
func TestProcIdentityGone(t *testing.T) {
	me := SelfIdentity()
	if me.Start == 0 || me.Gone() {
		t.Fatalf("this process: %+v gone=%v", me, me.Gone())
	}
	if (ProcIdentity{PID: me.PID, Start: me.Start + 1}).Gone() != true {
		t.Error("a reused pid (other start time) is not gone")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	start, _, err := ProcStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	id := ProcIdentity{PID: cmd.Process.Pid, Start: start}
	if id.Gone() {
		t.Error("a live child is gone")
	}
	_ = cmd.Process.Kill()
	// Not reaped yet: a zombie, which kill(pid, 0) still finds.
	for i := 0; !id.Gone(); i++ {
		if i > 1e6 {
			t.Fatal("a killed child is never gone")
		}
	}
	_ = cmd.Wait()
	if !id.Gone() {
		t.Error("a reaped child is not gone")
	}
}

// TestKernelID: this kernel has a boot id, and its id is the same at every
// call.
func TestKernelID(t *testing.T) {
	if a, b := KernelID(), KernelID(); a == 0 || a != b {
		t.Fatalf("KernelID() = %d, then %d", a, b)
	}
}
