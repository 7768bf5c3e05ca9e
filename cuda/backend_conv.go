//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"sync"

	"github.com/emberml/ember/cuda/internal/cudnn"
	"github.com/emberml/ember/cuda/internal/driver"
	"github.com/emberml/ember/internal/dl"
	"github.com/emberml/ember/tensor"
)

// maxConvPlans bounds the cuDNN plan cache of a device; a model sees a few
// hundred geometries at most, varying input sizes could see more.
const maxConvPlans = 4096

// convState is a device's cuDNN: the library and handle, opened on the
// first convolution, and the plans built so far.
type convState struct {
	once   sync.Once
	lib    *cudnn.Library
	handle cudnn.Handle
	// err says why cuDNN is not used on this device (library absent, handle
	// not created); every convolution is then declined.
	err error

	mu    sync.Mutex // serialises the handle; guards plans and runs
	plans *cudnn.Cache[*cudnn.Plan]
	// runs counts the convolutions cuDNN ran, by cudnn.Direction.
	runs [3]int64
}

var _ tensor.ConvKernels = (*Backend)(nil)

// cudnnState returns the device's cuDNN state, opening the library and a
// handle on the backend's stream the first time. A failure is remembered
// in the state's err.
func (b *Backend) cudnnState() *convState {
	st := &b.conv
	st.once.Do(func() {
		lib, err := cudnn.Load(driver.Opener(), dl.OSEnv())
		if err != nil {
			st.err = err
			return
		}
		unbind, err := b.drv.Bind(b.ctx)
		if err != nil {
			st.err = fmt.Errorf("cuDNN: device %d: %w", b.index, err)
			return
		}
		h, err := lib.Create(uintptr(b.stream))
		unbind()
		if err != nil {
			st.err = fmt.Errorf("cuDNN %s at %s: %w", lib.VersionString(), lib.Path, err)
			return
		}
		st.lib, st.handle = lib, h
		st.plans = cudnn.NewCache(maxConvPlans, lib.DestroyPlan)
	})
	return st
}

// cudnnInfo describes the cuDNN a device uses ("9.1.0 at /path"), or the
// error saying why it uses none.
func (b *Backend) cudnnInfo() (string, error) {
	st := b.cudnnState()
	if st.err != nil {
		return "", st.err
	}
	return fmt.Sprintf("%s at %s", st.lib.VersionString(), st.lib.Path), nil
}

// convRuns returns how many convolutions of each direction cuDNN has run
// on the device.
func (b *Backend) convRuns() [3]int64 {
	st := &b.conv
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.runs
}

// allowsTF32 reports whether SetAllowTF32 enabled TF32 on the device.
func (b *Backend) allowsTF32() bool {
	b.blasMu.Lock()
	defer b.blasMu.Unlock()
	return b.allowTF32
}

// cudnnConv returns the cuDNN geometry of a tensor convolution.
func cudnnConv(g tensor.ConvGeom, o, groups int) cudnn.Conv {
	return cudnn.Conv{
		N: g.N, C: g.C, H: g.H, W: g.W, O: o, KH: g.KH, KW: g.KW,
		StrideH: g.StrideH, StrideW: g.StrideW, PadH: g.PadH, PadW: g.PadW,
		DilationH: g.DilationH, DilationW: g.DilationW, OH: g.OH, OW: g.OW, Groups: groups,
	}
}

// cudnnType maps a float dtype to cuDNN's; ok is false for other dtypes.
func cudnnType(dt tensor.DType) (cudnn.DataType, bool) {
	switch dt {
	case tensor.Float32:
		return cudnn.DataFloat, true
	case tensor.Float64:
		return cudnn.DataDouble, true
	}
	return 0, false
}

// convMath is the math type of a convolution: float32 may use TF32 tensor
// cores only when SetAllowTF32 allowed it (CUDNN_DEFAULT_MATH permits TF32
// on Ampere and later; CUDNN_FMA_MATH forbids it), as PyTorch's
// torch.backends.cudnn.allow_tf32.
func convMath(dt cudnn.DataType, tf32 bool) cudnn.MathType {
	if dt == cudnn.DataFloat && !tf32 {
		return cudnn.FMAMath
	}
	return cudnn.DefaultMath
}

