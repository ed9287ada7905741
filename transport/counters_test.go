package transport

import (
	"reflect"
	"testing"
)

func TestCountersOf(t *testing.T) {
	s := struct {
		Sent, RndvCMA, RxDropped, MTUDown uint64
		note                              string
	}{1, 2, 3, 4, "x"}
	c := CountersOf("hfi", s)
	want := Counters{Wire: "hfi", Names: []string{"sent", "rndv_cma", "rx_dropped", "mtu_down"}, Values: []uint64{1, 2, 3, 4}}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("CountersOf = %+v, want %+v", c, want)
	}
}
