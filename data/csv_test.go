package data_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/data"
	"github.com/emberml/ember/tensor"
)

func TestReadCSV(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		opts   data.CSVOptions
		header []string
		cols   [][]float64
		cats   map[int][]string
	}{
		{"no header", "1,2,3\n4,5,6\n", data.CSVOptions{}, nil, [][]float64{{1, 4}, {2, 5}, {3, 6}}, nil},
		{"header and spaces", "a, b\n 1.5 , -2e3\n0x1p-2,7\n", data.CSVOptions{Header: true},
			[]string{"a", "b"}, [][]float64{{1.5, 0.25}, {-2000, 7}}, nil},
		{"semicolon and comments", "# data\n1;2\n#x\n3;4\n", data.CSVOptions{Comma: ';', Comment: '#'},
			nil, [][]float64{{1, 3}, {2, 4}}, nil},
		{"categorical last column", "sl,species\n5.1,setosa\n7.0,versicolor\n4.9,setosa\n", data.CSVOptions{Header: true, Categorical: []int{-1}},
			[]string{"sl", "species"}, [][]float64{{5.1, 7.0, 4.9}, {0, 1, 0}}, map[int][]string{1: {"setosa", "versicolor"}}},
		{"empty input", "", data.CSVOptions{Header: true}, nil, nil, nil},
		{"header only", "x,y\n", data.CSVOptions{Header: true}, []string{"x", "y"}, [][]float64{nil, nil}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab, err := data.ReadCSV(strings.NewReader(tt.in), tt.opts)
			require.NoError(t, err)
			assert.Equal(t, tt.header, tab.Header)
			assert.Equal(t, tt.cols, tab.Columns)
			assert.Equal(t, tt.cats, tab.Categories)
		})
	}
}

func TestReadCSVMissingAndSpecial(t *testing.T) {
	tab, err := data.ReadCSV(strings.NewReader("1,,nan\n-inf,2,3\n"), data.CSVOptions{})
	require.NoError(t, err)
	assert.Equal(t, 2, tab.Rows())
	assert.True(t, math.IsNaN(tab.Columns[1][0]))
	assert.True(t, math.IsNaN(tab.Columns[2][0]))
	assert.True(t, math.IsInf(tab.Columns[0][1], -1))
}

func TestReadCSVErrors(t *testing.T) {
	tests := []struct {
		name, in string
		opts     data.CSVOptions
		want     string
	}{
		{"not a number", "1,2\n3,abc\n", data.CSVOptions{}, `line 2, column 2: "abc" is not a number`},
		{"ragged", "1,2\n3\n", data.CSVOptions{}, "wrong number of fields"},
		{"bad quote", "1,\"2\n", data.CSVOptions{}, "data.ReadCSV"},
		{"categorical out of range", "1,2\n", data.CSVOptions{Categorical: []int{2}}, "categorical column 2 out of range for 2 columns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := data.ReadCSV(strings.NewReader(tt.in), tt.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	_, err := data.ReadCSVFile(filepath.Join(t.TempDir(), "none.csv"), data.CSVOptions{})
	require.Error(t, err)
}

func TestTableTensor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.csv")
	require.NoError(t, os.WriteFile(path, []byte("x1,x2,y\n1,2,0\n3,4,1\n5,6,1\n"), 0o644))
	tab, err := data.ReadCSVFile(path, data.CSVOptions{Header: true})
	require.NoError(t, err)

	all := tab.Tensor(tensor.Float64)
	assert.Equal(t, []int{3, 3}, all.Shape())
	assert.Equal(t, []float64{1, 2, 0, 3, 4, 1, 5, 6, 1}, all.Float64s())

	x := tab.Tensor(tensor.Float32, 0, 1)
	assert.Equal(t, tensor.Float32, x.DType())
	assert.Equal(t, []float32{1, 2, 3, 4, 5, 6}, x.Float32s())
	y := tab.Tensor(tensor.Int64, -1).Reshape(-1)
	assert.Equal(t, []int64{0, 1, 1}, y.Int64s())

	col, ok := tab.Column("x2")
	assert.True(t, ok)
	assert.Equal(t, []float64{2, 4, 6}, col)
	_, ok = tab.Column("nope")
	assert.False(t, ok)

	assert.PanicsWithValue(t, "data.Table.Tensor: column 3 out of range for a table of 3 columns", func() { tab.Tensor(tensor.Float32, 3) })
}
