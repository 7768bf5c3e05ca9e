// Package onnx runs ONNX models in Go programs and exports Ember models to
// ONNX. To serve a model exported by PyTorch (torch.onnx.export) or any
// other framework, Load it, make a Session once with NewSession, and call
// Session.Run from as many goroutines as you like; ExampleModel_NewSession
// is a runnable example. To write an nn.Module as an ONNX file that ONNX
// Runtime or Ember can run, call ExportFile (or Export, ExportFunc) with an
// example input.
//
// Load or Read parses a model (protobuf decoded by field number, external
// data read from the model's folder), NewSession checks every operator
// against the registry, sorts the graph and folds constant subgraphs, and
// Session.Run executes it for one set of inputs. Graphs whose inputs or
// outputs are sequences or optionals run through Session.RunValues, which
// takes and returns Sequence and Optional values beside tensors. A Session
// is safe for concurrent use by many goroutines.
//
// Model files and inputs come from outside the program, so nothing in them
// can panic the caller: malformed or hostile models, external data outside
// the model's folder, inputs of the wrong name, type or shape, and runs that
// would exceed the memory budget (LoadOptions.MaxBytes and
// SessionOptions.MaxBytes, half the machine's memory by default) are errors.
package onnx

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"

	"github.com/emberml/ember/internal/safeio"
	"github.com/emberml/ember/tensor"
)

// maxModelBytes bounds what Read accepts (protobuf messages are at most 2 GiB).
const maxModelBytes = 2 << 30

// Dim is one dimension of a declared shape: Value is the static size, or -1
// when the dimension is symbolic (Param names it) or unknown.
type Dim struct {
	Value int64
	Param string
}

// String returns the size, the symbol, or "?".
func (d Dim) String() string {
	switch {
	case d.Value >= 0:
		return fmt.Sprint(d.Value)
	case d.Param != "":
		return d.Param
	}
	return "?"
}

// ValueInfo describes a graph input or output as the model declares it.
type ValueInfo struct {
	// Name is the value's name in the graph.
	Name string
	// Kind is "tensor", "sequence", "map", "optional" or "sparse_tensor"
	// ("" when the model gives no type).
	Kind string
	// ElemType is the ONNX element type name ("FLOAT", "INT64", ...).
	ElemType string
	// HasShape reports whether a shape was declared; Shape holds it.
	HasShape bool
	Shape    []Dim
	// Elem is, for a sequence, the type of its elements and, for an
	// optional, the type of the value it may hold (nil when the model does
	// not say, and for the other kinds).
	Elem     *ValueInfo
	elemType int64
}

// DType returns the tensor dtype of the value's element type, or an error
// for element types Ember cannot hold.
func (v ValueInfo) DType() (tensor.DType, error) { return dtypeFromONNX(v.elemType) }

func toValueInfo(vi *valueInfo) ValueInfo {
	v := ValueInfo{Name: vi.name, Kind: vi.kind, HasShape: vi.hasShape, Shape: vi.dims, elemType: vi.elemType}
	if vi.kind == "tensor" {
		v.ElemType = typeName(vi.elemType)
	}
	if vi.elem != nil {
		e := toValueInfo(vi.elem)
		e.Name = vi.name
		v.Elem = &e
	}
	return v
}

// Model is a parsed ONNX model: its metadata, its declared inputs and
// outputs, and the graph with its initializers decoded.
type Model struct {
	// IRVersion is the ONNX IR version of the file.
	IRVersion int64
	// ProducerName and ProducerVersion name the exporter.
	ProducerName, ProducerVersion string
	// Opsets maps each imported operator-set domain ("" is the default
	// ai.onnx domain) to its version.
	Opsets map[string]int64
	// Inputs are the graph inputs a caller must feed (those without an
	// initializer); Outputs are the graph outputs.
	Inputs, Outputs []ValueInfo

	graph        *graphProto
	baseDir      string
	initializers map[string]*tensor.Tensor
	// strs holds the pools of STRING initializers, whose entries in
	// initializers are markers (see strings.go).
	strs strTable
	// overridable holds initializers that are also graph inputs: a caller
	// may feed them, otherwise the initializer is the value.
	overridable map[string]bool
}

// LoadOptions configures LoadContext and ReadContext. The zero value is
// the default.
type LoadOptions struct {
	// MaxBytes caps the bytes of the model's tensors: each initializer
	// (external data and densified sparse tensors included) is checked
	// against it before it is allocated, and so is their sum. Zero means
	// DefaultMaxBytes (half the machine's physical memory).
	MaxBytes int64
}

// Load reads the ONNX model file at path with the default LoadOptions.
// External data is read from the file's folder (see LoadContext).
func Load(path string) (*Model, error) {
	return LoadContext(context.Background(), path, LoadOptions{})
}

// LoadContext reads the ONNX model file at path. External data is read
// from the file's folder: a location must be a relative path that stays
// inside the folder once symbolic links are followed, and name a regular
// file. Reading stops with ctx's error once ctx is done.
func LoadContext(ctx context.Context, path string, opts LoadOptions) (*Model, error) {
	m, err := loadContext(ctx, path, opts)
	return m, bounded(err)
}

// loadContext is LoadContext with errors of any length.
func loadContext(ctx context.Context, path string, opts LoadOptions) (*Model, error) {
	// A regular file only, opened without blocking on a FIFO.
	f, size, err := safeio.Open(path)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	defer f.Close()
	if limit := modelLimit(opts); size > limit {
		return nil, fmt.Errorf("onnx: model file %s has %d bytes, more than the limit of %d bytes", short(path), size, limit)
	}
	b, err := readModelBytes(f, opts, size)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	return parse(ctx, b, dataSource{dir: dir, maxBytes: byteLimit(opts.MaxBytes), ctx: ctx})
}

