package match

// opQueue is a FIFO of ops linked through Op.next.
type opQueue[X any] struct{ head, tail *Op[X] }

func (q *opQueue[X]) push(o *Op[X]) {
	o.next = nil
	if q.tail == nil {
		q.head, q.tail = o, o
	} else {
		q.tail.next, q.tail = o, o
	}
}

// remove unlinks o, whose predecessor is prev (nil at the head).
func (q *opQueue[X]) remove(prev, o *Op[X]) {
	if prev == nil {
		q.head = o.next
	} else {
		prev.next = o.next
	}
	if q.tail == o {
		q.tail = prev
	}
	o.next = nil
}

// uxQueue is a FIFO of unexpected messages.
type uxQueue struct{ head, tail *Unexpected }

func (q *uxQueue) push(u *Unexpected) {
	u.next = nil
	if q.tail == nil {
		q.head, q.tail = u, u
	} else {
		q.tail.next, q.tail = u, u
	}
}

func (q *uxQueue) remove(prev, u *Unexpected) {
	if prev == nil {
		q.head = u.next
	} else {
		prev.next = u.next
	}
	if q.tail == u {
		q.tail = prev
	}
	u.next = nil
}
