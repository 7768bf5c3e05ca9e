// Package npy reads and writes NumPy's .npy array format.
//
// A .npy file starts with the magic string "\x93NUMPY", a major and minor
// version byte, and a little-endian header length (2 bytes for version 1.0,
// 4 bytes for versions 2.0 and 3.0). The header is a Python dict literal such
// as
//
//	{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
//
// padded with spaces and a final newline, followed by the raw array bytes.
//
// Read accepts versions 1.0, 2.0 and 3.0, both byte orders and both memory
// orders, and always returns little-endian, C-ordered (row-major) data
// described by a canonical descr. Write produces version 1.0 files, or 2.0
// when the header does not fit version 1.0's 16-bit length.
//
// Supported element types are float16/32/64, int8/16/32/64, uint8 and bool.
// bfloat16 has no .npy descr and is not representable. Object (pickled),
// string, structured and other dtypes are rejected with an error.
package npy

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/emberml/ember/internal/atomicfile"
	"github.com/emberml/ember/internal/safeio"
)

// Canonical descrs: the little-endian (or byte-order-free) spelling of each
// supported dtype, as found in Array.Descr.
const (
	DescrFloat16 = "<f2"
	DescrFloat32 = "<f4"
	DescrFloat64 = "<f8"
	DescrInt8    = "|i1"
	DescrInt16   = "<i2"
	DescrInt32   = "<i4"
	DescrInt64   = "<i8"
	DescrUint8   = "|u1"
	DescrUint16  = "<u2"
	DescrUint32  = "<u4"
	DescrUint64  = "<u8"
	DescrBool    = "|b1"
)

// MaxHeaderSize is the largest header, in bytes, that Read accepts.
const MaxHeaderSize = 1 << 20

// MaxDims is the largest number of dimensions accepted (NumPy's own limit,
// and the limit of every reader of files in Ember).
const MaxDims = safeio.MaxRank

// magic is the fixed prefix of every .npy file.
const magic = "\x93NUMPY"

// Array is a raw n-dimensional array.
type Array struct {
	// Descr is the canonical little-endian descr of the element type, one of
	// the Descr constants.
	Descr string
	// Shape holds the dimensions; an empty shape denotes a 0-d scalar.
	Shape []int
	// Data holds the elements, little-endian and in C (row-major) order.
	Data []byte
}

// dtype describes one parsed descr.
type dtype struct {
	canonical string
	size      int
	bigEndian bool
	isBool    bool
}

// kinds maps a descr without its byte-order character to its canonical form.
var kinds = map[string]string{
	"f2": DescrFloat16,
	"f4": DescrFloat32,
	"f8": DescrFloat64,
	"i1": DescrInt8,
	"i2": DescrInt16,
	"i4": DescrInt32,
	"i8": DescrInt64,
	"u1": DescrUint8,
	"u2": DescrUint16,
	"u4": DescrUint32,
	"u8": DescrUint64,
	"b1": DescrBool,
}

// parseDescr interprets a NumPy descr string such as "<f4" or ">i8".
func parseDescr(descr string) (dtype, error) {
	if len(descr) < 2 {
		return dtype{}, fmt.Errorf("unsupported dtype descr %s", safeio.Quote(descr))
	}
	order, kind := descr[0], descr[1:]
	if kind[0] == 'O' {
		return dtype{}, fmt.Errorf("object arrays (descr %s) are not supported", safeio.Quote(descr))
	}
	canonical, ok := kinds[kind]
	if !ok || !strings.ContainsRune("<>|=", rune(order)) {
		return dtype{}, fmt.Errorf("unsupported dtype descr %s", safeio.Quote(descr))
	}
	size := int(kind[1] - '0')
	if size > 1 && (order == '|' || order == '=') {
		return dtype{}, fmt.Errorf("dtype descr %s lacks an explicit byte order", safeio.Quote(descr))
	}
	return dtype{
		canonical: canonical,
		size:      size,
		bigEndian: order == '>' && size > 1,
		isBool:    kind == "b1",
	}, nil
}

// ItemSize returns the size in bytes of one element of the given descr.
// Either byte order is accepted.
func ItemSize(descr string) (int, error) {
	dt, err := parseDescr(descr)
	if err != nil {
		return 0, fmt.Errorf("npy: %w", err)
	}
	return dt.size, nil
}

// byteSize returns the number of bytes of an array with the given shape and
// element size, checking the rank, negative dimensions and overflow (even
// beside a zero dimension: see safeio.ShapeBytes).
func byteSize(shape []int, size int) (int, error) {
	return safeio.ShapeBytes(shape, size)
}

// Read decodes one .npy array from r. It consumes exactly the bytes of the
// array and no more. Data is returned little-endian in C order, converted
// from big-endian and Fortran order as needed; bool elements are normalized
// to 0 or 1.
func Read(r io.Reader) (Array, error) {
	return read(r, math.MaxInt64)
}

