package main

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Layout of the digits data set; see DATA.md.
const (
	digitsPixels   = 64 // 8×8 pixels per image
	digitsMaxPixel = 16 // pixel values lie in 0..16
	digitsClasses  = 10 // labels lie in 0..9
)

// digitsCSV is the gzipped UCI optdigits CSV: per row 64 pixel values then
// the label.
//
//go:embed digits.csv.gz
var digitsCSV []byte

// loadDigits decodes the embedded digits data set. images holds n*64 pixel
// values in row-major order, scaled from 0..16 to [0, 1]; labels holds the n
// digits 0..9. Malformed content yields an error.
func loadDigits() (images []float32, labels []int64, err error) {
	return parseDigits(bytes.NewReader(digitsCSV))
}

// parseDigits decodes a gzipped digits CSV from r.
func parseDigits(r io.Reader) (images []float32, labels []int64, err error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, nil, fmt.Errorf("digits: %w", err)
	}
	defer zr.Close()
	cr := csv.NewReader(zr)
	cr.FieldsPerRecord = digitsPixels + 1
	cr.ReuseRecord = true
	for row := 1; ; row++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("digits: %w", err)
		}
		for col, field := range rec[:digitsPixels] {
			v, err := strconv.Atoi(field)
			if err != nil || v < 0 || v > digitsMaxPixel {
				return nil, nil, fmt.Errorf("digits: row %d column %d: bad pixel %q", row, col+1, field)
			}
			images = append(images, float32(v)/digitsMaxPixel)
		}
		v, err := strconv.Atoi(rec[digitsPixels])
		if err != nil || v < 0 || v >= digitsClasses {
			return nil, nil, fmt.Errorf("digits: row %d: bad label %q", row, rec[digitsPixels])
		}
		labels = append(labels, int64(v))
	}
	if len(labels) == 0 {
		return nil, nil, errors.New("digits: no rows")
	}
	return images, labels, nil
}
