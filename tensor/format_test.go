package tensor_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// formatCase is one entry of testdata/golden_format.json, written by
// internal/golden/gen/gen_format.py.
type formatCase struct {
	Name      string            `json:"name"`
	Shape     []int             `json:"shape"`
	DType     string            `json:"dtype"`
	Data      []json.RawMessage `json:"data"`
	Arange    []float64         `json:"arange"`
	Transpose bool              `json:"transpose"`
	Options   struct {
		Precision *int  `json:"precision"`
		Threshold int   `json:"threshold"`
		EdgeItems int   `json:"edgeitems"`
		LineWidth int   `json:"linewidth"`
		SciMode   *bool `json:"sci_mode"`
	} `json:"options"`
	Str string `json:"str"`
}

func (c formatCase) tensor(t *testing.T) *tensor.Tensor {
	n := 1
	for _, d := range c.Shape {
		n *= d
	}
	vals := make([]float64, n)
	for i := range vals {
		if c.Data == nil {
			vals[i] = c.Arange[0] + float64(float64(i)*c.Arange[1])
			continue
		}
		var s string
		if json.Unmarshal(c.Data[i], &s) == nil {
			switch s {
			case "nan":
				vals[i] = math.NaN()
			case "inf":
				vals[i] = math.Inf(1)
			case "-inf":
				vals[i] = math.Inf(-1)
			default:
				t.Fatalf("%s: bad value %q", c.Name, s)
			}
			continue
		}
		require.NoError(t, json.Unmarshal(c.Data[i], &vals[i]))
	}
	dt, err := tensor.ParseDType(c.DType)
	require.NoError(t, err)
	x := tensor.FromSlice(vals, append([]int{}, c.Shape...)...).To(dt)
	if c.Transpose {
		x = x.T()
	}
	return x
}

func (c formatCase) options() tensor.PrintOptions {
	var o tensor.PrintOptions
	if p := c.Options.Precision; p != nil {
		o.Precision = *p
		if *p == 0 {
			o.Precision = -1
		}
	}
	o.Threshold = c.Options.Threshold
	o.EdgeItems = c.Options.EdgeItems
	o.LineWidth = c.Options.LineWidth
	if s := c.Options.SciMode; s != nil {
		o.SciMode = tensor.SciNever
		if *s {
			o.SciMode = tensor.SciAlways
		}
	}
	return o
}

