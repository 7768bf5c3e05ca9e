// Package safeio holds the rules every reader of files from outside follows
// (idx in package data, npy in tensor/internal/npy, safetensors): open only
// regular files and know their size before reading, never trust a length
// from a header, compute shape sizes with overflow checks, and keep error
// messages short whatever the file holds.
package safeio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/bits"
	"os"
	"strconv"
	"unicode/utf8"
)

// MaxRank is the largest number of dimensions a shape read from a file may
// have: NumPy's own limit, far beyond what any model needs.
const MaxRank = 64

// ShapeBytes returns the size in bytes of an array of the given shape whose
// elements take elemSize bytes. It refuses more than MaxRank dimensions,
// negative dimensions, and shapes whose product overflows an int, and it
// checks the overflow on the non-zero dimensions even when another
// dimension is zero: [0, 2^62, 2^62] is refused like [2^62, 2^62, 0], since
// the strides of either overflow.
func ShapeBytes(shape []int, elemSize int) (int, error) {
	if len(shape) > MaxRank {
		return 0, fmt.Errorf("%d dimensions exceed the limit of %d", len(shape), MaxRank)
	}
	if elemSize <= 0 {
		return 0, fmt.Errorf("invalid element size %d", elemSize)
	}
	product := uint64(elemSize) // product of max(d, 1), as strides need
	empty := false
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension %d in shape %v", d, shape)
		}
		if d == 0 {
			empty = true
			continue
		}
		hi, lo := bits.Mul64(product, uint64(d))
		if hi != 0 || lo > math.MaxInt {
			return 0, fmt.Errorf("byte size of shape %v overflows", shape)
		}
		product = lo
	}
	if empty {
		return 0, nil
	}
	return int(product), nil
}

// Open opens the file at path for reading on a user's behalf. Only a
// regular file is accepted: a folder, named pipe (FIFO), device or socket is
// an error, and opening never blocks on a FIFO (the file is checked before
// opening and opened non-blocking where the platform has that). It returns
// the open file and its size, so that callers can check the size before
// reading; links are followed, as for os.Open.
func Open(path string) (*os.File, int64, error) {
	return open(path, os.Stat, func(name string) (*os.File, error) {
		return os.OpenFile(name, os.O_RDONLY|nonBlocking, 0)
	})
}

// OpenIn is Open for the file name inside the folder dir, resolved through
// an os.Root: links and ".." that lead out of dir are refused. Readers use
// it for files that another file names (an ONNX model's external data),
// which must stay inside that file's folder.
func OpenIn(dir, name string) (*os.File, int64, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, 0, err
	}
	defer root.Close()
	return open(name, root.Stat, func(name string) (*os.File, error) {
		return root.OpenFile(name, os.O_RDONLY|nonBlocking, 0)
	})
}

// open is Open with the stat and open of a namespace (the file system, or
// a root folder).
func open(path string, stat func(string) (fs.FileInfo, error), openFile func(string) (*os.File, error)) (*os.File, int64, error) {
	info, err := stat(path)
	if err != nil {
		return nil, 0, err
	}
	if err := checkRegular(path, info); err != nil {
		return nil, 0, err
	}
	f, err := openFile(path)
	if err != nil {
		return nil, 0, err
	}
	// The file may have been replaced between the stat and the open.
	info, err = f.Stat()
	if err == nil {
		err = checkRegular(path, info)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, info.Size(), nil
}

// checkRegular returns an error naming what path is unless it is a regular
// file.
func checkRegular(path string, info fs.FileInfo) error {
	mode := info.Mode()
	kind := ""
	switch {
	case mode.IsRegular():
		return nil
	case mode.IsDir():
		kind = "a folder"
	case mode&fs.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		kind = "a socket"
	case mode&fs.ModeDevice != 0:
		kind = "a device"
	default:
		kind = "a special file (mode " + mode.String() + ")"
	}
	return fmt.Errorf("%s: is %s, not a regular file", path, kind)
}

// ReadFile reads the whole regular file at path (see Open), refusing before
// reading anything a file larger than limit bytes. A file that changes size
// while it is read is an error.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, size, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > limit {
		return nil, fmt.Errorf("%s: file of %d bytes exceeds the limit of %d bytes", path, size, limit)
	}
	if size > math.MaxInt {
		return nil, fmt.Errorf("%s: file of %d bytes is too large for this platform", path, size)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("%s: %w", path, Truncated(err))
	}
	var extra [1]byte
	if n, _ := f.Read(extra[:]); n > 0 {
		return nil, fmt.Errorf("%s: the file grew while it was read", path)
	}
	return data, nil
}

// maxQuoted is how many bytes of a file-controlled string Quote keeps.
const maxQuoted = 64

// Quote returns s quoted as with %q, cut to its first 64 bytes (with its
// length noted) when longer: names and values from a file go into error
// messages through it, so a hostile file cannot make an error huge.
func Quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut-- // keep a character whole
	}
	return strconv.Quote(s[:cut]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

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