// read is Read for input of at most size bytes: a header declaring more
// data than that is refused before any is read.
func read(r io.Reader, size int64) (Array, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return Array{}, fmt.Errorf("npy: reading magic: %w", safeio.Truncated(err))
	}
	if string(pre[:6]) != magic {
		return Array{}, fmt.Errorf("npy: bad magic %q, not a .npy file", pre[:6])
	}
	major, minor := pre[6], pre[7]
	var hlen uint64
	switch {
	case major == 1 && minor == 0:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return Array{}, fmt.Errorf("npy: reading header length: %w", safeio.Truncated(err))
		}
		hlen = uint64(binary.LittleEndian.Uint16(b[:]))
	case (major == 2 || major == 3) && minor == 0:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return Array{}, fmt.Errorf("npy: reading header length: %w", safeio.Truncated(err))
		}
		hlen = uint64(binary.LittleEndian.Uint32(b[:]))
	default:
		return Array{}, fmt.Errorf("npy: unsupported format version %d.%d", major, minor)
	}
	if hlen > MaxHeaderSize {
		return Array{}, fmt.Errorf("npy: header length %d exceeds the limit of %d bytes", hlen, MaxHeaderSize)
	}
	hdr, err := safeio.ReadFull(r, int(hlen))
	if err != nil {
		return Array{}, fmt.Errorf("npy: reading %d-byte header: %w", hlen, safeio.Truncated(err))
	}
	dt, shape, fortran, err := parseHeader(hdr)
	if err != nil {
		return Array{}, fmt.Errorf("npy: %w", err)
	}
	n, err := byteSize(shape, dt.size)
	if err != nil {
		return Array{}, fmt.Errorf("npy: %w", err)
	}
	if left := size - int64(len(pre)) - int64(hlen) - headerLengthSize(major); int64(n) > left {
		return Array{}, fmt.Errorf("npy: data truncated: shape %v of %s needs %d bytes, the file holds %d", shape, dt.canonical, n, max(left, 0))
	}
	data, err := safeio.ReadFull(r, n)
	if err != nil {
		return Array{}, fmt.Errorf("npy: data truncated: got %d of %d bytes", len(data), n)
	}
	if dt.bigEndian {
		swapBytes(data, dt.size)
	}
	if fortran {
		data = fortranToC(data, shape, dt.size)
	}
	if dt.isBool {
		for i, v := range data {
			if v != 0 {
				data[i] = 1
			}
		}
	}
	return Array{Descr: dt.canonical, Shape: shape, Data: data}, nil
}

// headerLengthSize is the size of the header length field of a format
// version: 2 bytes in version 1.0, 4 in 2.0 and 3.0.
func headerLengthSize(major byte) int64 {
	if major == 1 {
		return 2
	}
	return 4
}

// swapBytes reverses the byte order of each size-byte element in place.
func swapBytes(data []byte, size int) {
	for i := 0; i+size <= len(data); i += size {
		e := data[i : i+size]
		for a, b := 0, size-1; a < b; a, b = a+1, b-1 {
			e[a], e[b] = e[b], e[a]
		}
	}
}

// fortranToC reorders column-major data of the given shape to row-major.
func fortranToC(data []byte, shape []int, size int) []byte {
	if len(shape) < 2 || len(data) == 0 {
		return data
	}
	// Fortran strides, in elements.
	strides := make([]int, len(shape))
	s := 1
	for k, d := range shape {
		strides[k] = s
		s *= d
	}
	out := make([]byte, len(data))
	idx := make([]int, len(shape))
	src := 0
	for dst := 0; dst < len(out); dst += size {
		copy(out[dst:dst+size], data[src*size:src*size+size])
		// Advance the row-major multi-index, tracking the Fortran offset.
		for k := len(shape) - 1; k >= 0; k-- {
			idx[k]++
			src += strides[k]
			if idx[k] < shape[k] {
				break
			}
			src -= idx[k] * strides[k]
			idx[k] = 0
		}
	}
	return out
}

