package tensorboard

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/emberml/ember/tensorboard/internal/tbpb"
)

// Options configures a Writer. The zero value is the default.
type Options struct {
	// FlushInterval is how often queued events are written to the file
	// (default 10 seconds). Flush and Close write them at once.
	FlushInterval time.Duration
	// QueueSize is how many events may wait to be written (default 1024).
	// A call that finds the queue full waits for room.
	QueueSize int
	// FilenameSuffix is appended to the event file's name.
	FilenameSuffix string
}

// ErrClosed is returned by Flush and Close on a closed Writer.
var ErrClosed = errors.New("tensorboard: writer is closed")

// Writer writes summaries for one run of TensorBoard: an event file named
// events.out.tfevents.<unix seconds>.<host>.<pid>.<n> in its log directory.
// Every Add method hands its event to an asynchronous queue and returns:
// encoding and writing happen on the Writer's own goroutine, which writes
// the queue out every FlushInterval and on Flush and Close. A Writer is
// safe for use by many goroutines at once. Errors of the file system (a
// full disk) are kept and returned by the next Flush or Close; calling an
// Add method after Close panics, as a send on a closed channel does.
type Writer struct {
	dir  string
	path string
	opts Options

	// The queue: callers append under mu and wake the writing goroutine
	// when it was empty; the goroutine takes the whole batch at once.
	mu      sync.Mutex
	notFull sync.Cond // signalled when the goroutine takes a batch
	items   []item
	closed  bool
	wake    chan struct{} // capacity 1: a pending wake-up
	done    chan struct{}

	errMu sync.Mutex
	err   error

	subMu sync.Mutex
	subs  map[string]*Writer // AddScalars' runs, by folder

	projMu     sync.Mutex
	embeddings []embeddingEntry
}

// eventFile is what the writing goroutine needs of its file (an *os.File;
// tests give a failing one).
type eventFile interface {
	io.Writer
	Sync() error
	Close() error
}

// item is one queued request: an event, a scalar to encode, or a flush.
type item struct {
	event *tbpb.Event
	// scalar: encoded by the writing goroutine, so that logging a scalar
	// costs the caller only a send.
	scalar bool
	tag    string
	value  float32
	step   int64
	wall   float64
	// flush, when set, asks for everything queued before it to be written;
	// the outcome is sent back on it.
	flush chan error
}

