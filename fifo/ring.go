package fifo

// ring is a FIFO slice with an O(1) pop from the head and amortised O(1)
// push, that can also put items back at the head.
type ring[E any] struct {
	buf  []E
	head int
}

func (r *ring[E]) len() int { return len(r.buf) - r.head }

func (r *ring[E]) push(e E) {
	if r.head > 0 && r.head == len(r.buf) {
		r.buf, r.head = r.buf[:0], 0
	} else if r.head >= 1024 && r.head*2 >= len(r.buf) {
		n := copy(r.buf, r.buf[r.head:])
		clear(r.buf[n:])
		r.buf, r.head = r.buf[:n], 0
	}
	r.buf = append(r.buf, e)
}

// at returns the i-th item from the head.
func (r *ring[E]) at(i int) E { return r.buf[r.head+i] }

// pop removes and returns the head item.
func (r *ring[E]) pop() E {
	var zero E
	e := r.buf[r.head]
	r.buf[r.head] = zero
	r.head++
	return e
}

// unpop puts items back at the head, in order.
func (r *ring[E]) unpop(items []E) {
	if len(items) <= r.head {
		r.head -= len(items)
		copy(r.buf[r.head:], items)
		return
	}
	buf := make([]E, 0, len(items)+r.len())
	buf = append(buf, items...)
	buf = append(buf, r.buf[r.head:]...)
	r.buf, r.head = buf, 0
}

// all yields the queued items from head to tail.
func (r *ring[E]) all(yield func(E) bool) {
	for _, e := range r.buf[r.head:] {
		if !yield(e) {
			return
		}
	}
}
