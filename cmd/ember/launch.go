package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/emberml/ember/distributed"
)

// runLaunch implements "ember launch": it starts -nproc copies of a program
// on this machine as ranks of one distributed job, with the torchrun-style
// environment the distributed package reads (RANK, LOCAL_RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT, EMBER_DIST_TOKEN). Each output line is prefixed
// with its rank; SIGINT and SIGTERM are forwarded to the ranks; when one rank
// fails, the others are killed and the failure is reported, naming the rank
// that failed first: each rank's process group writes a failure report
// (EMBER_DIST_FAILURE_FILE) naming the rank at fault, so that a rank that
// hangs is named rather than the peer that gave up on it and exited.
func runLaunch(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("launch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	nproc := fs.Int("nproc", 1, "processes to start on this machine")
	nnodes := fs.Int("nnodes", 1, "machines in the job")
	nodeRank := fs.Int("node-rank", 0, "this machine's index in [0, nnodes)")
	master := fs.String("master", "", "ADDR:PORT of rank 0's rendezvous (default: a free local port when -nnodes is 1)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ember launch -nproc N [-nnodes M -node-rank R -master ADDR:PORT] PROGRAM [ARGS...]")
		fmt.Fprintln(stderr, "Multi-machine jobs need the same EMBER_DIST_TOKEN in every machine's environment.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	if err := launch(fs.Args(), *nproc, *nnodes, *nodeRank, *master, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "ember launch:", err)
		return 1
	}
	return 0
}

// launch starts and supervises the local ranks.
func launch(prog []string, nproc, nnodes, nodeRank int, master string, stdout, stderr io.Writer) error {
	switch {
	case nproc < 1:
		return fmt.Errorf("-nproc %d: want at least 1", nproc)
	case nnodes < 1:
		return fmt.Errorf("-nnodes %d: want at least 1", nnodes)
	case nodeRank < 0 || nodeRank >= nnodes:
		return fmt.Errorf("-node-rank %d outside [0, %d)", nodeRank, nnodes)
	}
	token := os.Getenv("EMBER_DIST_TOKEN")
	if master == "" {
		if nnodes > 1 {
			return errors.New("-master ADDR:PORT is required with -nnodes > 1")
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		master = ln.Addr().String()
		ln.Close()
	}
	host, port, err := net.SplitHostPort(master)
	if err != nil {
		return fmt.Errorf("-master %q: %w", master, err)
	}
	if token == "" {
		if nnodes > 1 {
			return errors.New("set EMBER_DIST_TOKEN to the same secret on every machine")
		}
		var b [16]byte
		rand.Read(b[:])
		token = hex.EncodeToString(b[:])
	}

	reports, err := os.MkdirTemp("", "ember-launch-")
	if err != nil {
		return fmt.Errorf("making the folder of the ranks' failure reports: %w", err)
	}
	defer os.RemoveAll(reports)
	reportFile := func(r int) string { return filepath.Join(reports, fmt.Sprintf("rank-%d.json", r)) }

	var outMu, errMu sync.Mutex
	var copiers sync.WaitGroup
	prefix := func(r int, w io.Writer, mu *sync.Mutex) io.WriteCloser {
		pr, pw := io.Pipe()
		copiers.Go(func() {
			sc := bufio.NewScanner(pr)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				mu.Lock()
				fmt.Fprintf(w, "[rank %d] %s\n", r, sc.Text())
				mu.Unlock()
			}
			io.Copy(io.Discard, pr)
		})
		return pw
	}
	world := nnodes * nproc
	cmds := make([]*exec.Cmd, nproc)
	var pipes []io.Closer
	defer func() {
		for _, p := range pipes {
			p.Close()
		}
		copiers.Wait()
	}()
	for l := range nproc {
		r := nodeRank*nproc + l
		c := exec.Command(prog[0], prog[1:]...)
		c.Env = append(os.Environ(),
			"RANK="+strconv.Itoa(r), "LOCAL_RANK="+strconv.Itoa(l), "WORLD_SIZE="+strconv.Itoa(world),
			"MASTER_ADDR="+host, "MASTER_PORT="+port, "EMBER_DIST_TOKEN="+token,
			distributed.EnvFailureFile+"="+reportFile(r))
		o, e := prefix(r, stdout, &outMu), prefix(r, stderr, &errMu)
		pipes = append(pipes, o, e)
		c.Stdout, c.Stderr = o, e
		if err := c.Start(); err != nil {
			killAll(cmds)
			return fmt.Errorf("starting rank %d: %w", r, err)
		}
		cmds[l] = c
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	type exit struct {
		rank int
		err  error
	}
	exits := make(chan exit, nproc)
	for l, c := range cmds {
		go func() { exits <- exit{nodeRank*nproc + l, c.Wait()} }()
	}
	var first error
	for left := nproc; left > 0; {
		select {
		case s := <-sigs:
			for _, c := range cmds {
				c.Process.Signal(s)
			}
		case e := <-exits:
			left--
			if e.err != nil && first == nil {
				first = firstFailure(e.rank, e.err, earliestReport(reportFile, nodeRank*nproc, nproc))
				killAll(cmds)
			}
		}
	}
	return first
}

// killAll kills the started ranks.
func killAll(cmds []*exec.Cmd) {
	for _, c := range cmds {
		if c != nil && c.Process != nil {
			c.Process.Kill()
		}
	}
}

// earliestReport returns the earliest failure report of the local ranks
// [from, from+n) (reportFile names each rank's), or nil if none wrote one
// (a program that does not use the distributed package writes none).
func earliestReport(reportFile func(rank int) string, from, n int) *distributed.FailureReport {
	var first *distributed.FailureReport
	for r := from; r < from+n; r++ {
		rep, err := distributed.ReadFailureReport(reportFile(r))
		if err != nil || rep.Rank != r {
			continue
		}
		if first == nil || rep.Time.Before(first.Time) {
			first = &rep
		}
	}
	return first
}

// maxReasonLen bounds the error text of a report quoted in launch's error.
const maxReasonLen = 1000

// firstFailure is launch's error when rank exited first, with exitErr;
// first is the earliest failure report of the local ranks, if any. The rank
// named is the one the earliest report blames (a hung rank never exits: its
// peers time out on it and exit), else the rank that exited.
func firstFailure(rank int, exitErr error, first *distributed.FailureReport) error {
	if first == nil {
		return fmt.Errorf("rank %d failed (%v); stopped the other ranks", rank, exitErr)
	}
	reason := first.Error
	if len(reason) > maxReasonLen {
		reason = reason[:maxReasonLen] + "..."
	}
	if first.FailedRank == rank && first.Rank == rank {
		return fmt.Errorf("rank %d failed (%v): %s; stopped the other ranks", rank, exitErr, reason)
	}
	return fmt.Errorf("rank %d failed first (rank %d reported: %s); rank %d exited (%v); stopped the other ranks",
		first.FailedRank, first.Rank, reason, rank, exitErr)
}
