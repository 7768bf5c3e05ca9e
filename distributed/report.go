package distributed

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/emberml/ember/internal/atomicfile"
)

// FailureReport is what a TCP group writes to Config.FailureFile when it
// fails (its first failure only; a group closed by Close writes nothing).
// A launcher that starts the ranks, such as ember launch, reads the
// reports of its ranks to name the rank that failed first rather than the
// one that exited first: a rank that hangs never exits, and its peers exit
// when they give up on it.
type FailureReport struct {
	// Rank is the rank that wrote the report.
	Rank int `json:"rank"`
	// FailedRank is the rank at fault as Rank knows it: the peer its
	// *PeerError names, or Rank itself for a failure of its own.
	FailedRank int `json:"failed_rank"`
	// Reporter is the rank that told Rank of the failure, or -1 when Rank
	// observed it itself.
	Reporter int `json:"reporter"`
	// Time is when Rank learned of the failure.
	Time time.Time `json:"time"`
	// Error is the group's error.
	Error string `json:"error"`
}

// maxFailureReportBytes bounds a failure report file (its error text is
// cut to fit).
const maxFailureReportBytes = 16 << 10

// newFailureReport describes err, which stopped rank's group; failed is
// the rank at fault, or -1 to take it from err (a *PeerError's peer, else
// rank).
func newFailureReport(rank int, err error, failed int) FailureReport {
	r := FailureReport{Rank: rank, FailedRank: failed, Reporter: -1, Time: time.Now(), Error: err.Error()}
	var pe *PeerError
	if errors.As(err, &pe) {
		if r.FailedRank < 0 {
			r.FailedRank = pe.Rank
		}
		r.Reporter = pe.Reporter
	}
	if r.FailedRank < 0 {
		r.FailedRank = rank
	}
	if len(r.Error) > maxFailureReportBytes/2 {
		r.Error = r.Error[:maxFailureReportBytes/2]
	}
	return r
}

// writeFailureReport writes r to path, if path is set. It is best effort:
// the report helps a launcher name the failed rank, and the group's error
// is returned whether or not it could be written.
func writeFailureReport(path string, r FailureReport) {
	if path == "" {
		return
	}
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	atomicfile.WriteFile(path, append(b, '\n'), 0o600)
}

// ReadFailureReport reads the report a rank wrote to path (its
// Config.FailureFile). It returns an error wrapping fs.ErrNotExist when the
// rank wrote none, and an error for a file that is not a report.
func ReadFailureReport(path string) (FailureReport, error) {
	var r FailureReport
	f, err := os.Open(path)
	if err != nil {
		return r, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFailureReportBytes+1))
	if err != nil {
		return r, err
	}
	if len(b) > maxFailureReportBytes {
		return r, fmt.Errorf("distributed: failure report %s is longer than %d bytes", path, maxFailureReportBytes)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("distributed: failure report %s: %w", path, err)
	}
	if r.Rank < 0 || r.FailedRank < 0 || r.Reporter < -1 || r.Time.IsZero() {
		return r, fmt.Errorf("distributed: failure report %s: rank %d, failed rank %d, reporter %d, time %v: not a report", path, r.Rank, r.FailedRank, r.Reporter, r.Time)
	}
	return r, nil
}

// report writes the failure report of the world group's first failure
// (err, blaming failed, or -1 to take the rank from err).
func (g *TCPGroup) report(err error, failed int) {
	g = g.root
	g.reportOnce.Do(func() {
		writeFailureReport(g.cfg.FailureFile, newFailureReport(g.rank, err, failed))
	})
}
