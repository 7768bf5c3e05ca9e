// Package devicetest provides an emulated device for tests: a tensor.Backend
// of kind "emul" that computes with the CPU backend but keeps its memory in
// buffers of its own type. Code that only goes through the backend contract
// runs on it unchanged; code that assumes CPU storage (type-asserting the
// CPU buffer, reading host slices, or allocating on the CPU and mixing the
// result with device tensors) fails loudly or gives itself away in the
// transfer counters, exactly where it would on a real accelerator — without
// needing one.
//
// Each ordinal ("emul:0", "emul:1", ...) is an independent backend with its
// own transfer counters, so tests that count transfers can take an ordinal
// of their own and run in parallel with others.
package devicetest

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/emberml/ember/tensor"
)

// Kind is the device kind the emulated backend registers.
const Kind = "emul"

var registerOnce sync.Once

// Register makes the "emul" device kind available to tensor.BackendFor. It
// may be called any number of times, from any goroutine.
func Register() {
	registerOnce.Do(func() {
		tensor.RegisterBackend(Kind, func(index int) (tensor.Backend, error) {
			if index < 0 {
				return nil, fmt.Errorf("devicetest: negative device ordinal %d", index)
			}
			cpu, err := tensor.BackendFor(tensor.CPU)
			if err != nil {
				return nil, err
			}
			return &Backend{cpu: cpu, dev: tensor.Device(fmt.Sprintf("%s:%d", Kind, index))}, nil
		})
	})
}

// Device registers the emulated kind and returns the device "emul:i".
func Device(i int) tensor.Device {
	Register()
	return tensor.Device(fmt.Sprintf("%s:%d", Kind, i))
}

// Open registers the emulated kind and returns the backend of the emulated
// device d, for its transfer counters. It panics if d is not an "emul"
// device.
func Open(d tensor.Device) *Backend {
	Register()
	if d.Kind() != Kind {
		panic(fmt.Sprintf("devicetest.Open: %s is not an %s device", d, Kind))
	}
	b, err := tensor.BackendFor(d)
	if err != nil {
		panic(fmt.Sprintf("devicetest.Open: %v", err))
	}
	return b.(*Backend)
}

// Buffer is the emulated device's memory: a CPU buffer that only the
// emulated backend can see into.
type Buffer struct {
	inner tensor.Buffer
	dev   tensor.Device
}

// DType implements tensor.Buffer.
func (b *Buffer) DType() tensor.DType { return b.inner.DType() }

// Len implements tensor.Buffer.
func (b *Buffer) Len() int { return b.inner.Len() }

// Device returns the emulated device the buffer was allocated on.
func (b *Buffer) Device() tensor.Device { return b.dev }

// Backend is the emulated device's backend. Every method checks that the
// buffers it is given were allocated on its own device, unwraps them and
// delegates to the CPU backend.
type Backend struct {
	cpu tensor.Backend
	dev tensor.Device

	toHost, fromHost, allocs atomic.Int64
}

// Transfers returns how many ToHost and FromHost calls the backend has
// served since it was opened or last reset.
func (b *Backend) Transfers() (toHost, fromHost int64) {
	return b.toHost.Load(), b.fromHost.Load()
}

// Allocs returns how many buffers the backend has allocated (Alloc and
// FromHost) since it was opened or last reset.
func (b *Backend) Allocs() int64 { return b.allocs.Load() }

// ResetCounters sets the transfer and allocation counters to zero.
func (b *Backend) ResetCounters() {
	b.toHost.Store(0)
	b.fromHost.Store(0)
	b.allocs.Store(0)
}

// wrap makes inner a buffer of this device.
func (b *Backend) wrap(inner tensor.Buffer) *Buffer {
	b.allocs.Add(1)
	return &Buffer{inner: inner, dev: b.dev}
}

