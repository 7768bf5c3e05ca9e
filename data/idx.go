package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"

	"github.com/emberml/ember/internal/safeio"
)

// IDX element type codes, as stored in the third byte of an idx file's magic
// number.
const (
	IDXUbyte  byte = 0x08 // unsigned 8-bit integer
	IDXSbyte  byte = 0x09 // signed 8-bit integer
	IDXShort  byte = 0x0B // signed 16-bit integer, big-endian
	IDXInt    byte = 0x0C // signed 32-bit integer, big-endian
	IDXFloat  byte = 0x0D // IEEE 754 float32, big-endian
	IDXDouble byte = 0x0E // IEEE 754 float64, big-endian
)

// IDX is an array in the idx format used by the MNIST family of datasets.
//
// An idx file starts with the magic bytes 0x00 0x00 type ndim, followed by
// ndim big-endian uint32 dimensions and the elements in row-major order,
// multi-byte elements big-endian.
type IDX struct {
	// Type is the element type, one of the IDX type constants.
	Type byte
	// Dims holds the dimensions, outermost first.
	Dims []int
	// Data holds the raw elements as in the file: row-major and big-endian.
	Data []byte
}

// idxElemSize returns the element size in bytes for an idx type code.
func idxElemSize(t byte) (int, error) {
	switch t {
	case IDXUbyte, IDXSbyte:
		return 1, nil
	case IDXShort:
		return 2, nil
	case IDXInt, IDXFloat:
		return 4, nil
	case IDXDouble:
		return 8, nil
	}
	return 0, fmt.Errorf("idx: unknown element type 0x%02x", t)
}

// idxByteSize returns the payload size of an array with the given element
// type and dimensions, checking for negative dimensions and for overflow
// (see safeio.ShapeBytes: a zero dimension does not hide an overflowing
// product of the others).
func idxByteSize(t byte, dims []int) (int, error) {
	size, err := idxElemSize(t)
	if err != nil {
		return 0, err
	}
	n, err := safeio.ShapeBytes(dims, size)
	if err != nil {
		return 0, fmt.Errorf("idx: %w", err)
	}
	return n, nil
}

// DefaultIDXMaxBytes is the largest array payload, in bytes, that the idx
// readers decode when IDXOptions.MaxBytes is zero: 2 GiB, four times the
// largest EMNIST split.
const DefaultIDXMaxBytes = 2 << 30

// DefaultMaxGzipRatio is how many times its compressed size a gzip idx
// stream may expand to when IDXOptions.MaxGzipRatio is zero. Real datasets
// compress 2 to 5 times (MNIST's training images: 4.7); a stream of zeros
// compresses about 1000 times, which is how a small file asks for gigabytes.
const DefaultMaxGzipRatio = 64

// gzipSlack is what a gzip stream may expand to beyond MaxGzipRatio times
// its compressed size, so that tiny files (whose headers dominate) load.
const gzipSlack = 64 << 10

// IDXOptions bounds what the idx readers decode from files they cannot
// trust. The zero value applies the defaults.
type IDXOptions struct {
	// MaxBytes is the largest array payload, in bytes, decoded; a header
	// declaring more is refused before anything is allocated. Zero (or
	// less) means DefaultIDXMaxBytes.
	MaxBytes int64
	// MaxGzipRatio bounds how many times its compressed size a gzip stream
	// may expand to (plus 64 KiB). Zero (or less) means DefaultMaxGzipRatio.
	MaxGzipRatio int64

	// maxBytesSource names where MaxBytes came from in errors, when not
	// from the caller ("IDXOptions.MaxBytes").
	maxBytesSource string
}

// withDefaults returns o with its zero fields set to the defaults.
func (o IDXOptions) withDefaults() IDXOptions {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultIDXMaxBytes
	}
	if o.MaxGzipRatio <= 0 {
		o.MaxGzipRatio = DefaultMaxGzipRatio
	}
	return o
}

// idxOptions returns the options of a variadic call, defaults applied.
func idxOptions(opts []IDXOptions) IDXOptions {
	if len(opts) > 0 {
		return opts[0].withDefaults()
	}
	return IDXOptions{}.withDefaults()
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ratioReader reads a gzip stream's output and fails once more than
// ratio times the compressed bytes consumed so far (plus gzipSlack) came out.
type ratioReader struct {
	r          io.Reader
	compressed *countingReader
	ratio      int64
	out        int64
}

func (g *ratioReader) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	g.out += int64(n)
	if limit := satMul(g.ratio, g.compressed.n) + gzipSlack; g.out > limit {
		return n, fmt.Errorf("gzip stream expands more than %d times: %d bytes from %d compressed "+
			"(raise IDXOptions.MaxGzipRatio if the file is genuine)", g.ratio, g.out, g.compressed.n)
	}
	return n, err
}

