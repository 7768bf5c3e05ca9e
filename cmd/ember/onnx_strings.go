package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/emberml/ember/internal/atomicfile"
	"github.com/emberml/ember/internal/safeio"
	"github.com/emberml/ember/onnx"
	"github.com/emberml/ember/tensor"
)

// String tensors travel as NumPy unicode arrays: dtype '<U<n>' (each
// element n UTF-32 code units, NUL-padded), what np.save writes for
// np.array(["a", "bc"]). Byte strings ('|S<n>', taken as UTF-8) are read
// too.

// npyMagic opens every .npy file.
const npyMagic = "\x93NUMPY"

// maxNpyStringBytes caps the data of a string .npy file, so a header
// cannot make Ember allocate more than that.
const maxNpyStringBytes = 1 << 31

// loadInput reads the .npy file for the model input in: a string tensor for
// a STRING input, a tensor otherwise.
func loadInput(in onnx.ValueInfo, file string) (any, error) {
	if in.Kind == "tensor" && in.ElemType == "STRING" {
		f, _, err := safeio.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return readNpyStrings(f)
	}
	return tensor.LoadNpy(file)
}

var (
	npyDescr   = regexp.MustCompile(`'descr'\s*:\s*'([<>|=])([US])(\d+)'`)
	npyFortran = regexp.MustCompile(`'fortran_order'\s*:\s*(True|False)`)
	npyShape   = regexp.MustCompile(`'shape'\s*:\s*\(([^)]*)\)`)
)

// readNpyStrings reads a C-order .npy array of dtype '<U<n>' (or '>U<n>',
// or '|S<n>' as UTF-8) into a string tensor, trailing NULs removed.
func readNpyStrings(r io.Reader) (onnx.Strings, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil || string(pre[:6]) != npyMagic {
		return onnx.Strings{}, fmt.Errorf("not a .npy file")
	}
	var hlen int
	switch pre[6] {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return onnx.Strings{}, fmt.Errorf(".npy header: %w", err)
		}
		hlen = int(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return onnx.Strings{}, fmt.Errorf(".npy header: %w", err)
		}
		hlen = int(binary.LittleEndian.Uint32(b[:]))
	default:
		return onnx.Strings{}, fmt.Errorf(".npy format version %d is not supported", pre[6])
	}
	if hlen > 1<<20 {
		return onnx.Strings{}, fmt.Errorf(".npy header of %d bytes is too long", hlen)
	}
	header := make([]byte, hlen)
	if _, err := io.ReadFull(r, header); err != nil {
		return onnx.Strings{}, fmt.Errorf(".npy header: %w", err)
	}
	d := npyDescr.FindSubmatch(header)
	if d == nil {
		return onnx.Strings{}, fmt.Errorf(".npy array is not of a string dtype ('<U…' or '|S…'): %s", strings.TrimSpace(string(header)))
	}
	if f := npyFortran.FindSubmatch(header); f == nil || string(f[1]) == "True" {
		return onnx.Strings{}, fmt.Errorf(".npy string array must be in C order (save a contiguous copy)")
	}
	s := npyShape.FindSubmatch(header)
	if s == nil {
		return onnx.Strings{}, fmt.Errorf(".npy header has no shape")
	}
	width, err := strconv.Atoi(string(d[3]))
	if err != nil || width < 1 || width > 1<<20 {
		return onnx.Strings{}, fmt.Errorf(".npy string width %q is invalid", d[3])
	}
	unit := 1
	if d[2][0] == 'U' {
		unit = 4
	}
	out := onnx.Strings{Shape: []int{}}
	n := 1
	for _, f := range strings.Split(string(s[1]), ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil || v < 0 || v != 0 && n > maxNpyStringBytes/(width*unit)/v {
			return onnx.Strings{}, fmt.Errorf(".npy shape (%s) is invalid or too large", s[1])
		}
		out.Shape = append(out.Shape, v)
		n *= v
	}
	data := make([]byte, n*width*unit)
	if _, err := io.ReadFull(r, data); err != nil {
		return onnx.Strings{}, fmt.Errorf(".npy data: %w", err)
	}
	order := binary.ByteOrder(binary.LittleEndian)
	if d[1][0] == '>' {
		order = binary.BigEndian
	}
	out.Data = make([]string, n)
	for i := range out.Data {
		cell := data[i*width*unit : (i+1)*width*unit]
		if unit == 1 {
			out.Data[i] = string(bytes.TrimRight(cell, "\x00"))
			continue
		}
		var sb strings.Builder
		for k := 0; k < width; k++ {
			c := order.Uint32(cell[4*k:])
			if c == 0 {
				break // NumPy pads with NULs and drops trailing ones
			}
			if c > utf8.MaxRune {
				return onnx.Strings{}, fmt.Errorf(".npy string %d holds the invalid code point %#x", i, c)
			}
			sb.WriteRune(rune(c))
		}
		out.Data[i] = sb.String()
	}
	return out, nil
}

// writeNpyStrings writes s as a .npy array of dtype '<U<n>', n the longest
// element in code points (at least 1, as NumPy's own minimum).
func writeNpyStrings(w io.Writer, s onnx.Strings) error {
	width := 1
	for _, v := range s.Data {
		width = max(width, utf8.RuneCountInString(v))
	}
	dims := make([]string, len(s.Shape))
	for i, d := range s.Shape {
		dims[i] = strconv.Itoa(d)
	}
	shape := strings.Join(dims, ", ")
	if len(dims) == 1 {
		shape += ","
	}
	header := fmt.Sprintf("{'descr': '<U%d', 'fortran_order': False, 'shape': (%s), }", width, shape)
	// Pad so the data starts on a 64-byte boundary, the header ending in
	// '\n', as format version 1.0 asks.
	total := len(npyMagic) + 4 + len(header) + 1
	header += strings.Repeat(" ", (64-total%64)%64) + "\n"
	buf := make([]byte, 0, len(npyMagic)+4+len(header)+4*width*len(s.Data))
	buf = append(buf, npyMagic...)
	buf = append(buf, 1, 0)
	buf = binary.LittleEndian.AppendUint16(buf, uint16(len(header)))
	buf = append(buf, header...)
	for _, v := range s.Data {
		k := 0
		for _, c := range v {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(c))
			k++
		}
		buf = append(buf, make([]byte, 4*(width-k))...)
	}
	_, err := w.Write(buf)
	return err
}

// saveNpyStrings writes s to the file at path atomically.
func saveNpyStrings(path string, s onnx.Strings) error {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer f.Close() // removes the temporary unless Commit succeeded
	if err := writeNpyStrings(f, s); err != nil {
		return err
	}
	return f.Commit()
}