// NewWriter creates logdir (and its parents) when needed and a new event
// file in it, and starts the Writer's goroutine. The file begins with the
// file-version event TensorBoard expects.
func NewWriter(logdir string, opts Options) (*Writer, error) {
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = 10 * time.Second
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = 1024
	}
	if strings.ContainsAny(opts.FilenameSuffix, `/\`) {
		return nil, fmt.Errorf("tensorboard: file name suffix %q holds a path separator", opts.FilenameSuffix)
	}
	if err := os.MkdirAll(logdir, 0o755); err != nil {
		return nil, fmt.Errorf("tensorboard: %w", err)
	}
	f, path, err := createEventFile(logdir, opts.FilenameSuffix)
	if err != nil {
		return nil, err
	}
	w := &Writer{
		dir:   logdir,
		path:  path,
		opts:  opts,
		items: make([]item, 0, 64),
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
		subs:  map[string]*Writer{},
	}
	w.notFull.L = &w.mu
	first := &tbpb.Event{WallTime: wallTime(time.Now()), What: &tbpb.Event_FileVersion{FileVersion: "brain.Event:2"}}
	b, err := proto.Marshal(first)
	if err == nil {
		_, err = f.Write(appendRecord(nil, b))
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("tensorboard: writing %s: %w", path, err)
	}
	go w.run(f)
	return w, nil
}

// createEventFile creates a new event file in dir, numbering it past any
// file of the same second, host and process.
func createEventFile(dir, suffix string) (*os.File, string, error) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	host = strings.NewReplacer("/", "_", `\`, "_").Replace(host)
	now := time.Now().Unix()
	for n := 0; ; n++ {
		name := fmt.Sprintf("events.out.tfevents.%010d.%s.%d.%d%s", now, host, os.Getpid(), n, suffix)
		path := filepath.Join(dir, name)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			return f, path, nil
		}
		if !errors.Is(err, os.ErrExist) || n >= 1000 {
			return nil, "", fmt.Errorf("tensorboard: %w", err)
		}
	}
}

// LogDir returns the Writer's log directory.
func (w *Writer) LogDir() string { return w.dir }

// Path returns the path of the Writer's event file.
func (w *Writer) Path() string { return w.path }

// wallTime returns t in seconds since the Unix epoch.
func wallTime(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// send queues it, panicking after Close.
func (w *Writer) send(it item) {
	if !w.enqueue(it) {
		panic("tensorboard: Add on a closed Writer")
	}
}

// enqueue queues it, waiting while the queue is full; it returns false,
// queuing nothing, once the Writer is closed.
func (w *Writer) enqueue(it item) bool {
	w.mu.Lock()
	for !w.closed && len(w.items) >= w.opts.QueueSize {
		w.notFull.Wait()
	}
	if w.closed {
		w.mu.Unlock()
		return false
	}
	w.items = append(w.items, it)
	first := len(w.items) == 1
	w.mu.Unlock()
	if first {
		w.signal()
	}
	return true
}

// signal wakes the writing goroutine unless a wake-up is pending.
func (w *Writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// addSummary queues an event holding the summary values at step.
func (w *Writer) addSummary(step int64, values ...*tbpb.Summary_Value) {
	w.send(item{event: &tbpb.Event{
		WallTime: wallTime(time.Now()),
		Step:     step,
		What:     &tbpb.Event_Summary{Summary: &tbpb.Summary{Value: values}},
	}})
}

// AddScalar logs value under tag at step. It copies four numbers into the
// queue and returns: the event is built and written by the Writer's
// goroutine.
func (w *Writer) AddScalar(tag string, value float64, step int64) {
	w.send(item{scalar: true, tag: tag, value: float32(value), step: step, wall: wallTime(time.Now())})
}

// AddScalars logs several related scalars on one chart, as PyTorch's
// add_scalars does: each key gets a run of its own, the folder
// <logdir>/<mainTag>_<key> (slashes in mainTag become underscores), in
// which the value is logged under mainTag. TensorBoard draws the runs'
// curves together on mainTag's chart.
func (w *Writer) AddScalars(mainTag string, values map[string]float64, step int64) {
	for key, v := range values {
		sub, err := w.subWriter(strings.ReplaceAll(mainTag, "/", "_") + "_" + key)
		if err != nil {
			w.setErr(err)
			continue
		}
		sub.AddScalar(mainTag, v, step)
	}
}

// subWriter returns the Writer of the run folder name inside w's log
// directory, creating it on first use.
func (w *Writer) subWriter(name string) (*Writer, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("tensorboard: %q cannot name a run folder", name)
	}
	w.subMu.Lock()
	defer w.subMu.Unlock()
	if s, ok := w.subs[name]; ok {
		return s, nil
	}
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		panic("tensorboard: Add on a closed Writer")
	}
	s, err := NewWriter(filepath.Join(w.dir, name), w.opts)
	if err != nil {
		return nil, err
	}
	w.subs[name] = s
	return s, nil
}

// setErr keeps the first error.
func (w *Writer) setErr(err error) {
	w.errMu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.errMu.Unlock()
}

// getErr returns the kept error.
func (w *Writer) getErr() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}

// Flush writes every event queued so far to the event file (and those of
// AddScalars' runs), and returns the first error met since the Writer was
// created.
func (w *Writer) Flush() error {
	reply := make(chan error, 1)
	if !w.enqueue(item{flush: reply}) {
		return ErrClosed
	}
	<-reply
	w.subMu.Lock()
	subs := make([]*Writer, 0, len(w.subs))
	for _, s := range w.subs {
		subs = append(subs, s)
	}
	w.subMu.Unlock()
	for _, s := range subs {
		if err := s.Flush(); err != nil {
			w.setErr(err)
		}
	}
	return w.getErr()
}

// Close writes every queued event, syncs the event file to stable storage, closes
// it, and closes AddScalars' runs. It returns the first error met since the
// Writer was created; a second Close returns ErrClosed.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	w.closed = true
	w.notFull.Broadcast()
	w.mu.Unlock()
	w.signal()
	<-w.done
	w.subMu.Lock()
	for _, s := range w.subs {
		if err := s.Close(); err != nil {
			w.setErr(err)
		}
	}
	w.subMu.Unlock()
	return w.getErr()
}

// run is the Writer's goroutine: it encodes queued items into f.
func (w *Writer) run(f eventFile) {
	defer close(w.done)
	bw := bufio.NewWriterSize(f, 64<<10)
	tick := time.NewTicker(w.opts.FlushInterval)
	defer tick.Stop()
	var buf, out []byte
	// One scalar event, reused: encoding a scalar allocates nothing.
	simple := &tbpb.Summary_Value_SimpleValue{}
	scalarValue := &tbpb.Summary_Value{Value: simple}
	scalar := &tbpb.Event{What: &tbpb.Event_Summary{Summary: &tbpb.Summary{Value: []*tbpb.Summary_Value{scalarValue}}}}
	failed := false
	write := func(ev *tbpb.Event) {
		if failed {
			return
		}
		b, err := proto.MarshalOptions{}.MarshalAppend(buf[:0], ev)
		if err != nil {
			w.setErr(fmt.Errorf("tensorboard: encoding an event: %w", err))
			return
		}
		buf = b
		out = appendRecord(out[:0], b)
		if _, err := bw.Write(out); err != nil {
			w.setErr(fmt.Errorf("tensorboard: writing %s: %w", w.path, err))
			failed = true
		}
	}
	flush := func() {
		if failed {
			return
		}
		if err := bw.Flush(); err != nil {
			w.setErr(fmt.Errorf("tensorboard: writing %s: %w", w.path, err))
			failed = true
		}
	}
	var batch []item
	for {
		select {
		case <-w.wake:
		case <-tick.C:
			flush()
			continue
		}
		w.mu.Lock()
		batch, w.items = w.items, batch[:0]
		closed := w.closed
		w.notFull.Broadcast()
		w.mu.Unlock()
		for i := range batch {
			it := &batch[i]
			switch {
			case it.flush != nil:
				flush()
				it.flush <- nil
			case it.scalar:
				scalar.WallTime, scalar.Step = it.wall, it.step
				scalarValue.Tag, simple.SimpleValue = it.tag, it.value
				write(scalar)
			default:
				write(it.event)
			}
			batch[i] = item{} // drop references for the collector
		}
		if closed {
			flush()
			if err := f.Sync(); err != nil && !failed {
				w.setErr(fmt.Errorf("tensorboard: syncing %s: %w", w.path, err))
			}
			if err := f.Close(); err != nil {
				w.setErr(fmt.Errorf("tensorboard: closing %s: %w", w.path, err))
			}
			return
		}
	}
}
