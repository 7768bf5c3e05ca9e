package distributed

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Wire format. Every message between two ranks is one frame: a fixed
// 24-byte header followed by a payload of the length it announces.
//
//	offset size field
//	0      4    magic "EMBF"
//	4      1    kind (frameData, frameDataEnd, frameAbort)
//	5      1    op code of the collective (opBarrier ... opP2P)
//	6      1    dtype of the payload elements (tensor.DType)
//	7      1    group id (0: the world group, then subgroups in creation order)
//	8      8    sequence number of the operation (little endian)
//	16     8    payload length in bytes (little endian)
//
// Payload elements are little endian. An abort frame's payload is the rank
// that failed (int32, -1 when unknown) and a UTF-8 reason.
const (
	frameHeaderLen = 24
	frameMagic     = "EMBF"

	frameData  byte = 1
	frameAbort byte = 2
	// frameDataEnd is a data frame that ends its message (decoded as
	// frameData with end set): a receiver that expects more elements,
	// or fewer, learns at once that the sender's tensor has another
	// shape instead of waiting out its timeout.
	frameDataEnd byte = 3

	// maxAbortPayload bounds the reason carried by an abort frame.
	maxAbortPayload = 4 + 1024
)

// Op codes carried in frames so that mismatched collectives are detected.
const (
	opBarrier byte = iota + 1
	opBroadcast
	opAllReduce
	opReduce
	opAllGather
	opReduceScatter
	opGather
	opScatter
	opP2P
	opShardReduceScatter
	opShardAllGather
	opShmSetup
	opShmAlloc
	opLast = opShmAlloc
)

// opNames names the op codes for error messages.
var opNames = [...]string{
	opBarrier: "Barrier", opBroadcast: "Broadcast", opAllReduce: "AllReduce", opReduce: "Reduce",
	opAllGather: "AllGather", opReduceScatter: "ReduceScatter", opGather: "Gather", opScatter: "Scatter",
	opP2P: "Send/Recv", opShardReduceScatter: "ReduceScatter (ZeroOptimizer)", opShardAllGather: "AllGather (ZeroOptimizer)",
	opShmSetup: "shared-memory setup", opShmAlloc: "SharedZeros",
}

// opName returns the name of op code c.
func opName(c byte) string {
	if c >= 1 && c <= opLast {
		return opNames[c]
	}
	return fmt.Sprintf("op(%d)", c)
}

// frameHeader is a decoded frame header.
type frameHeader struct {
	kind  byte
	op    byte
	group byte
	dtype byte
	seq   uint64
	n     uint64
	end   bool // a data frame that ends its message (frameDataEnd)
}

// errBadFrame marks a frame that does not follow the wire format.
var errBadFrame = errors.New("malformed frame")

// putHeader encodes h into b, which must hold frameHeaderLen bytes.
func putHeader(b []byte, h frameHeader) {
	copy(b[0:4], frameMagic)
	b[4] = h.kind
	if h.kind == frameData && h.end {
		b[4] = frameDataEnd
	}
	b[5] = h.op
	b[6] = h.dtype
	b[7] = h.group
	binary.LittleEndian.PutUint64(b[8:16], h.seq)
	binary.LittleEndian.PutUint64(b[16:24], h.n)
}

// parseHeader decodes and validates a frame header. maxPayload bounds the
// announced payload length so that a peer cannot make us allocate without
// limit.
func parseHeader(b []byte, maxPayload uint64) (frameHeader, error) {
	if len(b) < frameHeaderLen {
		return frameHeader{}, fmt.Errorf("%w: header of %d bytes, want %d", errBadFrame, len(b), frameHeaderLen)
	}
	if string(b[0:4]) != frameMagic {
		return frameHeader{}, fmt.Errorf("%w: bad magic %q", errBadFrame, b[0:4])
	}
	h := frameHeader{kind: b[4], op: b[5], dtype: b[6], group: b[7], seq: binary.LittleEndian.Uint64(b[8:16]), n: binary.LittleEndian.Uint64(b[16:24])}
	if h.kind == frameDataEnd {
		h.kind, h.end = frameData, true
	}
	switch h.kind {
	case frameData:
		if h.op < 1 || h.op > opLast {
			return frameHeader{}, fmt.Errorf("%w: unknown op code %d", errBadFrame, h.op)
		}
		if h.n > maxPayload {
			return frameHeader{}, fmt.Errorf("%w: payload of %d bytes exceeds the limit of %d", errBadFrame, h.n, maxPayload)
		}
	case frameAbort:
		if h.n < 4 || h.n > maxAbortPayload {
			return frameHeader{}, fmt.Errorf("%w: abort payload of %d bytes", errBadFrame, h.n)
		}
	default:
		return frameHeader{}, fmt.Errorf("%w: unknown kind %d", errBadFrame, h.kind)
	}
	return h, nil
}

// frame is one received frame, or the error that ended the stream.
type frame struct {
	frameHeader
	payload []byte
	inPlace bool // payload was read into a sink's region, not a buffer of its own
	err     error
}

// defaultMaxFrameBytes is the default of Config.MaxFrameBytes.
const defaultMaxFrameBytes = 1 << 30

// payloadStep is the first buffer of a payload that readFrame reads as it
// arrives; the buffer then at most doubles with the bytes received.
const payloadStep = 1 << 20

// readFrame reads one frame from r. alloc, if not nil, provides the
// payload buffer of h.n bytes for the valid header h; without alloc, or
// when it returns nil, the buffer grows as the payload arrives, so that a
// header announcing up to maxPayload bytes costs memory only as the bytes
// come (at most twice those received, past the first payloadStep).
func readFrame(r io.Reader, maxPayload uint64, alloc func(h frameHeader) []byte) (frame, error) {
	var hb [frameHeaderLen]byte
	if _, err := io.ReadFull(r, hb[:]); err != nil {
		return frame{}, err
	}
	h, err := parseHeader(hb[:], maxPayload)
	if err != nil {
		return frame{}, err
	}
	var p []byte
	if alloc != nil {
		p = alloc(h)
	}
	if p != nil {
		_, err = io.ReadFull(r, p)
	} else {
		p, err = readGrowing(r, h.n)
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return frame{}, err
	}
	return frame{frameHeader: h, payload: p}, nil
}

// readGrowing reads n bytes from r into a buffer that starts at
// payloadStep bytes (or n, if smaller) and doubles as it fills.
func readGrowing(r io.Reader, n uint64) ([]byte, error) {
	b := make([]byte, 0, min(n, payloadStep))
	for uint64(len(b)) < n {
		if len(b) == cap(b) {
			b = slices.Grow(b, int(min(n-uint64(len(b)), uint64(len(b)))))
		}
		k, err := io.ReadFull(r, b[len(b):min(uint64(cap(b)), n)])
		b = b[:len(b)+k]
		if err != nil {
			return nil, err
		}
	}
	return b, nil
}

// abortPayload encodes the failed rank and reason of an abort frame.
func abortPayload(rank int, reason string) []byte {
	if len(reason) > maxAbortPayload-4 {
		reason = reason[:maxAbortPayload-4]
	}
	b := binary.LittleEndian.AppendUint32(nil, uint32(int32(rank)))
	return append(b, reason...)
}

// parseAbort decodes an abort frame's payload.
func parseAbort(p []byte) (rank int, reason string) {
	if len(p) < 4 {
		return -1, ""
	}
	return int(int32(binary.LittleEndian.Uint32(p))), string(p[4:])
}
