package serve_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/emberml/ember/serve"
	"github.com/emberml/ember/tensor"
)

// A server with one model: requests from many goroutines are joined into
// batches of up to 8, each waiting at most 2 ms for company.
func Example() {
	srv := serve.New(serve.Options{MaxBytesInFlight: 256 << 20})
	defer srv.Close(context.Background())
	err := srv.LoadFile(context.Background(), "cnn", "../onnx/testdata/models/cnn_opset13/model.onnx",
		serve.ModelOptions{MaxBatch: 8, MaxWait: 2 * time.Millisecond, Threads: 2})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	x := tensor.Zeros([]int{2, 3, 9, 9}, tensor.Float32)
	out, err := srv.Predict(ctx, "cnn", map[string]*tensor.Tensor{"x": x})
	var overload *serve.OverloadError
	switch {
	case errors.As(err, &overload):
		fmt.Println("busy: retry after", overload.RetryAfter)
	case err != nil:
		log.Fatal(err)
	}
	info, _ := srv.Model("cnn")
	fmt.Println("batching:", info.Batching)
	fmt.Println("output shape:", out[info.Outputs[0].Name].Shape())
	// Output:
	// batching: true
	// output shape: [2 5]
}

// Hot reload: the new version serves from the swap on; the old one
// answers what it had accepted before Load returns.
func ExampleServer_Load() {
	srv := serve.New(serve.Options{})
	defer srv.Close(context.Background())
	const path = "../onnx/testdata/models/cnn_opset13/model.onnx"
	for range 2 {
		if err := srv.LoadFile(context.Background(), "cnn", path, serve.ModelOptions{}); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("version:", srv.Stats().Models["cnn"].Version)
	// Output:
	// version: 2
}
