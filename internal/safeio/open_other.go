//go:build !unix

package safeio

// nonBlocking is zero: platforms outside unix have no FIFOs that block an
// open.
const nonBlocking = 0