func TestFormatGolden(t *testing.T) {
	raw, err := os.ReadFile("testdata/golden_format.json")
	require.NoError(t, err)
	var file struct {
		Cases []formatCase `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(raw, &file))
	require.NotEmpty(t, file.Cases)
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			x := c.tensor(t)
			assert.Equal(t, c.Str, c.options().Sprint(x))
			if c.Options == (formatCase{}).Options {
				assert.Equal(t, c.Str, x.String())
				assert.Equal(t, c.Str, fmt.Sprintf("%v", x))
				assert.Equal(t, c.Str, fmt.Sprint(x))
			}
		})
	}
}

func TestFormatVerbs(t *testing.T) {
	x := tensor.FromSlice([]float32{1.5, 2.25, 3}, 3)
	tests := []struct {
		format string
		arg    any
		want   string
	}{
		{"%v", x, "tensor([1.5000, 2.2500, 3.0000])"},
		{"%s", x, "tensor([1.5000, 2.2500, 3.0000])"},
		{"%.2v", x, "tensor([1.50, 2.25, 3.00])"},
		{"%.0v", x, "tensor([2, 2, 3])"}, // PyTorch drops the point too
		{"%e", x, "tensor([1.5000e+00, 2.2500e+00, 3.0000e+00])"},
		{"%.1e", x, "tensor([1.5e+00, 2.2e+00, 3.0e+00])"},
		{"%f", tensor.FromSlice([]float64{1e-5, 1}), "tensor([    0.0000,     1.0000], dtype=torch.float64)"}, // width of the sci form, as PyTorch
		{"%g", x, "tensor([1.5000, 2.2500, 3.0000])"},
		{"%q", tensor.FromSlice([]int64{1, 2}), `"tensor([1, 2])"`},
		{"%+v", x, "tensor([1.5000, 2.2500, 3.0000], size=(3,), dtype=torch.float32, device='cpu')"},
		{"%+v", tensor.Zeros([]int{2, 0}, tensor.Int32), "tensor([], size=(2, 0), dtype=torch.int32, device='cpu')"},
		{"%+v", tensor.Scalar(2), "tensor(2., size=(), dtype=torch.float32, device='cpu')"},
		{"%#v", tensor.FromSlice([]float32{1, 2.5, 3, 4}, 2, 2), "tensor.FromSlice([]float32{1, 2.5, 3, 4}, 2, 2)"},
		{"%#v", tensor.FromSlice([]float64{0.1, math.Inf(-1)}), "tensor.FromSlice([]float64{0.1, math.Inf(-1)}, 2)"},
		{"%#v", tensor.FromSlice([]float32{float32(math.NaN())}), "tensor.FromSlice([]float32{float32(math.NaN())}, 1)"},
		{"%#v", tensor.ScalarOf(7, tensor.Int64), "tensor.FromSlice([]int64{7}, []int{}...)"},
		{"%#v", tensor.FromSlice([]bool{true, false}), "tensor.FromSlice([]bool{true, false}, 2)"},
		{"%#v", tensor.FromSlice([]int32{1, 2}, 1, 2).T(), "tensor.FromSlice([]int32{1, 2}, 2, 1)"},
		{"%#v", tensor.FromHalfBits(tensor.Float16, []uint16{0x3c00, 0xc000}, 2), "tensor.FromHalfBits(tensor.Float16, []uint16{0x3c00, 0xc000}, 2)"},
		{"%d", tensor.FromSlice([]int64{1}), "%!d(*tensor.Tensor=tensor([1]))"},
		{"%v", (*tensor.Tensor)(nil), "<nil>"},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			assert.Equal(t, tt.want, fmt.Sprintf(tt.format, tt.arg))
		})
	}
}

func TestFormatOptions(t *testing.T) {
	x := tensor.Arange(0, 2000, 1).Reshape(2, 1000)
	full := tensor.PrintOptions{Threshold: -1}.Sprint(x)
	assert.NotContains(t, full, "...")
	assert.Contains(t, x.String(), "...")
	assert.Equal(t, "tensor([0.1235, 1.0000], requires_grad=True)",
		tensor.PrintOptions{Suffixes: []string{"requires_grad=True"}}.Sprint(tensor.FromSlice([]float32{0.123456, 1})))
	// A view prints its own elements, not its storage's.
	y := tensor.Arange(0, 12, 1).Reshape(3, 4).Slice(1, 1, 4, 2)
	assert.Equal(t, "tensor([[ 1,  3],\n        [ 5,  7],\n        [ 9, 11]])", y.String())
}

func ExampleTensor_String() {
	x := tensor.FromSlice([]float32{1, 2, 3, 4}, 2, 2)
	fmt.Println(x)
	fmt.Println(x.DivScalar(3))
	fmt.Println(tensor.FromSlice([]float64{1e-6, 1}))
	fmt.Println(tensor.Arange(0, 5, 1))
	fmt.Println(tensor.Scalar(3.5))
	// Output:
	// tensor([[1., 2.],
	//         [3., 4.]])
	// tensor([[0.3333, 0.6667],
	//         [1.0000, 1.3333]])
	// tensor([1.0000e-06, 1.0000e+00], dtype=torch.float64)
	// tensor([0, 1, 2, 3, 4])
	// tensor(3.5000)
}

func ExampleTensor_Format() {
	x := tensor.FromSlice([]float32{0.5, 1.25}, 2)
	fmt.Printf("%.2v\n", x)
	fmt.Printf("%e\n", x)
	fmt.Printf("%+v\n", x)
	fmt.Printf("%#v\n", x)
	// Output:
	// tensor([0.50, 1.25])
	// tensor([5.0000e-01, 1.2500e+00])
	// tensor([0.5000, 1.2500], size=(2,), dtype=torch.float32, device='cpu')
	// tensor.FromSlice([]float32{0.5, 1.25}, 2)
}

func ExamplePrintOptions_Sprint() {
	x := tensor.Arange(0, 10, 1)
	fmt.Println(tensor.PrintOptions{Threshold: 5, EdgeItems: 2}.Sprint(x))
	// Output:
	// tensor([0, 1,  ..., 8, 9])
}
