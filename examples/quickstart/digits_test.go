package main

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
)

func TestLoadDigits(t *testing.T) {
	images, labels, err := loadDigits()
	if err != nil {
		t.Fatal(err)
	}
	const n = 1797
	if len(labels) != n {
		t.Fatalf("got %d labels, want %d", len(labels), n)
	}
	if len(images) != n*digitsPixels {
		t.Fatalf("got %d pixels, want %d", len(images), n*digitsPixels)
	}
	counts := make([]int, digitsClasses)
	for i, l := range labels {
		if l < 0 || l >= digitsClasses {
			t.Fatalf("label %d at row %d out of range", l, i)
		}
		counts[l]++
	}
	want := []int{178, 182, 177, 183, 181, 182, 181, 179, 174, 180}
	sum := 0
	for d, c := range counts {
		sum += c
		if c != want[d] {
			t.Errorf("digit %d: %d images, want %d", d, c, want[d])
		}
	}
	if sum != n {
		t.Errorf("label counts sum to %d, want %d", sum, n)
	}
	var lo, hi float32 = 1, 0
	for i, v := range images {
		if v < 0 || v > 1 {
			t.Fatalf("pixel %d = %v outside [0, 1]", i, v)
		}
		lo, hi = min(lo, v), max(hi, v)
		if q := v * digitsMaxPixel; q != float32(int(q)) {
			t.Fatalf("pixel %d = %v is not a multiple of 1/16", i, v)
		}
	}
	if lo != 0 || hi != 1 {
		t.Errorf("pixel range [%v, %v], want [0, 1]", lo, hi)
	}
	// First row of the file: a zero whose top row is 0,0,5,13,9,1,0,0.
	if labels[0] != 0 || images[2] != 5.0/16 || images[3] != 13.0/16 {
		t.Errorf("first image starts %v with label %d", images[:8], labels[0])
	}
}

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestParseDigitsErrors(t *testing.T) {
	row := func(pixel, label string) string {
		return strings.Repeat("0,", digitsPixels-1) + pixel + "," + label + "\n"
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"not gzip", []byte(row("0", "3")), "invalid header"},
		{"empty", gz(t, ""), "no rows"},
		{"short row", gz(t, "1,2,3\n"), "wrong number of fields"},
		{"pixel too big", gz(t, row("17", "3")), "bad pixel"},
		{"pixel negative", gz(t, row("-1", "3")), "bad pixel"},
		{"pixel not int", gz(t, row("x", "3")), "bad pixel"},
		{"bad label", gz(t, row("0", "10")), "bad label"},
		{"truncated", gz(t, row("0", "3"))[:20], "digits"},
	} {
		_, _, err := parseDigits(bytes.NewReader(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	images, labels, err := parseDigits(bytes.NewReader(gz(t, row("16", "7"))))
	if err != nil || len(labels) != 1 || labels[0] != 7 || images[digitsPixels-1] != 1 {
		t.Errorf("valid row: %v %v %v", images, labels, err)
	}
}