// un returns the CPU buffer inside buf, panicking if buf is not memory of
// this device (a CPU buffer or another device's buffer reached a kernel).
// A nil buffer stays nil: several kernels take optional operands.
func (b *Backend) un(op string, buf tensor.Buffer) tensor.Buffer {
	if buf == nil {
		return nil
	}
	e, ok := buf.(*Buffer)
	if !ok {
		panic(fmt.Sprintf("devicetest: %s on %s was given a %T, not memory of this device (a tensor on another device reached the kernel)", op, b.dev, buf))
	}
	if e.dev != b.dev {
		panic(fmt.Sprintf("devicetest: %s on %s was given a buffer of %s", op, b.dev, e.dev))
	}
	return e.inner
}

func (b *Backend) span(op string, s tensor.Span) tensor.Span {
	return tensor.Span{Buf: b.un(op, s.Buf), Offset: s.Offset}
}

// Device implements tensor.Backend.
func (b *Backend) Device() tensor.Device { return b.dev }

// Alloc implements tensor.Backend.
func (b *Backend) Alloc(dt tensor.DType, n int) tensor.Buffer { return b.wrap(b.cpu.Alloc(dt, n)) }

// FromHost implements tensor.Backend and counts the transfer.
func (b *Backend) FromHost(dt tensor.DType, data any) tensor.Buffer {
	b.fromHost.Add(1)
	return b.wrap(b.cpu.FromHost(dt, data))
}

// ToHost implements tensor.Backend and counts the transfer.
func (b *Backend) ToHost(src tensor.Buffer, l tensor.Layout) any {
	b.toHost.Add(1)
	return b.cpu.ToHost(b.un("ToHost", src), l)
}

// Copy implements tensor.Backend.
func (b *Backend) Copy(dst, src tensor.Buffer, l tensor.Layout) {
	b.cpu.Copy(b.un("Copy", dst), b.un("Copy", src), l)
}

// Assign implements tensor.Backend.
func (b *Backend) Assign(dst tensor.Buffer, dl tensor.Layout, src tensor.Buffer, sl tensor.Layout) {
	b.cpu.Assign(b.un("Assign", dst), dl, b.un("Assign", src), sl)
}

// Fill implements tensor.Backend.
func (b *Backend) Fill(dst tensor.Buffer, v float64) { b.cpu.Fill(b.un("Fill", dst), v) }

// Unary implements tensor.Backend.
func (b *Backend) Unary(op tensor.UnaryOp, dst, src tensor.Buffer, l tensor.Layout) {
	b.cpu.Unary(op, b.un("Unary", dst), b.un("Unary", src), l)
}

// Binary implements tensor.Backend.
func (b *Backend) Binary(op tensor.BinaryOp, dst, x tensor.Buffer, lx tensor.Layout, y tensor.Buffer, ly tensor.Layout) {
	b.cpu.Binary(op, b.un("Binary", dst), b.un("Binary", x), lx, b.un("Binary", y), ly)
}

// Where implements tensor.Backend.
func (b *Backend) Where(dst, cond tensor.Buffer, lc tensor.Layout, x tensor.Buffer, lx tensor.Layout, y tensor.Buffer, ly tensor.Layout) {
	b.cpu.Where(b.un("Where", dst), b.un("Where", cond), lc, b.un("Where", x), lx, b.un("Where", y), ly)
}

// Reduce implements tensor.Backend.
func (b *Backend) Reduce(op tensor.ReduceOp, dst, src tensor.Buffer, outer, n int) {
	b.cpu.Reduce(op, b.un("Reduce", dst), b.un("Reduce", src), outer, n)
}

// ArgReduce implements tensor.Backend.
func (b *Backend) ArgReduce(max bool, dst, src tensor.Buffer, outer, n, inner int) {
	b.cpu.ArgReduce(max, b.un("ArgReduce", dst), b.un("ArgReduce", src), outer, n, inner)
}

// Scan implements tensor.Backend.
func (b *Backend) Scan(prod bool, dst, src tensor.Buffer, outer, n, inner int) {
	b.cpu.Scan(prod, b.un("Scan", dst), b.un("Scan", src), outer, n, inner)
}

