// Package route puts the wires under one provider endpoint: it
// implements transport.Endpoint by handing each peer to the first wire
// that reaches it, as PSM2_DEVICES=self,shm,hfi does: this process and
// this host go through shm (package shm), other hosts through hfi
// (package hfi). The choice is made once per peer, at Connect, and is
// the only place that knows about more than one wire.
package route
