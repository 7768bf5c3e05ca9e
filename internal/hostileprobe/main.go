// Command hostileprobe writes the hostile files of issue 26 (files that
// made Ember's readers crash, hang, or allocate gigabytes) and loads one of
// them, so that each load can be measured alone:
//
//	go build -o /tmp/hostileprobe ./internal/hostileprobe
//	/tmp/hostileprobe -dir /tmp/hostile -write
//	for p in $(/tmp/hostileprobe -list); do
//		/usr/bin/time -v /tmp/hostileprobe -dir /tmp/hostile -probe $p
//	done
//
// Each probe prints its error, the time it took and the size of its input;
// /usr/bin/time reports the process's peak memory (maximum resident set
// size). Every probe must end with an error, in well under a second and
// under twice its input's size plus 64 MiB.
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/emberml/ember/data"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// probe is one hostile input: the files it needs and how it is loaded.
type probe struct {
	name  string
	files map[string]func() ([]byte, error) // relative path to content
	load  func(dir string) error
	input string // the path whose size is the input's size
}

func main() {
	dir := flag.String("dir", "hostile", "folder of the hostile files")
	write := flag.Bool("write", false, "write the hostile files into -dir")
	name := flag.String("probe", "", "load the named probe's input")
	list := flag.Bool("list", false, "print the probes' names")
	flag.Parse()
	if err := run(*dir, *write, *name, *list); err != nil {
		fmt.Fprintln(os.Stderr, "hostileprobe:", err)
		os.Exit(1)
	}
}

