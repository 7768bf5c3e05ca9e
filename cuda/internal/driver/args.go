package driver

import (
	"fmt"
	"reflect"
	"runtime"
	"unsafe"
)

// Params is the kernelParams array of a kernel launch: Ptrs[i] points to a
// C-layout copy of argument i. The copies live in one Go allocation; Pin
// pins it and the pointer array for the duration of a call into C.
type Params struct {
	Ptrs []unsafe.Pointer
	data []uint64 // backing store, 8-byte aligned
}

// Pin pins the argument copies and the pointer array with p, as the cgo
// rules require of Go memory holding Go pointers passed to C.
func (ps *Params) Pin(p *runtime.Pinner) {
	if len(ps.data) > 0 {
		p.Pin(&ps.data[0])
	}
	if len(ps.Ptrs) > 0 {
		p.Pin(&ps.Ptrs[0])
	}
}

// argLayout returns the size and alignment of a kernel argument in C, or an
// error for a type that has no C counterpart.
func argLayout(a any) (size, align uintptr, err error) {
	switch a.(type) {
	case uint64, int64, float64:
		return 8, 8, nil
	case int32, uint32, float32, bool:
		return 4, 4, nil
	}
	t := reflect.TypeOf(a)
	if t == nil {
		return 0, 0, fmt.Errorf("driver: nil kernel argument")
	}
	if t.Kind() != reflect.Struct {
		return 0, 0, fmt.Errorf("driver: kernel argument of type %s (want uint64, int64, int32, uint32, float32, float64, bool or a pointer-free struct)", t)
	}
	if err := checkPlain(t); err != nil {
		return 0, 0, fmt.Errorf("driver: kernel argument of type %s: %w", t, err)
	}
	return t.Size(), uintptr(t.Align()), nil
}

// checkPlain accepts the types whose Go layout is their C layout: fixed-size
// integers and floats, and arrays and structs of them.
func checkPlain(t reflect.Type) error {
	switch t.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return nil
	case reflect.Array:
		return checkPlain(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if err := checkPlain(t.Field(i).Type); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("field of type %s has no fixed C layout", t)
}

// PackArgs lays out kernel arguments for cuLaunchKernel: uint64 (device
// addresses), int64, int32, uint32, float32, float64, bool (as a C int 0 or
// 1) and pointer-free structs (copied byte for byte: their Go layout must
// match the C struct). Go int is refused: its C width would be ambiguous.
func PackArgs(args ...any) (*Params, error) {
	offs := make([]uintptr, len(args))
	var total uintptr
	for i, a := range args {
		size, align, err := argLayout(a)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i, err)
		}
		total = (total + align - 1) &^ (align - 1)
		offs[i] = total
		total += size
	}
	ps := &Params{
		Ptrs: make([]unsafe.Pointer, len(args)),
		data: make([]uint64, (total+7)/8),
	}
	if len(args) == 0 {
		return ps, nil
	}
	base := unsafe.Pointer(unsafe.SliceData(ps.data))
	for i, a := range args {
		p := unsafe.Add(base, offs[i])
		switch v := a.(type) {
		case uint64:
			*(*uint64)(p) = v
		case int64:
			*(*int64)(p) = v
		case float64:
			*(*float64)(p) = v
		case int32:
			*(*int32)(p) = v
		case uint32:
			*(*uint32)(p) = v
		case float32:
			*(*float32)(p) = v
		case bool:
			var x int32
			if v {
				x = 1
			}
			*(*int32)(p) = x
		default:
			rv := reflect.ValueOf(a)
			cp := reflect.New(rv.Type())
			cp.Elem().Set(rv)
			n := rv.Type().Size()
			copy(unsafe.Slice((*byte)(p), n), unsafe.Slice((*byte)(cp.UnsafePointer()), n))
		}
		ps.Ptrs[i] = p
	}
	return ps, nil
}
