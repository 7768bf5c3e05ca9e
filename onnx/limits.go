package onnx

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/emberml/ember/internal/safeio"
	"github.com/emberml/ember/tensor"
)

// Limits on what a model may make Ember allocate.
//
// A model file is untrusted input: a hundred bytes can declare a tensor of
// sixteen gigabytes. Every allocation whose size a file, a model or a
// model's inputs control is checked against a byte budget before it is
// made (initializers, external data, sparse tensors, constant folding,
// operator outputs whose shape comes from values, strings), and every
// operator output and the live intermediates of a run are checked after.
// Exceeding the budget is an error naming the tensor or node and the bytes
// asked for, never an out-of-memory crash.

// fallbackMaxBytes is the default byte budget where physical memory cannot
// be read.
const fallbackMaxBytes = 4 << 30

// maxBytesFloor keeps the default budget usable on machines with very
// little memory.
const maxBytesFloor = 256 << 20

// DefaultMaxBytes returns the byte budget LoadOptions and SessionOptions
// use when MaxBytes is zero: half the machine's physical memory (MemTotal
// in /proc/meminfo on Linux), or 4 GiB where that cannot be read.
func DefaultMaxBytes() int64 { return defaultMaxBytes() }

var defaultMaxBytes = sync.OnceValue(func() int64 {
	total, ok := physicalMemory()
	if !ok {
		return fallbackMaxBytes
	}
	return max(total/2, maxBytesFloor)
})

// physicalMemory returns the machine's memory in bytes on Linux.
func physicalMemory() (int64, bool) {
	if runtime.GOOS != "linux" && runtime.GOOS != "android" {
		return 0, false
	}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	return parseMemTotal(b)
}

// parseMemTotal reads the MemTotal line ("MemTotal: 24684096 kB") of a
// /proc/meminfo text.
func parseMemTotal(b []byte) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb <= 0 || kb > 1<<53 {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}

// byteLimit returns limit, or the default budget when limit is not
// positive.
func byteLimit(limit int64) int64 {
	if limit > 0 {
		return limit
	}
	return DefaultMaxBytes()
}

// tensorBytes returns the bytes t's elements take.
func tensorBytes(t *tensor.Tensor) int64 { return int64(t.Numel()) * int64(t.DType().Size()) }

// short quotes s, a name or value from a model, for an error message: cut
// to its first 64 bytes (whole characters) with its length noted.
func short(s string) string { return safeio.Quote(s) }

// maxErrorLen bounds the text of the errors the package's functions
// return.
const maxErrorLen = 2048

// boundedError is an error whose text was cut to maxErrorLen bytes; it
// unwraps to the original, so errors.Is and errors.As still see it.
type boundedError struct {
	msg string
	err error
}

func (e *boundedError) Error() string { return e.msg }
func (e *boundedError) Unwrap() error { return e.err }

// bounded returns err, or err with its text cut to maxErrorLen bytes when
// it is longer.
func bounded(err error) error {
	if err == nil {
		return nil
	}
	s := err.Error()
	if len(s) <= maxErrorLen {
		return err
	}
	cut := maxErrorLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return &boundedError{msg: s[:cut] + fmt.Sprintf("... (%d bytes in all)", len(s)), err: err}
}

// maxNameLen bounds how much of a name from a model clipName keeps, as
// short (safeio.Quote) does for quoted names.
const maxNameLen = 64

// clipName cuts s, a name from a model printed without quotes (an operator
// type), to maxNameLen bytes.
func clipName(s string) string {
	if len(s) <= maxNameLen {
		return s
	}
	cut := maxNameLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("... (%d bytes)", len(s))
}