func run(dir string, write bool, name string, list bool) error {
	probes := allProbes()
	switch {
	case list:
		for _, p := range probes {
			fmt.Println(p.name)
		}
		return nil
	case write:
		for _, p := range probes {
			for rel, content := range p.files {
				if err := writeInput(filepath.Join(dir, rel), content); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, p := range probes {
		if p.name != name {
			continue
		}
		size := int64(0)
		if info, err := os.Stat(filepath.Join(dir, p.input)); err == nil {
			size = info.Size()
		}
		start := time.Now()
		err := p.load(dir)
		elapsed := time.Since(start)
		if err == nil {
			return fmt.Errorf("probe %s: loaded without an error", name)
		}
		msg := err.Error()
		fmt.Printf("probe %s: %d-byte input refused in %v; error of %d bytes: %.300s\n", name, size, elapsed, len(msg), msg)
		return nil
	}
	return fmt.Errorf("no probe named %q (see -list)", name)
}

// writeInput writes one input file; a nil content makes a FIFO.
func writeInput(path string, content func() ([]byte, error)) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if content == nil {
		os.Remove(path)
		return mkfifo(path)
	}
	b, err := content()
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// zeroBomb returns a gzip stream of several members (read as one) that
// decompresses to an idx header for dims and about 1 MiB of zeros per
// member, built without compressing the whole payload.
func zeroBomb(typ byte, dims []uint32, members int) ([]byte, error) {
	member := func(prefix []byte) ([]byte, error) {
		var buf bytes.Buffer
		zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if err != nil {
			return nil, err
		}
		zw.Write(prefix)
		zw.Write(make([]byte, 1<<20))
		if err := zw.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	header := []byte{0, 0, typ, byte(len(dims))}
	for _, d := range dims {
		header = binary.BigEndian.AppendUint32(header, d)
	}
	first, err := member(header)
	if err != nil {
		return nil, err
	}
	zeros, err := member(nil)
	if err != nil {
		return nil, err
	}
	out := first
	for range members - 1 {
		out = append(out, zeros...)
	}
	return out, nil
}

// safetensorsFile returns a safetensors file with the given JSON header and
// data.
func safetensorsFile(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

// npyFile returns a version 1.0 .npy file with the given header dict.
func npyFile(dict string) []byte {
	h := dict + strings.Repeat(" ", 63-(10+len(dict))%64) + "\n"
	return append([]byte{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, byte(len(h)), byte(len(h) >> 8)}, h...)
}

// idx returns an uncompressed idx file.
func idx(dims []uint32, payload []byte) []byte {
	b := []byte{0, 0, data.IDXUbyte, byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return append(b, payload...)
}

func fixed(b []byte) func() ([]byte, error) { return func() ([]byte, error) { return b, nil } }

func allProbes() []probe {
	const n381 = 381 << 20
	loadMNIST := func(sub string) func(string) error {
		return func(dir string) error {
			_, err := data.LoadMNIST(filepath.Join(dir, sub), true)
			return err
		}
	}
	loadTensors := func(name string) func(string) error {
		return func(dir string) error {
			_, _, err := nn.LoadTensors(filepath.Join(dir, name))
			return err
		}
	}
	return []probe{
		{
			name:  "idx-gzip-4.2MB",
			files: map[string]func() ([]byte, error){"idx-4.2MB/train-images-idx3-ubyte.gz": func() ([]byte, error) { return zeroBomb(data.IDXUbyte, []uint32{4200, 1_000_000}, 4005) }},
			load: func(dir string) error {
				_, err := data.ReadIDXFile(filepath.Join(dir, "idx-4.2MB/train-images-idx3-ubyte.gz"))
				return err
			},
			input: "idx-4.2MB/train-images-idx3-ubyte.gz",
		},
		{
			name: "mnist-gzip-381KB",
			files: map[string]func() ([]byte, error){
				"mnist-381KB/train-images-idx3-ubyte.gz": func() ([]byte, error) { return zeroBomb(data.IDXUbyte, []uint32{n381, 1, 1}, 381) },
				"mnist-381KB/train-labels-idx1-ubyte.gz": func() ([]byte, error) { return zeroBomb(data.IDXUbyte, []uint32{n381}, 381) },
			},
			load:  loadMNIST("mnist-381KB"),
			input: "mnist-381KB/train-labels-idx1-ubyte.gz",
		},
		{
			name: "mnist-labels-200-255",
			files: map[string]func() ([]byte, error){
				"mnist-labels/train-images-idx3-ubyte": fixed(idx([]uint32{2, 1, 1}, []byte{0, 0})),
				"mnist-labels/train-labels-idx1-ubyte": fixed(idx([]uint32{2}, []byte{200, 255})),
			},
			load:  loadMNIST("mnist-labels"),
			input: "mnist-labels/train-labels-idx1-ubyte",
		},
		{
			name:  "mnist-fifo",
			files: map[string]func() ([]byte, error){"mnist-fifo/train-images-idx3-ubyte": nil, "mnist-fifo/train-labels-idx1-ubyte": fixed(idx([]uint32{1}, []byte{1}))},
			load:  loadMNIST("mnist-fifo"),
			input: "mnist-fifo/train-labels-idx1-ubyte",
		},
		{
			name: "safetensors-header-100MB",
			files: map[string]func() ([]byte, error){"header-100MB.safetensors": func() ([]byte, error) {
				dims := strings.Repeat("1,", 50_000_000-40)
				return safetensorsFile(`{"x":{"dtype":"U8","shape":[`+dims+`1],"data_offsets":[0,1]}}`, []byte{1}), nil
			}},
			load:  loadTensors("header-100MB.safetensors"),
			input: "header-100MB.safetensors",
		},
		{
			name: "safetensors-rank-5M",
			files: map[string]func() ([]byte, error){"rank-5M.safetensors": func() ([]byte, error) {
				dims := strings.Repeat("1,", 5_000_000)
				return safetensorsFile(`{"x":{"dtype":"U8","shape":[`+dims+`1],"data_offsets":[0,1]}}`, []byte{1}), nil
			}},
			load:  loadTensors("rank-5M.safetensors"),
			input: "rank-5M.safetensors",
		},
		{
			name:  "safetensors-zero-dim",
			files: map[string]func() ([]byte, error){"zero-dim.safetensors": fixed(safetensorsFile(`{"x":{"dtype":"F32","shape":[0,4611686018427387904,4611686018427387904],"data_offsets":[0,0]}}`, nil))},
			load:  loadTensors("zero-dim.safetensors"),
			input: "zero-dim.safetensors",
		},
		{
			name:  "safetensors-fifo",
			files: map[string]func() ([]byte, error){"fifo.safetensors": nil},
			load:  loadTensors("fifo.safetensors"),
			input: "fifo.safetensors",
		},
		{
			name:  "npy-zero-dim",
			files: map[string]func() ([]byte, error){"zero-dim.npy": fixed(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4611686018427387904, 4611686018427387904), }"))},
			load: func(dir string) error {
				_, err := tensor.LoadNpy(filepath.Join(dir, "zero-dim.npy"))
				return err
			},
			input: "zero-dim.npy",
		},
		{
			name:  "npy-lying-shape",
			files: map[string]func() ([]byte, error){"lying.npy": fixed(npyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000,), }"))},
			load: func(dir string) error {
				_, err := tensor.LoadNpy(filepath.Join(dir, "lying.npy"))
				return err
			},
			input: "lying.npy",
		},
	}
}

// errNoFIFO is returned where the platform has no named pipes.
var errNoFIFO = errors.New("named pipes are not supported on this platform")
