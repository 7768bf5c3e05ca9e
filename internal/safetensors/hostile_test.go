package safetensors

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// headerFile returns a safetensors file with the given header, padded to 8
// bytes, and data.
func headerFile(header string, data []byte) []byte {
	if pad := len(header) % 8; pad != 0 {
		header += strings.Repeat(" ", 8-pad)
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

// probe runs load, which must fail with an error containing want, and checks
// that the error is short and that load allocated less than twice the
// input's size plus 64 MiB (the budget of issue 26). It logs the time taken
// and the bytes allocated.
func probe(t *testing.T, name string, inputSize int, want string, load func() error) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	err := load()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	msg := fmt.Sprint(err)
	t.Logf("%s: %d-byte input refused in %v after allocating %d bytes: %.300s", name, inputSize, elapsed, allocated, msg)
	require.Error(t, err, name)
	assert.Contains(t, msg, want, name)
	assert.Less(t, len(msg), 1000, "%s: the error is too long", name)
	assert.Less(t, allocated, uint64(2*inputSize+64<<20), "%s allocated too much", name)
}

// TestHostileFiles replays issue 26's hostile safetensors files.
func TestHostileFiles(t *testing.T) {
	dir := t.TempDir()

	// A 100 MB header (it took 14.75 s and 1.19 GB, and returned a 20 MB
	// error). The file is sparse: ReadFile refuses it from its first 8
	// bytes.
	const huge = 100_000_000
	path := filepath.Join(dir, "huge-header.safetensors")
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = f.Write(binary.LittleEndian.AppendUint64(nil, huge))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(8+huge))
	require.NoError(t, f.Close())
	probe(t, "100 MB header, ReadFile", 8+huge, "header length 100000000 exceeds the limit of 16777216 bytes", func() error {
		_, _, err := ReadFile(path)
		return err
	})

	// The same in memory, with the header full: a shape of rank 50,000,000,
	// which fills it (200 MB of test data, so not in short mode).
	if !testing.Short() {
		rank := strings.Repeat("1,", huge/2-40)
		file := headerFile(`{"x":{"dtype":"U8","shape":[`+rank+`1],"data_offsets":[0,1]}}`, []byte{1})
		probe(t, "100 MB header, Decode", len(file), "exceeds the limit of 16777216 bytes", func() error {
			_, _, err := Decode(file)
			return err
		})
	}

	// Rank 5,000,000 within the limit: refused at the 65th dimension, with
	// a short error.
	rank := strings.Repeat("1,", 5_000_000)
	file := headerFile(`{"x":{"dtype":"U8","shape":[`+rank+`1],"data_offsets":[0,1]}}`, []byte{1})
	probe(t, "rank 5,000,000", len(file), "shape has more than 64 elements", func() error {
		_, _, err := Decode(file)
		return err
	})

	// A zero dimension beside an overflowing product (accepted before;
	// [2^62, 2^62, 0] was refused).
	for _, shape := range []string{"[0,4611686018427387904,4611686018427387904]", "[4611686018427387904,4611686018427387904,0]"} {
		file = headerFile(`{"x":{"dtype":"U8","shape":`+shape+`,"data_offsets":[0,0]}}`, nil)
		probe(t, "shape "+shape, len(file), "overflows", func() error {
			_, _, err := Decode(file)
			return err
		})
	}

	// A 10 MB tensor name in an error: cut short.
	name := strings.Repeat("n", 10<<20)
	file = headerFile(`{"`+name+`":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}}`, make([]byte, 8))
	probe(t, "10 MB name", len(file), "(10485760 bytes): unknown dtype", func() error {
		_, _, err := Decode(file)
		return err
	})

	// A long dimension that is not a number.
	file = headerFile(`{"x":{"dtype":"U8","shape":[`+strings.Repeat("9", 1<<20)+`],"data_offsets":[0,1]}}`, []byte{1})
	probe(t, "1 MB dimension", len(file), "is not an integer", func() error {
		_, _, err := Decode(file)
		return err
	})

	// The largest header allowed, full of tiny tensors: refused past
	// MaxTensors.
	var b strings.Builder
	b.WriteString("{")
	for i := 0; b.Len() < MaxHeaderSize-100; i++ {
		fmt.Fprintf(&b, `"%d":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},`, i)
	}
	b.WriteString(`"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`)
	file = headerFile(b.String(), []byte{1})
	probe(t, "16 MiB header of tiny tensors", len(file), "header holds more than 65536 tensors", func() error {
		_, _, err := Decode(file)
		return err
	})

	// The largest header allowed, full of metadata entries.
	b.Reset()
	b.WriteString(`{"__metadata__":{`)
	for i := 0; b.Len() < MaxHeaderSize-100; i++ {
		fmt.Fprintf(&b, `"%d":"",`, i)
	}
	b.WriteString(`"x":""},"x":{"dtype":"U8","shape":[1],"data_offsets":[0,2]}}`)
	file = headerFile(b.String(), []byte{1})
	probe(t, "16 MiB header of metadata", len(file), "invalid __metadata__: more than 65536 entries", func() error {
		_, _, err := Decode(file)
		return err
	})
}

// TestDecodeMaxTensors checks that exactly MaxTensors tensors decode.
func TestDecodeMaxTensors(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes 65,536 header entries")
	}
	var b strings.Builder
	b.WriteString("{")
	for i := range MaxTensors {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"%d":{"dtype":"U8","shape":[1],"data_offsets":[%d,%d]}`, i, i, i+1)
	}
	b.WriteString("}")
	tensors, _, err := Decode(headerFile(b.String(), make([]byte, MaxTensors)))
	require.NoError(t, err)
	assert.Len(t, tensors, MaxTensors)
}

// TestReadFileRefusesSpecialFiles checks the safe-open rule on ReadFile.
func TestReadFileRefusesSpecialFiles(t *testing.T) {
	_, _, err := ReadFile(t.TempDir())
	require.ErrorContains(t, err, "is a folder, not a regular file")
	_, _, err = ReadFile(filepath.Join(t.TempDir(), "missing.safetensors"))
	require.ErrorIs(t, err, os.ErrNotExist)
	short := filepath.Join(t.TempDir(), "short.safetensors")
	require.NoError(t, os.WriteFile(short, []byte{1, 2, 3}, 0o600))
	_, _, err = ReadFile(short)
	require.ErrorContains(t, err, "file is 3 bytes, too short")
}

// TestEncodeRefusesWhatReadersRefuse checks that Encode never writes a file
// that Decode would refuse for its size.
func TestEncodeRefusesWhatReadersRefuse(t *testing.T) {
	many := make(map[string]Tensor, MaxTensors+1)
	for i := range MaxTensors + 1 {
		many[fmt.Sprint(i)] = Tensor{"U8", []int{0}, nil}
	}
	err := Encode(&strings.Builder{}, many, nil)
	require.ErrorContains(t, err, "65537 tensors and 0 metadata entries exceed the limit of 65536")

	big := map[string]string{"notes": strings.Repeat("x", MaxHeaderSize)}
	err = Encode(&strings.Builder{}, nil, big)
	require.ErrorContains(t, err, "exceeds the limit of 16777216 bytes that readers accept")

	deep := map[string]Tensor{"x": {"U8", make([]int, 65), nil}}
	err = Encode(&strings.Builder{}, deep, nil)
	require.ErrorContains(t, err, "65 dimensions exceed the limit of 64")
}
