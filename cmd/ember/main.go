// Command ember is Ember's command-line tool: one binary for what users run
// from a shell.
//
// Usage:
//
//	ember <command> [flags]
//
// Commands:
//
//	bench   run the performance workloads (see "ember bench -h")
//	onnx    inspect or run an ONNX model (see "ember onnx -h")
//	serve-bench load a server on the loopback address (see "ember serve-bench -h")
//	tensorboard export TensorBoard scalars as CSV (see "ember tensorboard -h")
package main

import (
	"fmt"
	"io"
	"os"
)

// command is one subcommand: its name, a one-line summary for the usage
// text, and the function that runs it with the remaining arguments and
// returns the process exit status.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands lists every subcommand. Add new ones (onnx, launch, ...) here:
// this table is the single place the dispatcher reads.
func commands() []command {
	return []command{
		{"bench", "run the performance workloads and print ms/step, samples/s and peak RSS", runBench},
		{"onnx", "inspect, run or export an ONNX model (ember onnx inspect|run MODEL.onnx ..., ember onnx export -model NAME ...)", runONNX},
		{"launch", "start N local ranks of a distributed job (ember launch -nproc N PROGRAM ARGS...)", runLaunch},
		{"serve-bench", "load a server on this machine and print throughput, latency and its memory (ember serve-bench -url URL -input X.npy -clients N -requests M)", runServeBench},
		{"tensorboard", "export the scalars of TensorBoard event files as CSV (ember tensorboard export LOGDIR)", runTensorBoard},
	}
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch runs the subcommand named by args[0] and returns the exit status.
func dispatch(args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		usage(stderr, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range cmds {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "ember: unknown command %q\n", args[0])
	usage(stderr, cmds)
	return 2
}

func usage(w io.Writer, cmds []command) {
	fmt.Fprintln(w, "usage: ember <command> [flags]")
	fmt.Fprintln(w, "commands:")
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
}