// Read parses an ONNX model from r with the default LoadOptions. Models
// with external data must be read with Load, which knows their folder.
func Read(r io.Reader) (*Model, error) {
	return ReadContext(context.Background(), r, LoadOptions{})
}

// ReadContext parses an ONNX model from r under opts. Models with external
// data must be read with LoadContext, which knows their folder.
func ReadContext(ctx context.Context, r io.Reader, opts LoadOptions) (*Model, error) {
	b, err := readModelBytes(r, opts, 0)
	if err != nil {
		return nil, err
	}
	m, err := parse(ctx, b, dataSource{maxBytes: byteLimit(opts.MaxBytes), ctx: ctx})
	return m, bounded(err)
}

// modelLimit is the size a model's bytes may have: 2 GiB (the protobuf
// limit) or the byte budget if it is smaller.
func modelLimit(opts LoadOptions) int64 { return min(int64(maxModelBytes), byteLimit(opts.MaxBytes)) }

// readModelBytes reads a whole model, refusing more than modelLimit bytes.
// size, when known, sizes the buffer at once.
func readModelBytes(r io.Reader, opts LoadOptions, size int64) ([]byte, error) {
	limit := modelLimit(opts)
	var buf bytes.Buffer
	if size > 0 && size <= limit {
		buf.Grow(int(size) + bytes.MinRead)
	}
	n, err := io.Copy(&buf, io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("onnx: model is larger than %d bytes", limit)
	}
	return buf.Bytes(), nil
}

// The IR versions Load accepts: 3 (ONNX 1.0's opset imports) to 13 (ONNX
// 1.19 and later, whose structure is IR 11's with new element types).
const (
	minIRVersion = 3
	maxIRVersion = 13
)

func parse(ctx context.Context, b []byte, src dataSource) (*Model, error) {
	mp, err := decodeModel(b)
	if err != nil {
		return nil, err
	}
	if mp.irVersion < minIRVersion || mp.irVersion > maxIRVersion {
		return nil, fmt.Errorf("onnx: IR version %d is not supported (want %d to %d)", mp.irVersion, minIRVersion, maxIRVersion)
	}
	m := &Model{
		IRVersion:       mp.irVersion,
		ProducerName:    mp.producerName,
		ProducerVersion: mp.producerVer,
		Opsets:          map[string]int64{},
		graph:           mp.graph,
		baseDir:         src.dir,
		initializers:    map[string]*tensor.Tensor{},
		overridable:     map[string]bool{},
	}
	for _, o := range mp.opsets {
		d := o.domain
		if d == "ai.onnx" {
			d = ""
		}
		m.Opsets[d] = o.version
	}
	// Every initializer is checked against what is left of the budget
	// once the file's bytes are counted, so the sum fits it too.
	left := src
	left.limit = src.maxBytes
	left.maxBytes -= int64(len(b))
	take := func(t *tensor.Tensor) {
		left.maxBytes -= tensorBytes(t)
	}
	for _, tp := range mp.graph.initializers {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("onnx: loading stopped: %w", err)
		}
		if tp.name == "" {
			return nil, fmt.Errorf("onnx: graph has an initializer without a name")
		}
		if _, dup := m.initializers[tp.name]; dup {
			return nil, fmt.Errorf("onnx: initializer %s is defined twice", short(tp.name))
		}
		t, err := m.initializer(tp, left)
		if err != nil {
			return nil, err
		}
		take(t)
		m.initializers[tp.name] = t
	}
	for _, sp := range mp.graph.sparseInits {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("onnx: loading stopped: %w", err)
		}
		name := sp.values.name
		if _, dup := m.initializers[name]; dup || name == "" {
			return nil, fmt.Errorf("onnx: sparse initializer %s is unnamed or defined twice", short(name))
		}
		t, err := sp.toTensor(left)
		if err != nil {
			return nil, err
		}
		take(t)
		m.initializers[name] = t
	}
	for _, in := range mp.graph.inputs {
		if _, ok := m.initializers[in.name]; ok {
			m.overridable[in.name] = true
			continue
		}
		m.Inputs = append(m.Inputs, toValueInfo(in))
	}
	for _, out := range mp.graph.outputs {
		m.Outputs = append(m.Outputs, toValueInfo(out))
	}
	return m, nil
}

// OpCounts returns how many nodes of each operator type the main graph has;
// types outside the default domain are written "domain.Type".
func (m *Model) OpCounts() map[string]int {
	c := map[string]int{}
	for _, n := range m.graph.nodes {
		c[qualified(n.domain, n.opType)]++
	}
	return c
}

// Parameters returns the number of initializers and their total element
// count.
func (m *Model) Parameters() (tensors, elements int) {
	for _, t := range m.initializers {
		tensors++
		elements += t.Numel()
	}
	return tensors, elements
}

// Initializer returns the initializer named name, or nil (also for a
// STRING initializer, which InitializerStrings returns).
func (m *Model) Initializer(name string) *tensor.Tensor {
	t := m.initializers[name]
	if _, isStr := m.strs[t]; isStr {
		return nil
	}
	return t
}

// InitializerNames returns the initializer names in sorted order.
func (m *Model) InitializerNames() []string {
	names := make([]string, 0, len(m.initializers))
	for n := range m.initializers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func qualified(domain, op string) string {
	if domain == "" || domain == "ai.onnx" {
		return op
	}
	return domain + "." + op
}
