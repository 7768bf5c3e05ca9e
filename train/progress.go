package train

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Metric is one named number of a training loop, such as the running loss
// or the learning rate. Progress shows metrics and MetricsLog records them
// in the order given.
type Metric struct {
	Name  string
	Value float64
}

// ProgressOptions configures a Progress. The zero value suits a training
// loop.
type ProgressOptions struct {
	// Label starts every line, such as "epoch 3/10".
	Label string
	// Interval is the least time between two lines: 200ms on a terminal,
	// 10s otherwise (a log file then gets a line every 10s rather than a
	// line per batch) when zero. The first update and the last (done ==
	// total, or Finish) are always shown.
	Interval time.Duration
	// Style chooses between redrawing one line in place and writing
	// lines of their own; the zero value, Auto, redraws on a terminal only.
	Style ProgressStyle
	// Now reads the clock (time.Now when nil); tests set it.
	Now func() time.Time
}

// ProgressStyle says how a Progress shows its updates.
type ProgressStyle int

const (
	// Auto redraws in place when the writer is a terminal (IsTerminal) and
	// writes lines otherwise.
	Auto ProgressStyle = iota
	// InPlace redraws one line with carriage returns.
	InPlace
	// Lines writes each update shown as a line of its own.
	Lines
)

// Progress writes a progress line for a loop of a known number of steps:
// the label, steps done of total, percentage, rate, estimated time left
// and the caller's metrics, for example
//
//	epoch 2/10  300/469  64%  52.1 it/s  ETA 3s  loss 0.3121  acc 0.8867
//
// On a terminal the line is redrawn in place (with a carriage return) and
// Finish ends it with a newline; on anything else (a file, a pipe, a CI
// log) each update that is shown is a line of its own. A Progress is used
// by one goroutine.
type Progress struct {
	w        io.Writer
	total    int
	label    string
	terminal bool
	interval time.Duration
	now      func() time.Time

	start    time.Time
	last     time.Time // when a line was last written; zero before the first
	lastLen  int       // length of the last line drawn on a terminal
	done     int
	finished bool
}

// NewProgress returns a progress line for total steps written to w (total
// <= 0 means unknown: no percentage or ETA). With the Auto style, whether
// w is a terminal is decided once, by IsTerminal. The clock starts now.
func NewProgress(w io.Writer, total int, opts ProgressOptions) *Progress {
	terminal := opts.Style == InPlace || opts.Style == Auto && IsTerminal(w)
	p := &Progress{w: w, total: total, label: opts.Label, terminal: terminal, interval: opts.Interval, now: opts.Now}
	if p.now == nil {
		p.now = time.Now
	}
	if p.interval <= 0 {
		p.interval = 10 * time.Second
		if p.terminal {
			p.interval = 200 * time.Millisecond
		}
	}
	p.start = p.now()
	return p
}

// IsTerminal reports whether w is an *os.File open on a character device
// (a terminal), where a line can be redrawn in place.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// Update records that done steps are finished, with the current metrics,
// and shows the line if the interval has passed since the last one (or
// this is the first update or the last step). It returns the error of the
// write, if a line was written.
func (p *Progress) Update(done int, metrics ...Metric) error {
	p.done = done
	now := p.now()
	if !p.last.IsZero() && now.Sub(p.last) < p.interval && (p.total <= 0 || done < p.total) {
		return nil
	}
	p.last = now
	return p.draw(now, metrics, false)
}

// Finish shows the final line with the metrics (ending it with a newline
// on a terminal) and returns the write's error. Later calls do nothing.
func (p *Progress) Finish(metrics ...Metric) error {
	if p.finished {
		return nil
	}
	p.finished = true
	return p.draw(p.now(), metrics, true)
}

// Line returns the text of the progress line after done steps at time
// now, with metrics, without writing it.
func (p *Progress) Line(done int, now time.Time, metrics ...Metric) string {
	var b strings.Builder
	field := func(format string, a ...any) {
		if b.Len() > 0 {
			b.WriteString("  ")
		}
		fmt.Fprintf(&b, format, a...)
	}
	if p.label != "" {
		field("%s", p.label)
	}
	if p.total > 0 {
		field("%d/%d", done, p.total)
		field("%d%%", done*100/p.total)
	} else {
		field("%d", done)
	}
	elapsed := now.Sub(p.start)
	if elapsed > 0 && done > 0 {
		rate := float64(done) / elapsed.Seconds()
		field("%s it/s", formatRate(rate))
		if p.total > 0 && done < p.total {
			left := time.Duration(float64(p.total-done) / rate * float64(time.Second))
			field("ETA %s", formatDuration(left))
		} else {
			field("%s", formatDuration(elapsed))
		}
	}
	for _, m := range metrics {
		field("%s %.4g", m.Name, m.Value)
	}
	return b.String()
}

// draw writes the line: in place on a terminal, else as a line of its own.
func (p *Progress) draw(now time.Time, metrics []Metric, final bool) error {
	line := p.Line(p.done, now, metrics...)
	if !p.terminal {
		_, err := io.WriteString(p.w, line+"\n")
		return err
	}
	pad := ""
	if n := p.lastLen - len(line); n > 0 {
		pad = strings.Repeat(" ", n) // rub out the end of a longer line
	}
	p.lastLen = len(line)
	end := ""
	if final {
		end = "\n"
		p.lastLen = 0
	}
	_, err := io.WriteString(p.w, "\r"+line+pad+end)
	return err
}

// formatRate prints a rate with three significant digits or so.
func formatRate(r float64) string {
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f", r)
	case r >= 10:
		return fmt.Sprintf("%.1f", r)
	default:
		return fmt.Sprintf("%.2f", r)
	}
}

// formatDuration prints d rounded to seconds (tenths under 10s) as
// 1h02m03s, 4m05s, 12s or 3.4s.
func formatDuration(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	s := int64(d.Round(time.Second) / time.Second)
	h, m := s/3600, s/60%60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm%02ds", h, m, s%60)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, s%60)
	default:
		return fmt.Sprintf("%ds", s)
	}
}
