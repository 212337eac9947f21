package ytstore

// buffers keeps up to n byte buffers of at most max bytes between uses (newBuffers). Unlike a
// sync.Pool it keeps them across garbage collections, which empty a pool: at the rate the
// epochs of a busy process allocate, every few epochs, so that a pool's buffers were mostly
// allocated anew. What it keeps is bounded: n buffers of at most max bytes.
type buffers struct {
	free chan *[]byte
	max  int
}

func newBuffers(n, max int) *buffers { return &buffers{free: make(chan *[]byte, n), max: max} }

// get returns an empty buffer of capacity at least n. A new one has room for a quarter more:
// uses of one kind ask for about the same size each time, and a buffer of exactly the size
// asked would be too small for the next, larger ask half the time.
func (p *buffers) get(n int) *[]byte {
	select {
	case b := <-p.free:
		if cap(*b) >= n {
			*b = (*b)[:0]
			return b
		}
		// Too small for this use: dropped, so that what is kept grows to the largest use
		// instead of the same small buffer being taken and put back again and again.
	default:
	}
	b := make([]byte, 0, n+n/4)
	return &b
}

// put hands b back for later gets; nothing may use it after.
func (p *buffers) put(b *[]byte) {
	if cap(*b) > p.max {
		return
	}
	select {
	case p.free <- b:
	default:
	}
}