// validate checks that x's type is known and its data matches its dims.
func (x *IDX) validate() error {
	if x == nil {
		return errors.New("idx: nil IDX")
	}
	if len(x.Dims) > math.MaxUint8 {
		return fmt.Errorf("idx: %d dimensions exceed the format's limit of 255", len(x.Dims))
	}
	for _, d := range x.Dims {
		if d >= 0 && uint64(d) > math.MaxUint32 {
			return fmt.Errorf("idx: dimension %d does not fit in 32 bits", d)
		}
	}
	n, err := idxByteSize(x.Type, x.Dims)
	if err != nil {
		return err
	}
	if n != len(x.Data) {
		return fmt.Errorf("idx: dimensions %v of type 0x%02x need %d bytes, data has %d", x.Dims, x.Type, n, len(x.Data))
	}
	return nil
}

// ReadIDX decodes an idx array from r. Gzip-compressed input (as MNIST is
// distributed) is detected by its magic bytes and decompressed
// transparently; a compressed stream must end right after the array, and
// its checksum is verified. Uncompressed input is read no further than the
// end of the array.
//
// The optional IDXOptions bound the payload (2 GiB by default) and how far a
// gzip stream may expand (64 times by default). The payload is read
// incrementally, so a header that claims more data than the input holds
// yields an error rather than a huge allocation.
func ReadIDX(r io.Reader, opts ...IDXOptions) (*IDX, error) {
	return readIDX(r, idxOptions(opts), -1)
}

// readIDX is ReadIDX for input whose total size is known (fileSize, the
// compressed size for gzip input) or unknown (fileSize -1).
func readIDX(r io.Reader, o IDXOptions, fileSize int64) (*IDX, error) {
	var magic [4]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil {
		return nil, fmt.Errorf("idx: reading magic number: %w", safeio.Truncated(err))
	}
	if magic[0] == 0x1f && magic[1] == 0x8b {
		compressed := &countingReader{r: io.MultiReader(bytes.NewReader(magic[:]), r)}
		zr, err := gzip.NewReader(compressed)
		if err != nil {
			return nil, fmt.Errorf("idx: opening gzip stream: %w", err)
		}
		limit := maxBytesBudget(o)
		if fileSize >= 0 {
			// The whole stream's size is known: refuse a declared payload
			// beyond the ratio before decompressing it.
			if b := satMul(fileSize, o.MaxGzipRatio) + gzipSlack; b < limit.bytes {
				limit = budget{b, fmt.Sprintf("%d times the %d-byte gzip file (raise IDXOptions.MaxGzipRatio if the file is genuine)",
					o.MaxGzipRatio, fileSize)}
			}
		}
		x, err := readIDXPlain(&ratioReader{r: zr, compressed: compressed, ratio: o.MaxGzipRatio}, limit)
		if err != nil {
			return nil, err
		}
		// Reading to the end verifies the gzip checksum.
		var extra [1]byte
		switch n, err := io.ReadFull(zr, extra[:]); {
		case n > 0:
			return nil, errors.New("idx: unexpected data after the array in the gzip stream")
		case err != io.EOF:
			return nil, fmt.Errorf("idx: gzip stream: %w", err)
		}
		return x, nil
	}
	limit := maxBytesBudget(o)
	if fileSize >= 0 && fileSize < limit.bytes {
		limit = budget{fileSize, fmt.Sprintf("the file's size, %d bytes", fileSize)}
	}
	return readIDXBody(magic, r, limit)
}

// budget is the most payload bytes a reader accepts, and where that limit
// comes from (for the error that refuses more).
type budget struct {
	bytes  int64
	source string
}

// maxBytesBudget is the budget that IDXOptions.MaxBytes sets.
func maxBytesBudget(o IDXOptions) budget {
	source := o.maxBytesSource
	if source == "" {
		source = "IDXOptions.MaxBytes"
	}
	return budget{o.MaxBytes, fmt.Sprintf("the limit of %d bytes (%s)", o.MaxBytes, source)}
}

// satMul returns a*b for non-negative a and b, or math.MaxInt64 - gzipSlack
// when the product is larger (so that adding gzipSlack cannot overflow).
func satMul(a, b int64) int64 {
	const most = math.MaxInt64 - gzipSlack
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > most {
		return most
	}
	return int64(lo)
}

