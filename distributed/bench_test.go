package distributed

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/emberml/ember/tensor"
)

// BenchmarkAllReduce measures all-reduce of float32 tensors across
// loopback ranks in one process; b.SetBytes counts the tensor size.
func BenchmarkAllReduce(b *testing.B) {
	for _, ranks := range []int{2, 4} {
		for _, n := range []int{1 << 10, 1 << 14, 1 << 20, 16 << 20} {
			b.Run(fmt.Sprintf("ranks=%d/floats=%d", ranks, n), func(b *testing.B) {
				gs, err := NewLocalGroups(context.Background(), ranks)
				if err != nil {
					b.Fatal(err)
				}
				defer func() {
					for _, g := range gs {
						g.Close()
					}
				}()
				xs := make([]*tensor.Tensor, ranks)
				for i := range xs {
					xs[i] = tensor.Ones([]int{n})
				}
				b.SetBytes(int64(4 * n))
				b.ResetTimer()
				var wg sync.WaitGroup
				for _, g := range gs {
					wg.Go(func() {
						for range b.N {
							if err := g.AllReduce(xs[g.Rank()], Sum); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				// Bus bandwidth as NCCL defines it: each rank moves
				// 2(n-1)/n of the tensor.
				sec := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(float64(4*n)*2*float64(ranks-1)/float64(ranks)/sec/1e6, "busMB/s")
			})
		}
	}
}

// BenchmarkTCPStream is the baseline for the all-reduce's bus bandwidth: a
// plain loopback TCP stream between two goroutines, 1 MiB writes.
func BenchmarkTCPStream(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		_, err = io.Copy(io.Discard, c)
		done <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for range b.N {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	c.Close()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
