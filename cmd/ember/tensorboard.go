package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/emberml/ember/internal/atomicfile"
	"github.com/emberml/ember/tensorboard"
)

// runTensorBoard dispatches "ember tensorboard SUBCOMMAND".
func runTensorBoard(args []string, stdout, stderr io.Writer) int {
	usage := func() {
		fmt.Fprintln(stderr, "usage: ember tensorboard export LOGDIR [-o OUTDIR]")
		fmt.Fprintln(stderr, "       writes the scalars of every run under LOGDIR as CSV, one file per tag:")
		fmt.Fprintln(stderr, "       OUTDIR/RUN/TAG.csv with columns wall_time,step,value (OUTDIR defaults to LOGDIR-csv)")
	}
	if len(args) == 0 {
		usage()
		return 2
	}
	switch args[0] {
	case "export":
		return tensorBoardExport(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		usage()
		return 0
	}
	fmt.Fprintf(stderr, "ember tensorboard: unknown subcommand %q\n", args[0])
	usage()
	return 2
}

// tensorBoardExport writes a log directory's scalars as CSV files.
func tensorBoardExport(args []string, stdout, stderr io.Writer) int {
	logdir, flagArgs := splitModelArg(args)
	fs := flag.NewFlagSet("ember tensorboard export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	outDir := fs.String("o", "", "output folder (default LOGDIR-csv)")
	if err := fs.Parse(flagArgs); err != nil {
		return 2
	}
	if logdir == "" && fs.NArg() == 1 {
		logdir = fs.Arg(0)
	} else if logdir == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: ember tensorboard export LOGDIR [-o OUTDIR]")
		return 2
	}
	if *outDir == "" {
		*outDir = filepath.Clean(logdir) + "-csv"
	}
	if st, err := os.Stat(logdir); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "ember tensorboard export: %s is not a folder\n", logdir)
		return 1
	}
	scalars, err := tensorboard.ReadScalars(logdir)
	if err != nil {
		fmt.Fprintf(stderr, "ember tensorboard export: %v\n", err)
		return 1
	}
	if len(scalars) == 0 {
		fmt.Fprintf(stderr, "ember tensorboard export: no scalars in event files under %s\n", logdir)
		return 1
	}
	runs := make([]string, 0, len(scalars))
	for r := range scalars {
		runs = append(runs, r)
	}
	sort.Strings(runs)
	files := 0
	for _, run := range runs {
		dir := filepath.Join(*outDir, filepath.FromSlash(run))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintf(stderr, "ember tensorboard export: %v\n", err)
			return 1
		}
		tags := make([]string, 0, len(scalars[run]))
		for t := range scalars[run] {
			tags = append(tags, t)
		}
		sort.Strings(tags)
		used := map[string]bool{}
		for _, tag := range tags {
			name := csvFileName(tag, used)
			var b strings.Builder
			b.WriteString("wall_time,step,value\n")
			for _, p := range scalars[run][tag] {
				b.WriteString(strconv.FormatFloat(float64(p.WallTime.UnixNano())/1e9, 'f', 6, 64))
				b.WriteByte(',')
				b.WriteString(strconv.FormatInt(p.Step, 10))
				b.WriteByte(',')
				b.WriteString(strconv.FormatFloat(p.Value, 'g', -1, 64))
				b.WriteByte('\n')
			}
			path := filepath.Join(dir, name)
			if err := atomicfile.WriteFile(path, []byte(b.String()), 0o644); err != nil {
				fmt.Fprintf(stderr, "ember tensorboard export: %v\n", err)
				return 1
			}
			fmt.Fprintf(stdout, "%s\t%s\t%d points\t%s\n", run, tag, len(scalars[run][tag]), path)
			files++
		}
	}
	fmt.Fprintf(stdout, "wrote %d CSV files under %s\n", files, *outDir)
	return 0
}

// csvFileName turns a tag into a file name: slashes become "__", other
// characters outside [A-Za-z0-9._-] become "_", and a name already used in
// the folder gets a number.
func csvFileName(tag string, used map[string]bool) string {
	var b strings.Builder
	for _, r := range strings.ReplaceAll(tag, "/", "__") {
		if r < 128 && (r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	base := strings.TrimLeft(b.String(), ".")
	if base == "" {
		base = "tag"
	}
	name := base + ".csv"
	for k := 2; used[name]; k++ {
		name = fmt.Sprintf("%s-%d.csv", base, k)
	}
	used[name] = true
	return name
}