// parseHeader validates the header dict and extracts its three fields.
func parseHeader(hdr []byte) (dt dtype, shape []int, fortran bool, err error) {
	p := &pyParser{s: hdr}
	v, err := p.parse()
	if err != nil {
		return dtype{}, nil, false, fmt.Errorf("bad header %q: %w", clip(hdr), err)
	}
	d, ok := v.(map[string]any)
	if !ok {
		return dtype{}, nil, false, fmt.Errorf("bad header %q: not a dict", clip(hdr))
	}
	for k := range d {
		if k != "descr" && k != "fortran_order" && k != "shape" {
			return dtype{}, nil, false, fmt.Errorf("bad header: unexpected key %s", safeio.Quote(k))
		}
	}
	if len(d) != 3 {
		return dtype{}, nil, false, fmt.Errorf("bad header %q: want keys descr, fortran_order and shape", clip(hdr))
	}

	switch descr := d["descr"].(type) {
	case string:
		if dt, err = parseDescr(descr); err != nil {
			return dtype{}, nil, false, err
		}
	case pyList:
		return dtype{}, nil, false, errors.New("structured dtypes are not supported")
	default:
		return dtype{}, nil, false, fmt.Errorf("bad header: descr is %T, not a string", descr)
	}

	if fortran, ok = d["fortran_order"].(bool); !ok {
		return dtype{}, nil, false, errors.New("bad header: fortran_order is not True or False")
	}

	tuple, ok := d["shape"].(pyTuple)
	if !ok {
		return dtype{}, nil, false, errors.New("bad header: shape is not a tuple")
	}
	if len(tuple) > MaxDims {
		return dtype{}, nil, false, fmt.Errorf("%d dimensions exceed the limit of %d", len(tuple), MaxDims)
	}
	shape = make([]int, len(tuple))
	for i, e := range tuple {
		n, ok := e.(int64)
		if !ok {
			return dtype{}, nil, false, fmt.Errorf("bad header: shape element %s is not an integer", clip([]byte(fmt.Sprint(e))))
		}
		if n < 0 {
			return dtype{}, nil, false, fmt.Errorf("negative dimension %d in shape", n)
		}
		if uint64(n) > math.MaxInt {
			return dtype{}, nil, false, fmt.Errorf("dimension %d too large", n)
		}
		shape[i] = int(n)
	}
	return dt, shape, fortran, nil
}

// clip shortens a header for inclusion in an error message.
func clip(b []byte) string {
	const limit = 200
	if len(b) > limit {
		return string(b[:limit]) + "..."
	}
	return string(b)
}

// Write encodes a as a .npy file. Data must be little-endian and in C order,
// as described by Array. The header is padded so that the data starts at a
// 64-byte aligned offset.
func Write(w io.Writer, a Array) error {
	dt, err := parseDescr(a.Descr)
	if err != nil {
		return fmt.Errorf("npy: %w", err)
	}
	if dt.bigEndian {
		return fmt.Errorf("npy: descr %q is big-endian; Array data is little-endian", a.Descr)
	}
	n, err := byteSize(a.Shape, dt.size)
	if err != nil {
		return fmt.Errorf("npy: %w", err)
	}
	if n != len(a.Data) {
		return fmt.Errorf("npy: shape %v of %s needs %d bytes, data has %d", a.Shape, dt.canonical, n, len(a.Data))
	}

	var dict strings.Builder
	fmt.Fprintf(&dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", dt.canonical)
	for i, d := range a.Shape {
		if i > 0 {
			dict.WriteString(", ")
		}
		dict.WriteString(strconv.Itoa(d))
	}
	if len(a.Shape) == 1 {
		dict.WriteByte(',')
	}
	dict.WriteString("), }")

	pre, hdr := frameHeader(dict.String())
	if _, err := w.Write(pre); err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	_, err = w.Write(a.Data)
	return err
}

// frameHeader pads the header dict with spaces and a newline so that the
// data starts at a 64-byte aligned offset, and returns it with the preamble
// (magic, version and header length). It uses format version 1.0 unless the
// header is too long for its 16-bit length field, and 2.0 otherwise.
func frameHeader(dict string) (preamble, header []byte) {
	pad := func(prefixLen int) []byte {
		total := prefixLen + len(dict) + 1 // + newline
		return []byte(dict + strings.Repeat(" ", (64-total%64)%64) + "\n")
	}
	header = pad(len(magic) + 4)
	if len(header) <= math.MaxUint16 {
		preamble = append([]byte(magic), 1, 0)
		return binary.LittleEndian.AppendUint16(preamble, uint16(len(header))), header
	}
	header = pad(len(magic) + 6)
	preamble = append([]byte(magic), 2, 0)
	return binary.LittleEndian.AppendUint32(preamble, uint32(len(header))), header
}

// ReadFile reads the .npy file at path, which must be a regular file (see
// safeio.Open); a header declaring more data than the file holds is refused
// before any is read.
func ReadFile(path string) (Array, error) {
	f, size, err := safeio.Open(path)
	if err != nil {
		return Array{}, err
	}
	defer f.Close()
	return read(bufio.NewReader(f), size)
}

// WriteFile writes a to the .npy file at path atomically (see package
// atomicfile): readers find either the old file or the complete new one.
func WriteFile(path string, a Array) error {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer f.Close() // removes the temporary unless Commit succeeded
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := Write(bw, a); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Commit()
}
