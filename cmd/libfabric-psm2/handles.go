package main

import (
	"sync/atomic"
	"unsafe"

	pointer "github.com/mattn/go-pointer"
)

// This file is the one place where Go objects are put behind C pointers.
// A handle is created when an object is opened, resolved when C calls in
// with its fid, and deleted when the fid is closed. liveHandles lets tests
// check that every close released its handle.

var liveHandles atomic.Int64

// newHandle stores v and returns the C-side key for it.
func newHandle(v any) unsafe.Pointer {
	liveHandles.Add(1)
	return pointer.Save(v)
}

// handleValue returns the object behind h (nil for an unknown key).
func handleValue(h unsafe.Pointer) any {
	if h == nil {
		return nil
	}
	return pointer.Restore(h)
}

// deleteHandle forgets h.
func deleteHandle(h unsafe.Pointer) {
	if h == nil {
		return
	}
	pointer.Unref(h)
	liveHandles.Add(-1)
}
