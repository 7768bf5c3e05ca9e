package profiler

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Kind says what an Event is.
type Kind int

const (
	// KindForward is an op computing its value.
	KindForward Kind = iota
	// KindBackward is the backward of a recorded node; its name is the
	// op's with ".backward" added.
	KindBackward
	// KindStep is one step of the schedule ("ProfilerStep#N").
	KindStep
	// KindRange is a region marked with Profiler.Range.
	KindRange
)

// String returns the kind's name, which is the event's category in a
// Chrome trace.
func (k Kind) String() string {
	switch k {
	case KindForward:
		return "forward"
	case KindBackward:
		return "backward"
	case KindStep:
		return "step"
	case KindRange:
		return "range"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Event is one recorded op, step or range.
type Event struct {
	// Name is the op's name ("MatMul", "Conv2d.backward"), the range's, or
	// "ProfilerStep#N".
	Name string
	Kind Kind
	// Lane is the track the event is on: 0 for steps, 1 for the ops of
	// Profiler.Watch, 2 for ranges, and the number of the Lane for the ops
	// of a Lane's Watch.
	Lane int
	// Step is the step of the schedule the event happened in.
	Step int
	// Start is the time since the profiler was made; Duration the event's
	// wall time, and Self that time less the time of the ops it ran (ops
	// built on other ops, the ops of a backward rule).
	Start, Duration, Self time.Duration
	// InputShapes are the shapes of an op's inputs (nil for an absent
	// optional input).
	InputShapes [][]int
	// Bytes is the size of the tensors the op made (its output, or the
	// gradients of a backward), views excepted, less those the ops it ran
	// made (a backward's gradients are usually made by the ops of its
	// rule), so that the bytes of a trace's events add up.
	Bytes int64
	// FLOPs counts the floating-point operations of products and
	// convolutions (a multiply-add is two); 0 for other ops.
	FLOPs int64
}

// Trace is what a profiler recorded over some steps.
type Trace struct {
	Events []Event
	// Lanes names the trace's tracks by number.
	Lanes map[int]string
}

// chromeEvent is one entry of the Trace Event format's traceEvents.
type chromeEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// micros converts d to microseconds, the unit of the Trace Event format.
func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// WriteChromeTrace writes the trace in the Chrome Trace Event format (JSON
// object form), which Perfetto (ui.perfetto.dev) and chrome://tracing
// open: one complete ("X") event per op, step and range, timestamps in
// microseconds, the process id of this process and one thread id per lane,
// named by metadata events. An op's args hold its input shapes, bytes,
// FLOPs and step.
func (t *Trace) WriteChromeTrace(w io.Writer) error {
	pid := os.Getpid()
	events := make([]chromeEvent, 0, len(t.Events)+len(t.Lanes)+1)
	events = append(events, chromeEvent{Name: "process_name", Ph: "M", Pid: pid, Args: map[string]any{"name": "ember"}})
	lanes := make([]int, 0, len(t.Lanes))
	for id := range t.Lanes {
		lanes = append(lanes, id)
	}
	slices.Sort(lanes)
	for _, id := range lanes {
		events = append(events, chromeEvent{Name: "thread_name", Ph: "M", Pid: pid, Tid: id, Args: map[string]any{"name": t.Lanes[id]}})
	}
	for _, e := range t.Events {
		dur := micros(e.Duration)
		ce := chromeEvent{Name: e.Name, Cat: e.Kind.String(), Ph: "X", Ts: micros(e.Start), Dur: &dur, Pid: pid, Tid: e.Lane,
			Args: map[string]any{"step": e.Step}}
		if e.Kind == KindForward || e.Kind == KindBackward {
			ce.Args["input_shapes"] = e.InputShapes
			ce.Args["bytes"] = e.Bytes
			if e.FLOPs > 0 {
				ce.Args["flops"] = e.FLOPs
			}
		}
		events = append(events, ce)
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(struct {
		TraceEvents     []chromeEvent `json:"traceEvents"`
		DisplayTimeUnit string        `json:"displayTimeUnit"`
	}{events, "ms"}); err != nil {
		return fmt.Errorf("profiler: writing the Chrome trace: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("profiler: writing the Chrome trace: %w", err)
	}
	return nil
}

// OpStats sums the events of one name (Trace.KeyAverages).
type OpStats struct {
	Name  string
	Kind  Kind
	Calls int
	// Total sums the events' durations, Self their self times.
	Total, Self time.Duration
	// Bytes and FLOPs sum the events'.
	Bytes, FLOPs int64
}

// Average returns the mean duration of a call.
func (s OpStats) Average() time.Duration {
	if s.Calls == 0 {
		return 0
	}
	return s.Total / time.Duration(s.Calls)
}

// SortKey orders the rows of KeyAverages and Table.
type SortKey int

const (
	// SortBySelfTime puts the ops that spent the most time themselves
	// (their nested ops excepted) first.
	SortBySelfTime SortKey = iota
	// SortByTotalTime puts the longest ops, nested ops included, first.
	SortByTotalTime
	// SortByCalls puts the most called ops first.
	SortByCalls
	// SortByMemory puts the ops that allocated the most bytes first.
	SortByMemory
	// SortByFLOPs puts the ops with the most floating-point operations
	// first.
	SortByFLOPs
)

// KeyAverages sums the op events (forward and backward; steps and ranges
// are left out) by name, as torch.profiler's key_averages, sorted by key
// (ties by name).
func (t *Trace) KeyAverages(key SortKey) []OpStats {
	byName := map[string]*OpStats{}
	var rows []*OpStats
	for _, e := range t.Events {
		if e.Kind != KindForward && e.Kind != KindBackward {
			continue
		}
		s := byName[e.Name]
		if s == nil {
			s = &OpStats{Name: e.Name, Kind: e.Kind}
			byName[e.Name] = s
			rows = append(rows, s)
		}
		s.Calls++
		s.Total += e.Duration
		s.Self += e.Self
		s.Bytes += e.Bytes
		s.FLOPs += e.FLOPs
	}
	out := make([]OpStats, len(rows))
	for i, r := range rows {
		out[i] = *r
	}
	slices.SortFunc(out, func(a, b OpStats) int {
		var c int
		switch key {
		case SortByTotalTime:
			c = cmp.Compare(b.Total, a.Total)
		case SortByCalls:
			c = cmp.Compare(b.Calls, a.Calls)
		case SortByMemory:
			c = cmp.Compare(b.Bytes, a.Bytes)
		case SortByFLOPs:
			c = cmp.Compare(b.FLOPs, a.FLOPs)
		default:
			c = cmp.Compare(b.Self, a.Self)
		}
		if c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// Table formats KeyAverages(key) as a text table of at most limit rows
// (all when limit <= 0): name, calls, self time and its share of all self
// time, total time, mean time per call, bytes allocated, FLOPs and the
// rate they ran at.
func (t *Trace) Table(key SortKey, limit int) string {
	rows := t.KeyAverages(key)
	var selfSum time.Duration
	for _, r := range rows {
		selfSum += r.Self
	}
	if limit > 0 && len(rows) > limit {
		rows = rows[:limit]
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "Name\tCalls\tSelf\tSelf %\tTotal\tAvg\tBytes\tFLOPs\tGFLOP/s\t")
	for _, r := range rows {
		share := 0.0
		if selfSum > 0 {
			share = 100 * float64(r.Self) / float64(selfSum)
		}
		rate := "-"
		if r.FLOPs > 0 && r.Total > 0 {
			rate = fmt.Sprintf("%.2f", float64(r.FLOPs)/r.Total.Seconds()/1e9)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f%%\t%s\t%s\t%s\t%s\t%s\t\n", r.Name, r.Calls, roundDur(r.Self), share,
			roundDur(r.Total), roundDur(r.Average()), byteSize(r.Bytes), count(r.FLOPs), rate)
	}
	tw.Flush()
	return b.String()
}

// roundDur rounds d to about four significant digits for the table.
func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(time.Microsecond)
	case d >= time.Microsecond:
		return d.Round(10 * time.Nanosecond)
	}
	return d
}

// byteSize writes n in B, KiB, MiB or GiB.
func byteSize(n int64) string {
	const k = 1024
	switch {
	case n >= k*k*k:
		return fmt.Sprintf("%.2f GiB", float64(n)/(k*k*k))
	case n >= k*k:
		return fmt.Sprintf("%.2f MiB", float64(n)/(k*k))
	case n >= k:
		return fmt.Sprintf("%.2f KiB", float64(n)/k)
	}
	return fmt.Sprintf("%d B", n)
}

// count writes n with a k, M, G or T suffix; "-" for 0.
func count(n int64) string {
	switch {
	case n == 0:
		return "-"
	case n >= 1e12:
		return fmt.Sprintf("%.2fT", float64(n)/1e12)
	case n >= 1e9:
		return fmt.Sprintf("%.2fG", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.2fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
