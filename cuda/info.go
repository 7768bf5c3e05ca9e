package cuda

// DeviceInfo describes a CUDA device.
type DeviceInfo struct {
	// Index is the device ordinal, as in tensor.CUDA(Index).
	Index int
	// Name is the product name ("NVIDIA H100 80GB HBM3").
	Name string
	// TotalMemory and FreeMemory are the device's memory in bytes, as the
	// driver reports them (free memory counts what other processes and
	// this process's caching allocator hold as used).
	TotalMemory, FreeMemory uint64
	// Major and Minor are the compute capability (9.0 for Hopper).
	Major, Minor int
	// Multiprocessors is the number of streaming multiprocessors.
	Multiprocessors int
	// DriverVersion is the CUDA version the driver supports, as
	// 1000*major + 10*minor (13000 for CUDA 13.0).
	DriverVersion int
}

// Stats reports the device memory held by a device's caching allocator.
// Byte counts are of allocator blocks (requests rounded up to 512 bytes).
type Stats struct {
	// Allocated is the bytes held by live tensors and scratch buffers.
	Allocated int64
	// Reserved is the bytes obtained from the driver: Allocated plus the
	// cache of free blocks kept for reuse (EmptyCache returns it).
	Reserved int64
	// Peak and PeakReserved are the largest Allocated and Reserved since
	// the device was opened or ResetPeakMemory was last called.
	Peak, PeakReserved int64
	// Segments is the number of driver allocations held.
	Segments int
	// Allocs and Frees count block allocations and frees; CacheHits counts
	// allocations served from the cache without a driver call.
	Allocs, Frees, CacheHits int64
	// OOMRetries counts driver allocations retried after running out of
	// memory (after emptying the cache and collecting garbage).
	OOMRetries int64
}
