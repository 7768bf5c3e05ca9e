// Package safetensors reads and writes the safetensors file format.
//
// A safetensors file is laid out as
//
//	+--------------------+--------------------+----------------------+
//	| N: u64 little-end. | N bytes JSON header| byte buffer          |
//	+--------------------+--------------------+----------------------+
//
// The header is a JSON object mapping tensor names to
// {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, plus an
// optional "__metadata__" entry holding a string-to-string map. Offsets are
// relative to the start of the byte buffer, and the tensors must cover the
// buffer exactly, without holes or overlaps. Tensor bytes are little-endian
// and row-major.
//
// The package works on a neutral raw-array representation ([Tensor]) and
// knows nothing about any in-memory tensor type.
package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/emberml/ember/internal/atomicfile"
	"github.com/emberml/ember/internal/safeio"
)

// MetadataKey is the reserved header key holding free-form string metadata.
// It cannot be used as a tensor name.
const MetadataKey = "__metadata__"

// MaxHeaderSize is the largest JSON header, in bytes, that Decode accepts:
// 16 MiB, room for about 100,000 tensors (the headers of real models, even
// the shards of the largest language models, take well under 1 MiB). The
// reference implementation's limit, 100 MB, lets a hostile header cost
// seconds to parse.
const MaxHeaderSize = 16 << 20

// MaxTensors is the most tensors Decode accepts in one file: 65,536, many
// times what a model's file holds (the shards of the largest models hold a
// few thousand), and few enough that a hostile header of tiny entries is
// refused in well under a second.
const MaxTensors = 1 << 16

// Tensor is a raw tensor as stored in a safetensors file.
type Tensor struct {
	// DType is one of the dtype names accepted by DTypeSize, e.g. "F32".
	DType string
	// Shape holds the dimensions; an empty shape denotes a scalar.
	Shape []int
	// Data holds the elements, little-endian and in row-major order.
	Data []byte
}

// dtypeSizes maps the supported dtype names to their element size in bytes.
var dtypeSizes = map[string]int{
	"F64":  8,
	"F32":  4,
	"F16":  2,
	"BF16": 2,
	"I64":  8,
	"I32":  4,
	"I16":  2,
	"I8":   1,
	"U16":  2,
	"U32":  4,
	"U64":  8,
	"U8":   1,
	"BOOL": 1,
}

// DTypeSize returns the size in bytes of one element of the named dtype.
// Supported dtypes are F64, F32, F16, BF16, I64, I32, I16, U16, U32, U64,
// I8, U8 and BOOL.
func DTypeSize(dtype string) (int, error) {
	n, ok := dtypeSizes[dtype]
	if !ok {
		return 0, fmt.Errorf("safetensors: %w", unknownDType(dtype))
	}
	return n, nil
}

// unknownDType returns the unprefixed error for an unsupported dtype.
func unknownDType(dtype string) error {
	return fmt.Errorf("unknown dtype %s", safeio.Quote(dtype))
}

// byteSize returns the number of bytes occupied by a tensor of the given
// dtype and shape, checking the rank, negative dimensions and overflow (even
// beside a zero dimension: see safeio.ShapeBytes). Its errors carry no
// package prefix; callers add the tensor's name.
func byteSize(dtype string, shape []int) (int, error) {
	size, ok := dtypeSizes[dtype]
	if !ok {
		return 0, unknownDType(dtype)
	}
	n, err := safeio.ShapeBytes(shape, size)
	if err != nil {
		return 0, fmt.Errorf("%w (dtype %s)", err, dtype)
	}
	return n, nil
}

