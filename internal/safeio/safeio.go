// Package safeio reads lengths taken from untrusted file headers without
// trusting them: the readers of idx (package data) and npy
// (tensor/internal/npy) files share it.
package safeio

import (
	"errors"
	"io"
)

// chunk is the largest buffer ReadFull allocates before any data arrives.
const chunk = 1 << 20

// ReadFull reads exactly n bytes from r. The buffer starts at no more than
// 1 MiB and doubles (never past n) as data arrives, so a corrupt or hostile
// length in a header cannot force a huge up-front allocation. On error it
// returns the bytes read so far with io.ReadFull's error (io.EOF when nothing
// was read, io.ErrUnexpectedEOF when the data stopped early).
func ReadFull(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, 0, min(n, chunk))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(2*cap(buf), n))
			copy(grown, buf)
			buf = grown
		}
		m, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// Truncated turns the EOF errors of io.ReadFull (io.EOF and
// io.ErrUnexpectedEOF, wrapped or not) into one "unexpected end of file"
// error and returns any other error unchanged.
func Truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("unexpected end of file")
	}
	return err
}
