//go:build !unix

package safeio

import "os"

// openNonBlocking opens path read-only. Platforms outside unix have no FIFOs
// that block an open.
func openNonBlocking(path string) (*os.File, error) {
	return os.Open(path)
}