// Encode writes tensors and optional metadata to w in safetensors format.
// Tensors are laid out in sorted name order, and the header is padded with
// spaces so that the byte buffer starts at an 8-byte aligned offset.
// A nil or empty metadata map is omitted from the header.
func Encode(w io.Writer, tensors map[string]Tensor, metadata map[string]string) error {
	if len(tensors) > MaxTensors || len(metadata) > MaxTensors {
		return fmt.Errorf("safetensors: %d tensors and %d metadata entries exceed the limit of %d each that readers accept",
			len(tensors), len(metadata), MaxTensors)
	}
	names := make([]string, 0, len(tensors))
	for name := range tensors {
		if name == MetadataKey {
			return fmt.Errorf("safetensors: tensor name %s is reserved", safeio.Quote(name))
		}
		names = append(names, name)
	}
	sort.Strings(names)

	var hdr bytes.Buffer
	hdr.WriteByte('{')
	first := true
	sep := func() {
		if !first {
			hdr.WriteByte(',')
		}
		first = false
	}
	for k, v := range metadata {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("safetensors: metadata entry %s: %s is not valid UTF-8", safeio.Quote(k), safeio.Quote(v))
		}
	}
	if len(metadata) > 0 {
		sep()
		writeJSONString(&hdr, MetadataKey)
		hdr.WriteByte(':')
		b, err := json.Marshal(metadata) // map keys are sorted by encoding/json
		if err != nil {
			return fmt.Errorf("safetensors: encoding metadata: %w", err)
		}
		hdr.Write(b)
	}
	var offset uint64
	for _, name := range names {
		t := tensors[name]
		if !utf8.ValidString(name) {
			return fmt.Errorf("safetensors: tensor name %s is not valid UTF-8", safeio.Quote(name))
		}
		n, err := byteSize(t.DType, t.Shape)
		if err != nil {
			return fmt.Errorf("safetensors: tensor %s: %w", safeio.Quote(name), err)
		}
		if n != len(t.Data) {
			return fmt.Errorf("safetensors: tensor %s: shape %v of dtype %s needs %d bytes, data has %d",
				safeio.Quote(name), t.Shape, t.DType, n, len(t.Data))
		}
		sep()
		writeJSONString(&hdr, name)
		hdr.WriteString(`:{"dtype":`)
		writeJSONString(&hdr, t.DType)
		hdr.WriteString(`,"shape":[`)
		for i, d := range t.Shape {
			if i > 0 {
				hdr.WriteByte(',')
			}
			fmt.Fprintf(&hdr, "%d", d)
		}
		fmt.Fprintf(&hdr, `],"data_offsets":[%d,%d]}`, offset, offset+uint64(n))
		offset += uint64(n)
	}
	hdr.WriteByte('}')
	if pad := hdr.Len() % 8; pad != 0 {
		hdr.WriteString(strings.Repeat(" ", 8-pad))
	}
	if hdr.Len() > MaxHeaderSize {
		return fmt.Errorf("safetensors: header of %d bytes exceeds the limit of %d bytes that readers accept", hdr.Len(), MaxHeaderSize)
	}

	var prefix [8]byte
	binary.LittleEndian.PutUint64(prefix[:], uint64(hdr.Len()))
	if _, err := w.Write(prefix[:]); err != nil {
		return err
	}
	if _, err := w.Write(hdr.Bytes()); err != nil {
		return err
	}
	for _, name := range names {
		if _, err := w.Write(tensors[name].Data); err != nil {
			return err
		}
	}
	return nil
}

// writeJSONString appends s to buf as a JSON string literal.
func writeJSONString(buf *bytes.Buffer, s string) {
	// Marshalling a string cannot fail.
	b, _ := json.Marshal(s)
	buf.Write(b)
}

// tensorInfo is the JSON form of one header entry. Pointers detect missing
// or null fields.
type tensorInfo struct {
	DType       *string      `json:"dtype"`
	Shape       *shapeList   `json:"shape"`
	DataOffsets *offsetsList `json:"data_offsets"`
}

// shapeList is a JSON shape: at most safeio.MaxRank integers, refused
// before a longer list is decoded.
type shapeList []int64

// UnmarshalJSON decodes a list of at most safeio.MaxRank integers.
func (s *shapeList) UnmarshalJSON(b []byte) error {
	v, err := parseIntList(b, safeio.MaxRank, "shape")
	*s = v
	return err
}

// offsetsList is a JSON data_offsets pair, refused before a longer list is
// decoded.
type offsetsList []int64

// UnmarshalJSON decodes a list of at most 2 integers.
func (o *offsetsList) UnmarshalJSON(b []byte) error {
	v, err := parseIntList(b, 2, "data_offsets")
	*o = v
	return err
}

// parseIntList decodes b, a JSON array of integers (the decoder has already
// checked that b is valid JSON), refusing more than limit elements as soon
// as the next one starts. Elements must be integers that fit in an int64.
func parseIntList(b []byte, limit int, what string) ([]int64, error) {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return nil, fmt.Errorf("%s is not a list", what)
	}
	body := bytes.TrimSpace(b[1 : len(b)-1])
	if len(body) == 0 {
		return []int64{}, nil
	}
	var out []int64
	for len(body) > 0 {
		if len(out) == limit {
			return nil, fmt.Errorf("%s has more than %d elements", what, limit)
		}
		elem, rest, _ := bytes.Cut(body, []byte{','})
		elem = bytes.TrimSpace(elem)
		v, err := strconv.ParseInt(string(elem), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s element %s is not an integer", what, safeio.Quote(string(elem)))
		}
		out = append(out, v)
		body = rest
	}
	return out, nil
}

// entry is a validated header entry awaiting its data slice.
type entry struct {
	name       string
	dtype      string
	shape      []int
	begin, end int
}

