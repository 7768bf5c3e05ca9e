// Package reduce holds the vectorised elementwise kernels of the
// collectives' reductions: SSE2 assembly on amd64 (every amd64 CPU has
// it), a portable Go loop elsewhere and under the purego tag. It is its own
// package because package distributed uses cgo under the mpi tag, and a cgo
// package cannot hold Go assembly.
package reduce