// convKey returns the plan key of a convolution, or ok = false when cuDNN
// cannot run it (dtype, geometry).
func convKey(dir cudnn.Direction, dtA, dtB tensor.DType, g tensor.ConvGeom, o, groups int, tf32 bool) (cudnn.Key, bool) {
	typ, ok := cudnnType(dtA)
	if !ok || dtB != dtA {
		return cudnn.Key{}, false
	}
	c := cudnnConv(g, o, groups)
	if c.Check() != nil {
		return cudnn.Key{}, false
	}
	return cudnn.Key{Conv: c, Type: typ, Math: convMath(typ, tf32), Dir: dir}, true
}

// ConvForward implements tensor.ConvKernels with cuDNN.
func (b *Backend) ConvForward(x, w tensor.Buffer, xOff, wOff int, g tensor.ConvGeom, o, groups int) (tensor.Buffer, bool) {
	return b.runConv(cudnn.Forward, x, w, xOff, wOff, g, o, groups)
}

// ConvBackwardInput implements tensor.ConvKernels with cuDNN's backward
// data convolution.
func (b *Backend) ConvBackwardInput(grad, w tensor.Buffer, gradOff, wOff int, g tensor.ConvGeom, o, groups int) (tensor.Buffer, bool) {
	return b.runConv(cudnn.BackwardData, w, grad, wOff, gradOff, g, o, groups)
}

// ConvBackwardWeight implements tensor.ConvKernels with cuDNN's backward
// filter convolution.
func (b *Backend) ConvBackwardWeight(x, grad tensor.Buffer, xOff, gradOff int, g tensor.ConvGeom, o, groups int) (tensor.Buffer, bool) {
	return b.runConv(cudnn.BackwardFilter, x, grad, xOff, gradOff, g, o, groups)
}

// runConv runs one cuDNN convolution into a new buffer; a and bb are the
// operands in cudnn.Library.Run's order for dir. It declines (nil, false)
// when cuDNN is absent, the dtype or geometry is not one it runs, building
// the plan failed (remembered per plan key) or cuDNN refused the call
// before queuing work; any other failure panics with cuDNN's message.
func (b *Backend) runConv(dir cudnn.Direction, a, bb tensor.Buffer, aOff, bOff int, g tensor.ConvGeom, o, groups int) (tensor.Buffer, bool) {
	key, ok := convKey(dir, a.DType(), bb.DType(), g, o, groups, b.allowsTF32())
	if !ok {
		return nil, false
	}
	st := b.cudnnState()
	if st.err != nil {
		return nil, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	plan, err, seen := st.plans.Get(key)
	if !seen {
		unbind := b.enter()
		plan, err = st.lib.NewPlan(st.handle, key)
		unbind()
		if err != nil {
			st.plans.Fail(key, err)
		} else {
			st.plans.Put(key, plan)
		}
	}
	if err != nil {
		return nil, false
	}
	out := b.newBuffer(a.DType(), key.Conv.ResultLen(dir))
	var ws uint64
	if plan.Workspace > 0 {
		addr, release := b.scratch(plan.Workspace)
		defer release() // stream-ordered reuse: safe once the convolution is queued
		ws = addr
	}
	unbind := b.enter()
	err = st.lib.Run(st.handle, plan, b.ptr(a, aOff), b.ptr(bb, bOff), out.ptr, ws)
	unbind()
	if err != nil {
		var ce *cudnn.Error
		if errors.As(err, &ce) && cudnn.Rejected(st.lib.Major(), ce.Status) {
			st.plans.Fail(key, err)
			return nil, false
		}
		panic(fmt.Sprintf("cuda: device %d: %s convolution %+v: %v", b.index, dir, key.Conv, err))
	}
	st.runs[dir]++
	return out, true
}

// CuDNN describes the cuDNN library that device i's convolutions run on,
// as "9.1.0 at /path/to/libcudnn.so.9", or returns the error saying why
// they run without it (on an im2col kernel and cuBLAS instead): the library
// is absent, or it could not create a handle (for example because it
// cannot open its sub-libraries; the error names the folder to add to
// LD_LIBRARY_PATH). It opens cuDNN if no convolution has yet.
func CuDNN(i int) (string, error) {
	b, err := backend(i)
	if err != nil {
		return "", err
	}
	return b.cudnnInfo()
}