// Decode parses a complete safetensors file held in b. The returned tensors'
// Data slices alias b (with capacity clipped to their length), so b must not
// be modified while they are in use. The metadata map is nil when the file
// has no "__metadata__" entry.
func Decode(b []byte) (map[string]Tensor, map[string]string, error) {
	if err := checkHeaderLength(b, uint64(len(b))); err != nil {
		return nil, nil, err
	}
	n := binary.LittleEndian.Uint64(b[:8])
	hdr := b[8 : 8+n]
	data := b[8+n:]

	entries, metadata, err := parseHeader(hdr)
	if err != nil {
		return nil, nil, err
	}
	if err := checkCoverage(entries, len(data)); err != nil {
		return nil, nil, err
	}
	tensors := make(map[string]Tensor, len(entries))
	for _, e := range entries {
		tensors[e.name] = Tensor{
			DType: e.dtype,
			Shape: e.shape,
			Data:  data[e.begin:e.end:e.end],
		}
	}
	return tensors, metadata, nil
}

// parseHeader decodes and validates the JSON header, except for how the
// entries cover the byte buffer.
func parseHeader(hdr []byte) ([]entry, map[string]string, error) {
	if len(hdr) == 0 || hdr[0] != '{' {
		return nil, nil, errors.New("safetensors: header does not start with '{'")
	}
	if !utf8.Valid(hdr) {
		return nil, nil, errors.New("safetensors: header is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(hdr))
	if _, err := dec.Token(); err != nil { // the opening '{'
		return nil, nil, fmt.Errorf("safetensors: invalid JSON header: %w", err)
	}
	var (
		entries  []entry
		metadata map[string]string
		seen     = make(map[string]bool)
	)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("safetensors: invalid JSON header: %w", err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, nil, fmt.Errorf("safetensors: invalid JSON header: unexpected %s", safeio.Quote(fmt.Sprint(tok)))
		}
		if seen[name] {
			return nil, nil, fmt.Errorf("safetensors: duplicate header key %s", safeio.Quote(name))
		}
		seen[name] = true
		if name == MetadataKey {
			m, err := decodeMetadata(dec)
			if err != nil {
				return nil, nil, fmt.Errorf("safetensors: invalid %s: %w", MetadataKey, err)
			}
			metadata = m
			continue
		}
		if len(entries) == MaxTensors {
			return nil, nil, fmt.Errorf("safetensors: header holds more than %d tensors", MaxTensors)
		}
		var info tensorInfo
		if err := dec.Decode(&info); err != nil {
			return nil, nil, fmt.Errorf("safetensors: invalid header entry for tensor %s: %w", safeio.Quote(name), err)
		}
		e, err := validateInfo(name, info)
		if err != nil {
			return nil, nil, err
		}
		entries = append(entries, e)
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, nil, fmt.Errorf("safetensors: invalid JSON header: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("safetensors: invalid JSON header: trailing data after the header object")
	}
	return entries, metadata, nil
}

// decodeMetadata decodes the metadata object (or null) that dec is at: at
// most MaxTensors string entries, refused as soon as one more starts.
func decodeMetadata(dec *json.Decoder) (map[string]string, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok == nil {
		return map[string]string{}, nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%s is not an object", safeio.Quote(fmt.Sprint(tok)))
	}
	m := map[string]string{}
	for dec.More() {
		if len(m) == MaxTensors {
			return nil, fmt.Errorf("more than %d entries", MaxTensors)
		}
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		value, err := dec.Token()
		if err != nil {
			return nil, err
		}
		s, ok := value.(string)
		if !ok {
			return nil, fmt.Errorf("entry %s is not a string", safeio.Quote(key.(string)))
		}
		if _, dup := m[key.(string)]; dup {
			return nil, fmt.Errorf("duplicate entry %s", safeio.Quote(key.(string)))
		}
		m[key.(string)] = s
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, err
	}
	return m, nil
}

// validateInfo checks one tensor's header entry on its own.
func validateInfo(name string, info tensorInfo) (entry, error) {
	switch {
	case info.DType == nil:
		return entry{}, fmt.Errorf("safetensors: tensor %s: missing dtype", safeio.Quote(name))
	case info.Shape == nil:
		return entry{}, fmt.Errorf("safetensors: tensor %s: missing shape", safeio.Quote(name))
	case info.DataOffsets == nil:
		return entry{}, fmt.Errorf("safetensors: tensor %s: missing data_offsets", safeio.Quote(name))
	}
	dtype := *info.DType
	if _, ok := dtypeSizes[dtype]; !ok {
		return entry{}, fmt.Errorf("safetensors: tensor %s: %w", safeio.Quote(name), unknownDType(dtype))
	}
	shape := make([]int, len(*info.Shape))
	for i, d := range *info.Shape {
		if d < 0 {
			return entry{}, fmt.Errorf("safetensors: tensor %s: negative dimension %d in shape %v", safeio.Quote(name), d, []int64(*info.Shape))
		}
		if uint64(d) > math.MaxInt {
			return entry{}, fmt.Errorf("safetensors: tensor %s: dimension %d too large", safeio.Quote(name), d)
		}
		shape[i] = int(d)
	}
	size, err := byteSize(dtype, shape)
	if err != nil {
		return entry{}, fmt.Errorf("safetensors: tensor %s: %w", safeio.Quote(name), err)
	}
	offs := *info.DataOffsets
	if len(offs) != 2 {
		return entry{}, fmt.Errorf("safetensors: tensor %s: data_offsets has %d values, want 2", safeio.Quote(name), len(offs))
	}
	begin, end := offs[0], offs[1]
	if begin < 0 || end < begin || uint64(end) > math.MaxInt {
		return entry{}, fmt.Errorf("safetensors: tensor %s: invalid data_offsets [%d, %d]", safeio.Quote(name), begin, end)
	}
	if uint64(end-begin) != uint64(size) {
		return entry{}, fmt.Errorf("safetensors: tensor %s: shape %v of dtype %s needs %d bytes, data_offsets [%d, %d] span %d",
			safeio.Quote(name), shape, dtype, size, begin, end, end-begin)
	}
	return entry{name: name, dtype: dtype, shape: shape, begin: int(begin), end: int(end)}, nil
}

// checkCoverage verifies that the entries tile the data buffer [0, dataLen)
// exactly: in range, without overlaps and without holes.
func checkCoverage(entries []entry, dataLen int) error {
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b entry) int {
		if a.begin != b.begin {
			return a.begin - b.begin
		}
		return a.end - b.end
	})
	pos := 0
	for _, e := range sorted {
		if e.end > dataLen {
			return fmt.Errorf("safetensors: tensor %s: data_offsets [%d, %d] out of range of the %d-byte buffer",
				safeio.Quote(e.name), e.begin, e.end, dataLen)
		}
		switch {
		case e.begin < pos:
			return fmt.Errorf("safetensors: tensor %s: data_offsets [%d, %d] overlap another tensor", safeio.Quote(e.name), e.begin, e.end)
		case e.begin > pos:
			return fmt.Errorf("safetensors: hole in the byte buffer at [%d, %d)", pos, e.begin)
		}
		pos = e.end
	}
	if pos != dataLen {
		return fmt.Errorf("safetensors: byte buffer has %d bytes but the tensors cover only %d", dataLen, pos)
	}
	return nil
}

