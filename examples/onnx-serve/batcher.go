package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/emberml/ember/onnx"
	"github.com/emberml/ember/tensor"
)

// errShuttingDown answers requests that arrive while the server stops.
var errShuttingDown = errors.New("server is shutting down")

// job is one request's inputs waiting for a batch, and where its result
// goes.
type job struct {
	ctx    context.Context
	inputs map[string]*tensor.Tensor
	done   chan result
}

// result is a job's outputs or error.
type result struct {
	outputs map[string]*tensor.Tensor
	err     error
	// batched is how many requests shared the session run.
	batched int
}

// batcher collects concurrent requests into batches: it waits for up to
// maxBatch jobs or until wait has passed since the first one, then
// concatenates the inputs of compatible jobs along axis 0 (when the model's
// batch axis is dynamic), runs the session once and splits the outputs.
type batcher struct {
	sess      *onnx.Session
	batchable bool
	maxBatch  int
	wait      time.Duration

	jobs    chan *job
	mu      sync.Mutex
	closed  bool
	running sync.WaitGroup // batches in flight
	loop    sync.WaitGroup // the collecting goroutine
	// stats
	statsMu  sync.Mutex
	requests int
	runs     int
}

// newBatcher starts a batcher on sess; stop it with close.
func newBatcher(sess *onnx.Session, maxBatch int, wait time.Duration) *batcher {
	b := &batcher{
		sess: sess, batchable: batchable(sess), maxBatch: max(maxBatch, 1), wait: wait,
		jobs: make(chan *job, 4*max(maxBatch, 1)),
	}
	b.loop.Add(1)
	go b.collect()
	return b
}

// batchable reports whether requests to sess can be concatenated along
// axis 0: every input declares a dynamic first axis, and shape inference
// shows every output's first axis is the same symbol as the inputs'.
func batchable(sess *onnx.Session) bool {
	sym := ""
	for _, in := range sess.Inputs() {
		if !in.HasShape || len(in.Shape) == 0 || in.Shape[0].Param == "" || (sym != "" && in.Shape[0].Param != sym) {
			return false
		}
		sym = in.Shape[0].Param
	}
	if sym == "" {
		return false
	}
	for _, out := range sess.Outputs() {
		d, ok := sess.ValueShape(out.Name)
		if !ok || len(d) == 0 || d[0].Param != sym {
			return false
		}
	}
	return true
}

// submit queues inputs and waits for their result or ctx's end.
func (b *batcher) submit(ctx context.Context, inputs map[string]*tensor.Tensor) result {
	j := &job{ctx: ctx, inputs: inputs, done: make(chan result, 1)}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return result{err: errShuttingDown}
	}
	b.running.Add(1) // released when the job is answered
	b.mu.Unlock()
	b.jobs <- j
	select {
	case r := <-j.done:
		return r
	case <-ctx.Done():
		return result{err: ctx.Err()}
	}
}

// close stops accepting jobs, finishes the queued ones and waits for every
// batch to end.
func (b *batcher) close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	b.mu.Unlock()
	b.running.Wait()
	close(b.jobs)
	b.loop.Wait()
}

// stats returns the number of requests answered and session runs made.
func (b *batcher) stats() (requests, runs int) {
	b.statsMu.Lock()
	defer b.statsMu.Unlock()
	return b.requests, b.runs
}

// collect gathers batches until jobs is closed.
func (b *batcher) collect() {
	defer b.loop.Done()
	for {
		first, ok := <-b.jobs
		if !ok {
			return
		}
		batch := []*job{first}
		timer := time.NewTimer(b.wait)
	fill:
		for len(batch) < b.maxBatch {
			select {
			case j, ok := <-b.jobs:
				if !ok {
					break fill
				}
				batch = append(batch, j)
			case <-timer.C:
				break fill
			}
		}
		timer.Stop()
		for _, g := range b.group(batch) {
			go b.runGroup(g)
		}
	}
}

