package cuda_test

import (
	"errors"
	"fmt"

	"github.com/emberml/ember/cuda"
	"github.com/emberml/ember/tensor"
)

// Use the first GPU when there is one and the CPU otherwise: the same code
// runs in both cases, and in a build without -tags cuda.
func Example() {
	dev, err := cuda.Device(0)
	if err != nil {
		dev = tensor.CPU // errors.Is(err, cuda.ErrNoDevice)
	}
	x, err := tensor.FromSlice([]float32{1, 2, 3, 4}, 2, 2).ToDevice(dev)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(x.MatMul(x).Float32s())
	// Output: [7 10 15 22]
}

// Print what the driver reports about each GPU, or why there is none.
func ExampleInfo() {
	n, err := cuda.DeviceCount()
	if errors.Is(err, cuda.ErrNoDevice) {
		fmt.Println("no GPU:", err)
		return
	}
	for i := range n {
		info, err := cuda.Info(i)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s: %s, compute capability %d.%d, %d of %d MiB free\n",
			tensor.CUDA(i), info.Name, info.Major, info.Minor, info.FreeMemory>>20, info.TotalMemory>>20)
	}
}

// Report the memory the caching allocator holds on the first GPU.
func ExampleMemoryStats() {
	s, err := cuda.MemoryStats(0)
	if err != nil {
		fmt.Println("no GPU:", errors.Is(err, cuda.ErrNoDevice))
		return
	}
	fmt.Printf("allocated %d bytes, reserved %d, peak %d\n", s.Allocated, s.Reserved, s.Peak)
}