// ReadFile reads and decodes the safetensors file at path (see ReadFileBytes).
func ReadFile(path string) (map[string]Tensor, map[string]string, error) {
	b, err := ReadFileBytes(path)
	if err != nil {
		return nil, nil, err
	}
	return Decode(b)
}

// ReadFileBytes returns the bytes of the safetensors file at path, for
// Decode. The path must name a regular file (not a FIFO, device or folder:
// see safeio.Open), and the header length in its first 8 bytes is checked
// against the file's size and MaxHeaderSize before the rest is read, so a
// corrupt or hostile file fails at once whatever its size.
func ReadFileBytes(path string) ([]byte, error) {
	f, size, err := safeio.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > math.MaxInt {
		return nil, fmt.Errorf("safetensors: %s: file of %d bytes is too large for this platform", path, size)
	}
	var prefix [8]byte
	n, err := io.ReadFull(f, prefix[:min(size, 8)])
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, safeio.Truncated(err))
	}
	if err := checkHeaderLength(prefix[:n], uint64(size)); err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	b := make([]byte, size) // one allocation of the file's size, no more
	copy(b, prefix[:])
	if _, err := io.ReadFull(f, b[8:]); err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, safeio.Truncated(err))
	}
	return b, nil
}

// checkHeaderLength checks the header length that starts prefix, the first
// bytes of a file of fileSize bytes.
func checkHeaderLength(prefix []byte, fileSize uint64) error {
	if len(prefix) < 8 || fileSize < 8 {
		return fmt.Errorf("safetensors: file is %d bytes, too short for the 8-byte header length", fileSize)
	}
	n := binary.LittleEndian.Uint64(prefix[:8])
	if n > MaxHeaderSize {
		return fmt.Errorf("safetensors: header length %d exceeds the limit of %d bytes", n, MaxHeaderSize)
	}
	if rest := fileSize - 8; n > rest {
		return fmt.Errorf("safetensors: header length %d exceeds the %d bytes remaining in the file", n, rest)
	}
	return nil
}

// WriteFile encodes tensors and metadata in safetensors format to the file
// at path atomically (see package atomicfile): readers find either the old
// file or the complete new one, never a partial save.
func WriteFile(path string, tensors map[string]Tensor, metadata map[string]string) error {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer f.Close() // removes the temporary unless Commit succeeded
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := Encode(bw, tensors, metadata); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Commit()
}