// group splits a batch into groups of jobs that can share one run: same
// input names, dtypes and shapes past axis 0. Without a dynamic batch axis
// every job is its own group.
func (b *batcher) group(batch []*job) [][]*job {
	if !b.batchable {
		gs := make([][]*job, len(batch))
		for i, j := range batch {
			gs[i] = []*job{j}
		}
		return gs
	}
	var keys []string
	groups := map[string][]*job{}
	for _, j := range batch {
		k := signature(j.inputs)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], j)
	}
	gs := make([][]*job, len(keys))
	for i, k := range keys {
		gs[i] = groups[k]
	}
	return gs
}

// signature describes inputs by name, dtype and shape past axis 0; a
// rank-0 input gets a unique key so it is never concatenated.
func signature(inputs map[string]*tensor.Tensor) string {
	names := make([]string, 0, len(inputs))
	for n := range inputs {
		names = append(names, n)
	}
	slices.Sort(names)
	var sb strings.Builder
	for _, n := range names {
		t := inputs[n]
		if t.Dim() == 0 {
			return fmt.Sprintf("scalar %p", t)
		}
		fmt.Fprintf(&sb, "%q %s %v;", n, t.DType(), t.Shape()[1:])
	}
	return sb.String()
}

// runGroup runs a group of compatible jobs, batched when there are several,
// and answers each. If the batched run fails, each job is run alone so one
// bad request cannot fail the others.
func (b *batcher) runGroup(g []*job) {
	live := g[:0:0]
	for _, j := range g {
		if err := j.ctx.Err(); err != nil {
			b.answer(j, result{err: err})
			continue
		}
		live = append(live, j)
	}
	if len(live) > 1 {
		if outs, err := b.runBatched(live); err == nil {
			for i, j := range live {
				b.answer(j, result{outputs: outs[i], batched: len(live)})
			}
			return
		}
	}
	for _, j := range live {
		outs, err := b.sess.Run(j.ctx, j.inputs)
		b.count()
		b.answer(j, result{outputs: outs, err: err, batched: 1})
	}
}

// runBatched concatenates the jobs' inputs along axis 0, runs once and
// splits every output by the jobs' batch sizes.
func (b *batcher) runBatched(jobs []*job) (split []map[string]*tensor.Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			split, err = nil, fmt.Errorf("batched run: %v", r)
		}
	}()
	sizes := make([]int, len(jobs))
	total := 0
	for i, j := range jobs {
		for _, t := range j.inputs {
			sizes[i] = t.Shape()[0]
			break
		}
		for name, t := range j.inputs {
			if t.Shape()[0] != sizes[i] {
				return nil, fmt.Errorf("input %q: batch size %d differs from the request's other inputs", name, t.Shape()[0])
			}
		}
		total += sizes[i]
	}
	joined := map[string]*tensor.Tensor{}
	for name := range jobs[0].inputs {
		parts := make([]*tensor.Tensor, len(jobs))
		for i, j := range jobs {
			parts[i] = j.inputs[name]
		}
		joined[name] = tensor.Concat(parts, 0)
	}
	outs, err := b.sess.Run(context.Background(), joined)
	b.count()
	if err != nil {
		return nil, err
	}
	split = make([]map[string]*tensor.Tensor, len(jobs))
	for i := range split {
		split[i] = map[string]*tensor.Tensor{}
	}
	for name, t := range outs {
		if t.Dim() == 0 || t.Shape()[0] != total {
			return nil, fmt.Errorf("output %q has shape %v, not batch %d first", name, t.Shape(), total)
		}
		start := 0
		for i, n := range sizes {
			split[i][name] = t.Narrow(0, start, n).Contiguous()
			start += n
		}
	}
	return split, nil
}

// count records one session run; requests are counted by answer.
func (b *batcher) count() {
	b.statsMu.Lock()
	b.runs++
	b.statsMu.Unlock()
}

// answer delivers r to j (never blocks: done has room for one) and marks
// the job finished.
func (b *batcher) answer(j *job, r result) {
	b.statsMu.Lock()
	b.requests++
	b.statsMu.Unlock()
	j.done <- r
	b.running.Done()
}
