//go:build ember_poison

package tensor

// poisonUninit: see alloc_poison_off.go.
const poisonUninit = true
