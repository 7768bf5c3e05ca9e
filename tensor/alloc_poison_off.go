//go:build !ember_poison

package tensor

// poisonUninit fills unzeroed output buffers with 0xff bytes when the
// ember_poison build tag is set, so that `go test -tags ember_poison`
// catches a kernel that leaves an element of such a buffer unwritten.
const poisonUninit = false