// readIDXPlain reads an uncompressed idx array, magic number included.
func readIDXPlain(r io.Reader, limit budget) (*IDX, error) {
	var magic [4]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil {
		return nil, fmt.Errorf("idx: reading magic number: %w", safeio.Truncated(err))
	}
	return readIDXBody(magic, r, limit)
}

// readIDXBody reads the dimensions and payload following the magic number,
// refusing a payload larger than limit bytes before reading it.
func readIDXBody(magic [4]byte, r io.Reader, limit budget) (*IDX, error) {
	if magic[0] != 0 || magic[1] != 0 {
		return nil, fmt.Errorf("idx: bad magic number % x, not an idx file", magic)
	}
	typ, ndim := magic[2], int(magic[3])
	if _, err := idxElemSize(typ); err != nil {
		return nil, err
	}
	raw := make([]byte, 4*ndim)
	if _, err := io.ReadFull(r, raw); err != nil {
		return nil, fmt.Errorf("idx: reading %d dimensions: %w", ndim, safeio.Truncated(err))
	}
	dims := make([]int, ndim)
	for i := range dims {
		d := binary.BigEndian.Uint32(raw[4*i:])
		if uint64(d) > math.MaxInt {
			return nil, fmt.Errorf("idx: dimension %d too large for this platform", d)
		}
		dims[i] = int(d)
	}
	n, err := idxByteSize(typ, dims)
	if err != nil {
		return nil, err
	}
	if int64(n) > limit.bytes {
		return nil, fmt.Errorf("idx: dimensions %v need %d bytes, more than %s", dims, n, limit.source)
	}
	data, err := safeio.ReadFull(r, n)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("idx: data truncated: dimensions %v need %d bytes, got %d", dims, n, len(data))
		}
		return nil, fmt.Errorf("idx: reading data: %w", err)
	}
	return &IDX{Type: typ, Dims: dims, Data: data}, nil
}

// ReadIDXFile reads the idx file at path, which may be gzip-compressed. The
// file must be a regular file (see ReadIDX for the limits opts sets); its
// size bounds the payload before anything is decoded.
func ReadIDXFile(path string, opts ...IDXOptions) (*IDX, error) {
	f, size, err := safeio.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	x, err := readIDX(bufio.NewReader(f), idxOptions(opts), size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return x, nil
}

// WriteIDX writes x to w in uncompressed idx format. Wrap w in a
// gzip.Writer for compressed output.
func WriteIDX(w io.Writer, x *IDX) error {
	if err := x.validate(); err != nil {
		return err
	}
	hdr := make([]byte, 4, 4+4*len(x.Dims))
	hdr[2], hdr[3] = x.Type, byte(len(x.Dims))
	for _, d := range x.Dims {
		hdr = binary.BigEndian.AppendUint32(hdr, uint32(d))
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	_, err := w.Write(x.Data)
	return err
}

// Float32s returns the elements converted to float32, whatever the element
// type. Conversion from int32 and float64 may round.
func (x *IDX) Float32s() ([]float32, error) {
	if err := x.validate(); err != nil {
		return nil, err
	}
	d := x.Data
	var out []float32
	switch x.Type {
	case IDXUbyte:
		out = make([]float32, len(d))
		for i, v := range d {
			out[i] = float32(v)
		}
	case IDXSbyte:
		out = make([]float32, len(d))
		for i, v := range d {
			out[i] = float32(int8(v))
		}
	case IDXShort:
		out = make([]float32, len(d)/2)
		for i := range out {
			out[i] = float32(int16(binary.BigEndian.Uint16(d[2*i:])))
		}
	case IDXInt:
		out = make([]float32, len(d)/4)
		for i := range out {
			out[i] = float32(int32(binary.BigEndian.Uint32(d[4*i:])))
		}
	case IDXFloat:
		out = make([]float32, len(d)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.BigEndian.Uint32(d[4*i:]))
		}
	case IDXDouble:
		out = make([]float32, len(d)/8)
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.BigEndian.Uint64(d[8*i:])))
		}
	}
	return out, nil
}

// Uint8s returns a copy of the elements of an unsigned-byte (IDXUbyte)
// array, such as MNIST images and labels. Other types yield an error.
func (x *IDX) Uint8s() ([]uint8, error) {
	if err := x.validate(); err != nil {
		return nil, err
	}
	if x.Type != IDXUbyte {
		return nil, fmt.Errorf("idx: Uint8s needs element type 0x%02x (unsigned byte), have 0x%02x", IDXUbyte, x.Type)
	}
	return bytes.Clone(x.Data), nil
}
