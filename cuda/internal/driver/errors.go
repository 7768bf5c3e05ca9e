// Package driver binds the CUDA driver API (libcuda.so.1) at run time with
// purego, without cgo. The bindings are compiled with the build tag cuda;
// the error type, the result codes and the kernel-argument packing are
// plain Go, built and tested everywhere.
package driver

import (
	"errors"
	"fmt"
)

// Result is a CUresult code returned by every driver call.
type Result int32

// The result codes the Go side treats specially (cuda.h values).
const (
	Success           Result = 0
	ErrorInvalidValue Result = 1
	ErrorOutOfMemory  Result = 2
	ErrorNotInit      Result = 3
	ErrorNoDevice     Result = 100
	ErrorInvalidDev   Result = 101
	ErrorNotFound     Result = 500
)

// resultNames names common codes, used when libcuda cannot be asked
// (cuGetErrorName) or does not know the code.
var resultNames = map[Result]string{
	0:   "CUDA_SUCCESS",
	1:   "CUDA_ERROR_INVALID_VALUE",
	2:   "CUDA_ERROR_OUT_OF_MEMORY",
	3:   "CUDA_ERROR_NOT_INITIALIZED",
	4:   "CUDA_ERROR_DEINITIALIZED",
	34:  "CUDA_ERROR_STUB_LIBRARY",
	35:  "CUDA_ERROR_INSUFFICIENT_DRIVER",
	46:  "CUDA_ERROR_DEVICES_UNAVAILABLE",
	100: "CUDA_ERROR_NO_DEVICE",
	101: "CUDA_ERROR_INVALID_DEVICE",
	200: "CUDA_ERROR_INVALID_IMAGE",
	201: "CUDA_ERROR_INVALID_CONTEXT",
	209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
	218: "CUDA_ERROR_INVALID_PTX",
	222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	400: "CUDA_ERROR_INVALID_HANDLE",
	500: "CUDA_ERROR_NOT_FOUND",
	600: "CUDA_ERROR_NOT_READY",
	700: "CUDA_ERROR_ILLEGAL_ADDRESS",
	701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	702: "CUDA_ERROR_LAUNCH_TIMEOUT",
	710: "CUDA_ERROR_ASSERT",
	719: "CUDA_ERROR_LAUNCH_FAILED",
	999: "CUDA_ERROR_UNKNOWN",
}

// Name returns the cuda.h name of r from the built-in table, or a
// placeholder naming the number for codes the table lacks.
func (r Result) Name() string {
	if n, ok := resultNames[r]; ok {
		return n
	}
	return fmt.Sprintf("CUresult(%d)", int32(r))
}

// ErrNoDevice is wrapped by errors meaning that CUDA cannot be used here:
// libcuda.so.1 is missing or lacks a symbol, no device is present
// (CUDA_ERROR_NO_DEVICE), or an ordinal names no device.
var ErrNoDevice = errors.New("no CUDA device")

// ErrOutOfMemory is wrapped by CUDA_ERROR_OUT_OF_MEMORY errors.
var ErrOutOfMemory = errors.New("CUDA out of memory")

// Error is a failed driver (or library) call.
type Error struct {
	Call    string // the function called, "cuMemAlloc_v2"
	Code    Result // the code it returned
	Name    string // the code's name, "CUDA_ERROR_OUT_OF_MEMORY"
	Message string // the driver's description of the code
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, int32(e.Code))
	}
	return fmt.Sprintf("%s: %s (%d): %s", e.Call, e.Name, int32(e.Code), e.Message)
}

// Is reports ErrNoDevice for CUDA_ERROR_NO_DEVICE and
// CUDA_ERROR_INVALID_DEVICE, and ErrOutOfMemory for
// CUDA_ERROR_OUT_OF_MEMORY.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNoDevice:
		return e.Code == ErrorNoDevice || e.Code == ErrorInvalidDev
	case ErrOutOfMemory:
		return e.Code == ErrorOutOfMemory
	}
	return false
}

// newError builds the error of a failed call from the built-in name table;
// the bindings fill Name and Message from libcuda when it is loaded.
func newError(call string, r Result) *Error {
	return &Error{Call: call, Code: r, Name: r.Name()}
}
