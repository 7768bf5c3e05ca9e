package distributed

import (
	"bytes"
	"testing"
)

// FuzzReadFrame feeds arbitrary bytes to the frame decoder, with the
// default limit of a group: it must return frames or errors, never panic,
// and never allocate much more than the bytes that arrive (a header that
// announces a gigabyte is followed by a few bytes here).
func FuzzReadFrame(f *testing.F) {
	var h [frameHeaderLen]byte
	putHeader(h[:], frameHeader{kind: frameData, op: opAllReduce, dtype: 0, seq: 7, n: 4})
	f.Add(append(h[:], 1, 2, 3, 4))
	putHeader(h[:], frameHeader{kind: frameAbort, op: 0, seq: 1, n: 6})
	f.Add(append(h[:], append(abortPayload(2, "x"), 0)...))
	f.Add([]byte("EMBF"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		for {
			fr, err := readFrame(r, defaultMaxFrameBytes, nil)
			if err != nil {
				return
			}
			if uint64(len(fr.payload)) != fr.n || fr.n > defaultMaxFrameBytes {
				t.Fatalf("payload %d bytes, header says %d", len(fr.payload), fr.n)
			}
			if fr.kind == frameAbort {
				parseAbort(fr.payload)
			}
		}
	})
}