// MatMul implements tensor.Backend.
func (b *Backend) MatMul(dst, x, y tensor.Buffer, p tensor.MatMulParams) {
	b.cpu.MatMul(b.un("MatMul", dst), b.un("MatMul", x), b.un("MatMul", y), p)
}

// Gather implements tensor.IndexKernels.
func (b *Backend) Gather(dst, src tensor.Buffer, sl tensor.Layout, axis int, idx tensor.Buffer, il tensor.Layout) error {
	return b.cpu.Gather(b.un("Gather", dst), b.un("Gather", src), sl, axis, b.un("Gather", idx), il)
}

// Scatter implements tensor.IndexKernels.
func (b *Backend) Scatter(dst tensor.Buffer, dl tensor.Layout, axis int, idx tensor.Buffer, il tensor.Layout, src tensor.Buffer, sl tensor.Layout, accumulate bool) error {
	return b.cpu.Scatter(b.un("Scatter", dst), dl, axis, b.un("Scatter", idx), il, b.un("Scatter", src), sl, accumulate)
}

// MaskedSelect implements tensor.IndexKernels.
func (b *Backend) MaskedSelect(dst, src tensor.Buffer, sl tensor.Layout, mask tensor.Buffer, ml tensor.Layout) {
	b.cpu.MaskedSelect(b.un("MaskedSelect", dst), b.un("MaskedSelect", src), sl, b.un("MaskedSelect", mask), ml)
}

// MaskedScatter implements tensor.IndexKernels.
func (b *Backend) MaskedScatter(dst tensor.Buffer, dl tensor.Layout, mask tensor.Buffer, ml tensor.Layout, src tensor.Buffer, sl tensor.Layout) {
	b.cpu.MaskedScatter(b.un("MaskedScatter", dst), dl, b.un("MaskedScatter", mask), ml, b.un("MaskedScatter", src), sl)
}

// Im2Col implements tensor.NNKernels.
func (b *Backend) Im2Col(dst, src tensor.Buffer, srcOff int, g tensor.ConvGeom) {
	b.cpu.Im2Col(b.un("Im2Col", dst), b.un("Im2Col", src), srcOff, g)
}

// Col2Im implements tensor.NNKernels.
func (b *Backend) Col2Im(dst, src tensor.Buffer, g tensor.ConvGeom) {
	b.cpu.Col2Im(b.un("Col2Im", dst), b.un("Col2Im", src), g)
}

// MaxPool2d implements tensor.NNKernels.
func (b *Backend) MaxPool2d(dst, indices, src tensor.Buffer, srcOff int, g tensor.PoolGeom) {
	b.cpu.MaxPool2d(b.un("MaxPool2d", dst), b.un("MaxPool2d", indices), b.un("MaxPool2d", src), srcOff, g)
}

// PlaneGather implements tensor.NNKernels.
func (b *Backend) PlaneGather(dst, src tensor.Buffer, srcOff int, indices tensor.Buffer, planes, n, m int) {
	b.cpu.PlaneGather(b.un("PlaneGather", dst), b.un("PlaneGather", src), srcOff, b.un("PlaneGather", indices), planes, n, m)
}

// PlaneScatterAdd implements tensor.NNKernels.
func (b *Backend) PlaneScatterAdd(dst, src tensor.Buffer, srcOff int, indices tensor.Buffer, planes, n, m int) {
	b.cpu.PlaneScatterAdd(b.un("PlaneScatterAdd", dst), b.un("PlaneScatterAdd", src), srcOff, b.un("PlaneScatterAdd", indices), planes, n, m)
}

// AvgPool2d implements tensor.NNKernels.
func (b *Backend) AvgPool2d(dst, src tensor.Buffer, srcOff int, g tensor.PoolGeom) {
	b.cpu.AvgPool2d(b.un("AvgPool2d", dst), b.un("AvgPool2d", src), srcOff, g)
}

