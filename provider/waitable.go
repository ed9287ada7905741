package provider

// The contracts between the objects that produce events (CQ, counter, EQ)
// and the objects that wait for them (wait sets, poll sets, blocking reads).

// waitable is an object that can sit in a wait set or a poll set.
type waitable interface {
	// ready drives progress for the object's domain (if it has one) and
	// reports whether the object has an event to read.
	ready() bool
}
