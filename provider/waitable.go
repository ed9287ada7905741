package provider

// The contracts between the objects that produce events (CQ, counter, EQ)
// and the objects that wait for them (wait sets, poll sets, blocking reads).

// signaler is told when an object it watches gets a new event. A wait set
// is one; so is the fd or condition of an object's own wait object.
type signaler interface {
	signal()
}

// waitable is an object that can sit in a wait set or a poll set.
type waitable interface {
	// ready drives progress for the object's domain (if it has one) and
	// reports whether the object has an event to read.
	ready() bool
}
