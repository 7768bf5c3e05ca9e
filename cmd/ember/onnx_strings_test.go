package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/emberml/ember/onnx"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

// protoBytes appends field num holding s.
func protoBytes(b []byte, num protowire.Number, s []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, s)
}

// protoVarint appends field num holding v.
func protoVarint(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// writeUpperModel writes y = StringNormalizer(x) with case_change_action
// UPPER and stopword "skip", x STRING [N], opset 13.
func writeUpperModel(t *testing.T, dir string) string {
	t.Helper()
	str, vint := protoBytes, protoVarint
	valueInfo := func(name string) []byte {
		tt := vint(nil, 1, 8) // STRING
		tt = str(tt, 2, str(nil, 1, str(nil, 2, []byte("N"))))
		return str(str(nil, 1, []byte(name)), 2, str(nil, 1, tt))
	}
	action := vint(str(str(nil, 1, []byte("case_change_action")), 4, []byte("UPPER")), 20, 3)
	stop := vint(str(str(nil, 1, []byte("stopwords")), 9, []byte("skip")), 20, 8)
	node := str(nil, 1, []byte("x"))
	node = str(node, 2, []byte("y"))
	node = str(node, 4, []byte("StringNormalizer"))
	node = str(str(node, 5, action), 5, stop)
	graph := str(nil, 1, node)
	graph = str(graph, 2, []byte("upper"))
	graph = str(graph, 11, valueInfo("x"))
	graph = str(graph, 12, valueInfo("y"))
	model := vint(nil, 1, 8)
	model = str(model, 7, graph)
	model = str(model, 8, vint(nil, 2, 13))
	path := filepath.Join(dir, "upper.onnx")
	require.NoError(t, os.WriteFile(path, model, 0o644))
	return path
}

// npyU encodes a 1-d '<U<width>' array as NumPy 1.x writes it.
func npyU(width int, words ...[]rune) []byte {
	header := "{'descr': '<U" + string(rune('0'+width)) + "', 'fortran_order': False, 'shape': (" + string(rune('0'+len(words))) + ",), }"
	pad := (64 - (10+len(header)+1)%64) % 64
	header += string(bytes.Repeat([]byte{' '}, pad)) + "\n"
	b := append([]byte(npyMagic), 1, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(header)))
	b = append(b, header...)
	for _, w := range words {
		for k := range width {
			c := uint32(0)
			if k < len(w) {
				c = uint32(w[k])
			}
			b = binary.LittleEndian.AppendUint32(b, c)
		}
	}
	return b
}

func TestNpyStrings(t *testing.T) {
	want := onnx.Strings{Shape: []int{3}, Data: []string{"héllo", "", "日本"}}
	golden := npyU(5, []rune("héllo"), nil, []rune("日本"))
	got, err := readNpyStrings(bytes.NewReader(golden))
	require.NoError(t, err)
	assert.Equal(t, want, got)
	var buf bytes.Buffer
	require.NoError(t, writeNpyStrings(&buf, want))
	assert.Equal(t, golden, buf.Bytes(), "written as NumPy writes it")

	for _, s := range []onnx.Strings{
		{Shape: []int{}, Data: []string{"scalar"}},
		{Shape: []int{2, 0}, Data: []string{}},
		{Shape: []int{2, 2}, Data: []string{"a", "", "ccc", "∂"}},
	} {
		buf.Reset()
		require.NoError(t, writeNpyStrings(&buf, s))
		got, err := readNpyStrings(&buf)
		require.NoError(t, err)
		assert.Equal(t, s, got)
	}

	bytesS := append([]byte(npyMagic), 1, 0)
	h := "{'descr': '|S2', 'fortran_order': False, 'shape': (2,), }\n"
	bytesS = binary.LittleEndian.AppendUint16(bytesS, uint16(len(h)))
	bytesS = append(append(bytesS, h...), 'a', 'b', 'c', 0)
	got, err = readNpyStrings(bytes.NewReader(bytesS))
	require.NoError(t, err)
	assert.Equal(t, onnx.Strings{Shape: []int{2}, Data: []string{"ab", "c"}}, got)

	for _, tc := range []struct {
		name string
		b    []byte
		msg  string
	}{
		{"not npy", []byte("hello world"), "not a .npy file"},
		{"float array", bytes.Replace(golden, []byte("'<U5'"), []byte("'<f4'"), 1), "not of a string dtype"},
		{"fortran", bytes.Replace(golden, []byte("False"), []byte("True "), 1), "C order"},
		{"truncated", golden[:len(golden)-3], "data"},
		{"huge shape", bytes.Replace(golden, []byte("(3,)"), []byte("(9999999999999,)"), 1), "too large"},
		{"bad code point", npyU(1, []rune{0x7fffffff}), "invalid code point"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readNpyStrings(bytes.NewReader(tc.b))
			require.ErrorContains(t, err, tc.msg)
		})
	}
}

func TestONNXRunStrings(t *testing.T) {
	dir := t.TempDir()
	model := writeUpperModel(t, dir)
	in := filepath.Join(dir, "x.npy")
	require.NoError(t, saveNpyStrings(in, onnx.Strings{Shape: []int{3}, Data: []string{"héllo", "skip", "wörld"}}))
	outDir := filepath.Join(dir, "out")
	var out, errb bytes.Buffer
	require.Equal(t, 0, dispatch([]string{"onnx", "run", model, "-i", in, "-o", outDir}, &out, &errb), errb.String())
	assert.Contains(t, out.String(), "y: string [2]")
	f, err := os.Open(filepath.Join(outDir, "y.npy"))
	require.NoError(t, err)
	defer f.Close()
	y, err := readNpyStrings(f)
	require.NoError(t, err)
	assert.Equal(t, onnx.Strings{Shape: []int{2}, Data: []string{"HÉLLO", "WÖRLD"}}, y)
}