// AvgPool2dBackward implements tensor.NNKernels.
func (b *Backend) AvgPool2dBackward(dst, grad tensor.Buffer, gradOff int, g tensor.PoolGeom) {
	b.cpu.AvgPool2dBackward(b.un("AvgPool2dBackward", dst), b.un("AvgPool2dBackward", grad), gradOff, g)
}

// AdaptiveAvgPool2d implements tensor.NNKernels.
func (b *Backend) AdaptiveAvgPool2d(dst, src tensor.Buffer, srcOff int, planes, h, w, oh, ow int) {
	b.cpu.AdaptiveAvgPool2d(b.un("AdaptiveAvgPool2d", dst), b.un("AdaptiveAvgPool2d", src), srcOff, planes, h, w, oh, ow)
}

// AdaptiveAvgPool2dBackward implements tensor.NNKernels.
func (b *Backend) AdaptiveAvgPool2dBackward(dst, grad tensor.Buffer, gradOff int, planes, h, w, oh, ow int) {
	b.cpu.AdaptiveAvgPool2dBackward(b.un("AdaptiveAvgPool2dBackward", dst), b.un("AdaptiveAvgPool2dBackward", grad), gradOff, planes, h, w, oh, ow)
}

// Softmax implements tensor.NNKernels.
func (b *Backend) Softmax(log bool, dst, src tensor.Buffer, srcOff int, outer, n, inner int) {
	b.cpu.Softmax(log, b.un("Softmax", dst), b.un("Softmax", src), srcOff, outer, n, inner)
}

// Moments implements tensor.NNKernels.
func (b *Backend) Moments(mean, variance, src tensor.Buffer, srcOff int, outer, n, inner int) {
	b.cpu.Moments(b.un("Moments", mean), b.un("Moments", variance), b.un("Moments", src), srcOff, outer, n, inner)
}

// ScaleShift implements tensor.NNKernels.
func (b *Backend) ScaleShift(dst, src tensor.Buffer, srcOff int, scale, shift tensor.Buffer, outer, n, inner int) {
	b.cpu.ScaleShift(b.un("ScaleShift", dst), b.un("ScaleShift", src), srcOff, b.un("ScaleShift", scale), b.un("ScaleShift", shift), outer, n, inner)
}

// NormBackward implements tensor.NNKernels.
func (b *Backend) NormBackward(dx, sumG, sumGX, grad tensor.Buffer, gradOff int, x tensor.Buffer, xOff int, mean, rstd, scale tensor.Buffer, outer, n, inner int) {
	const op = "NormBackward"
	b.cpu.NormBackward(b.un(op, dx), b.un(op, sumG), b.un(op, sumGX), b.un(op, grad), gradOff, b.un(op, x), xOff, b.un(op, mean), b.un(op, rstd), b.un(op, scale), outer, n, inner)
}

// FusedAdam implements tensor.FusedKernels.
func (b *Backend) FusedAdam(n int, param, grad, expAvg, expAvgSq, maxExpAvgSq tensor.Span, p tensor.AdamStep) {
	const op = "FusedAdam"
	b.cpu.FusedAdam(n, b.span(op, param), b.span(op, grad), b.span(op, expAvg), b.span(op, expAvgSq), b.span(op, maxExpAvgSq), p)
}

// FusedSGD implements tensor.FusedKernels.
func (b *Backend) FusedSGD(n int, param, grad, buf tensor.Span, p tensor.SGDStep) {
	b.cpu.FusedSGD(n, b.span("FusedSGD", param), b.span("FusedSGD", grad), b.span("FusedSGD", buf), p)
}

// AddInto implements tensor.FusedKernels.
func (b *Backend) AddInto(n int, dst tensor.Span, src tensor.Buffer, sl tensor.Layout) {
	b.cpu.AddInto(n, b.span("AddInto", dst), b.un("AddInto", src), sl)
}

var _ tensor.Backend = (*Backend)(nil)
