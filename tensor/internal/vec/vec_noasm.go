//go:build !(amd64 || arm64) || purego

package vec

// impls lists the kernel sets usable in this build: only the pure-Go one.
func impls() []*impl { return []*impl{goImpl} }
