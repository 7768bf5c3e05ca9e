package data_test

import (
	"bytes"
	"fmt"

	"github.com/emberml/ember/data"
)

// ExampleIDXOptions reads an idx array under a byte limit: a header that
// declares more than the limit is refused before anything is allocated.
func ExampleIDXOptions() {
	var file bytes.Buffer
	images := &data.IDX{Type: data.IDXUbyte, Dims: []int{2, 2, 2}, Data: []byte{0, 64, 128, 255, 1, 2, 3, 4}}
	if err := data.WriteIDX(&file, images); err != nil {
		fmt.Println(err)
		return
	}

	x, err := data.ReadIDX(bytes.NewReader(file.Bytes()), data.IDXOptions{MaxBytes: 8})
	fmt.Println(x.Dims, err)

	_, err = data.ReadIDX(bytes.NewReader(file.Bytes()), data.IDXOptions{MaxBytes: 4})
	fmt.Println(err)
	// Output:
	// [2 2 2] <nil>
	// idx: dimensions [2 2 2] need 8 bytes, more than the limit of 4 bytes (IDXOptions.MaxBytes)
}
