package distributed

import "sync"

// sink lets the read loop of a link write the payloads of one operation
// straight into their final place (the destination tensor's memory)
// instead of a pooled buffer the receiver then copies from. It serves the
// frames of operation (op, seq) of one group, in arrival order: the first
// skip payload bytes go to ordinary buffers (data the receiver combines
// rather than stores, such as a ring's reduce-scatter phase), the bytes
// after them fill regions one after the other. A frame that does not fall
// inside one region (the sender cut its data differently) also takes an
// ordinary buffer, so a sink only ever saves copies, never changes what is
// received.
//
// Only the first armed regions take payloads: the receiver arms a region
// (under the link's lock, which orders its own earlier writes there before
// the read loop's) once it no longer touches that memory itself.
type sink struct {
	op      byte
	seq     uint64
	skip    int
	regions [][]byte
	armed   int
	seen    int  // payload bytes of (op, seq) read or being read
	busy    bool // the read loop is writing into a region
}

// place returns the part of the regions that the n payload bytes at
// offset pos (past skip) fill, or nil when they do not lie inside one
// region.
func (s *sink) place(pos, n int) []byte {
	if pos < 0 || n == 0 {
		return nil
	}
	for _, r := range s.regions[:s.armed] {
		if pos < len(r) {
			if pos+n > len(r) {
				return nil
			}
			return r[pos : pos+n : pos+n]
		}
		pos -= len(r)
	}
	return nil
}

// sinkState is a link's share of the sink machinery, guarded by link.mu.
type sinkState struct {
	sinks   map[byte]*sink // by group id
	reading *frameHeader   // data frame whose payload is being read into an ordinary buffer
	idle    *sync.Cond     // signalled when a sink stops being busy
}

// openSink registers s for group gid: later frames of (s.op, s.seq) that
// fit s's regions are read into them. Frames of that operation already
// queued or being read count towards s.skip.
func (l *link) openSink(gid byte, s *sink) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sinks == nil {
		l.sinks = map[byte]*sink{}
		l.idle = sync.NewCond(&l.mu)
	}
	match := func(h frameHeader) bool { return h.group == gid && h.op == s.op && h.seq == s.seq }
	if b := l.boxes[gid]; b != nil {
		for _, f := range b.frames {
			if f.err == nil && match(f.frameHeader) {
				s.seen += len(f.payload)
			}
		}
	}
	if h := l.reading; h != nil && match(*h) {
		s.seen += int(h.n)
	}
	l.sinks[gid] = s
}

// armSink lets group gid's sink fill its first n regions.
func (l *link) armSink(gid byte, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.sinks[gid]; s != nil {
		s.armed = min(max(s.armed, n), len(s.regions))
	}
}

// closeSink removes group gid's sink once the read loop is no longer
// writing into it, so its regions are the caller's again.
func (l *link) closeSink(gid byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.sinks[gid]
	if s == nil {
		return
	}
	for s.busy {
		l.idle.Wait()
	}
	delete(l.sinks, gid)
}

// land is called by the read loop with the header of a valid frame before
// its payload is read: it returns where the payload goes when a sink takes
// it, else nil (the payload then takes an ordinary buffer).
func (l *link) land(h frameHeader) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h.kind != frameData {
		return nil
	}
	if s := l.sinks[h.group]; s != nil && s.op == h.op && s.seq == h.seq {
		b := s.place(s.seen-s.skip, int(h.n))
		s.seen += int(h.n)
		if b != nil {
			s.busy = true
			return b
		}
		return nil
	}
	l.reading = &h
	return nil
}

// landed ends the payload read that land started; l.mu must be held.
func (l *link) landed() {
	l.reading = nil
	for _, s := range l.sinks {
		if s.busy {
			s.busy = false
			l.idle.Broadcast()
		}
	}
}
