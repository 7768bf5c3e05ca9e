package data

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/emberml/ember/internal/safeio"
	"github.com/emberml/ember/tensor"
)

// CSVOptions configures ReadCSV.
type CSVOptions struct {
	// Comma is the field delimiter (0 means ',').
	Comma rune
	// Comment, if not 0, starts a comment line that is skipped.
	Comment rune
	// Header treats the first record as column names.
	Header bool
	// Categorical lists the columns (negative counts from the end, so -1 is
	// the last) holding labels such as "Iris-setosa" rather than numbers:
	// each distinct value becomes its index in order of first appearance,
	// and Table.Categories records the mapping.
	Categorical []int
}

// Table is numeric tabular data read by ReadCSV, stored by column.
type Table struct {
	// Header holds the column names, or nil when the input had no header.
	Header []string
	// Columns holds the values of each column; every column has Rows()
	// values.
	Columns [][]float64
	// Categories maps a categorical column to its labels: value k of the
	// column stands for Categories[column][k].
	Categories map[int][]string
}

// Rows returns the number of data records.
func (t *Table) Rows() int {
	if len(t.Columns) == 0 {
		return 0
	}
	return len(t.Columns[0])
}

// Column returns the values of the column with the given header name.
func (t *Table) Column(name string) ([]float64, bool) {
	i := slices.Index(t.Header, name)
	if i < 0 {
		return nil, false
	}
	return t.Columns[i], true
}

// Tensor returns the given columns (all of them when none are given;
// negative indices count from the end) as a [Rows(), len(cols)] tensor of
// dtype dt. It panics if a column index is out of range.
func (t *Table) Tensor(dt tensor.DType, cols ...int) *tensor.Tensor {
	if len(cols) == 0 {
		cols = make([]int, len(t.Columns))
		for i := range cols {
			cols[i] = i
		}
	}
	rows := t.Rows()
	v := make([]float64, rows*len(cols))
	for j, c := range cols {
		k := c
		if k < 0 {
			k += len(t.Columns)
		}
		if k < 0 || k >= len(t.Columns) {
			panic(fmt.Sprintf("data.Table.Tensor: column %d out of range for a table of %d columns", c, len(t.Columns)))
		}
		for i, x := range t.Columns[k] {
			v[i*len(cols)+j] = x
		}
	}
	return tensor.FromSlice(v, rows, len(cols)).To(dt)
}

// ReadCSV reads comma-separated numeric data from r, one record per line,
// every record with the same number of fields. Fields are parsed as floats
// (surrounding spaces are ignored; "nan" and "inf" are accepted); an empty
// field is NaN, a missing value. Columns listed in opts.Categorical hold
// text labels that are numbered instead. A field that is not a number gives
// an error naming its line and column.
func ReadCSV(r io.Reader, opts CSVOptions) (*Table, error) {
	cr := csv.NewReader(r)
	if opts.Comma != 0 {
		cr.Comma = opts.Comma
	}
	cr.Comment = opts.Comment
	cr.ReuseRecord = true
	t := &Table{}
	var categorical []bool
	var codes []map[string]int
	first := true
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("data.ReadCSV: %w", err)
		}
		line, _ := cr.FieldPos(0)
		if first {
			first = false
			ncol := len(rec)
			t.Columns = make([][]float64, ncol)
			categorical = make([]bool, ncol)
			codes = make([]map[string]int, ncol)
			for _, c := range opts.Categorical {
				k := c
				if k < 0 {
					k += ncol
				}
				if k < 0 || k >= ncol {
					return nil, fmt.Errorf("data.ReadCSV: categorical column %d out of range for %d columns", c, ncol)
				}
				if !categorical[k] {
					categorical[k] = true
					codes[k] = map[string]int{}
					if t.Categories == nil {
						t.Categories = map[int][]string{}
					}
					t.Categories[k] = []string{}
				}
			}
			if opts.Header {
				t.Header = make([]string, ncol)
				for i, f := range rec {
					t.Header[i] = strings.TrimSpace(f)
				}
				continue
			}
		}
		for i, f := range rec {
			f = strings.TrimSpace(f)
			var v float64
			switch {
			case categorical[i]:
				code, ok := codes[i][f]
				if !ok {
					code = len(codes[i])
					codes[i][f] = code
					t.Categories[i] = append(t.Categories[i], f)
				}
				v = float64(code)
			case f == "":
				v = math.NaN()
			default:
				v, err = strconv.ParseFloat(f, 64)
				if err != nil {
					return nil, fmt.Errorf("data.ReadCSV: line %d, column %d: %s is not a number (list the column in CSVOptions.Categorical if it holds labels)", line, i+1, safeio.Quote(f))
				}
			}
			t.Columns[i] = append(t.Columns[i], v)
		}
	}
	return t, nil
}

// ReadCSVFile reads the CSV file at path (see ReadCSV), which must be a
// regular file (not a FIFO, device or folder).
func ReadCSVFile(path string, opts CSVOptions) (*Table, error) {
	f, _, err := safeio.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data.ReadCSV: %w", err)
	}
	defer f.Close()
	t, err := ReadCSV(f, opts)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return t, nil
}
