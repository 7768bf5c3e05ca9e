package onnx

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// node123Root holds ONNX 1.23's backend node test cases, beside the
// checkout (../shared/onnx/node-1.23 from the repository root).
const node123Root = "../../shared/onnx/node-1.23"

// node123ORT lists, per case of node123Root, whether ONNX Runtime 1.30
// reproduces its expected outputs.
const node123ORT = "../../shared/onnx/node-1.23-ort.tsv"

// node123CaseLimit bounds one case's run: a case that takes longer has hung.
const node123CaseLimit = 2 * time.Minute

// TestConformanceNode123 runs ONNX 1.23's node test cases and prints their
// table: all cases, the ones ONNX Runtime reproduces, and the ones whose
// names are (or are not) in Debian's 1.12 data. The pass count must not
// fall below testdata/conformance_floor_node123.txt.
func TestConformanceNode123(t *testing.T) {
	if _, err := os.Stat(node123Root); err != nil {
		t.Skipf("ONNX 1.23 node test data not found (%s missing; see ../shared/onnx/README.md)", node123Root)
	}
	ort, err := readORTStatus(node123ORT)
	if err != nil {
		t.Logf("ONNX Runtime status not read (%v): its column is left empty", err)
	}
	old := map[string]bool{} // case names in Debian's 1.12 node data
	if dirs, err := os.ReadDir(filepath.Join(conformanceRoot, "node")); err == nil {
		for _, d := range dirs {
			old[d.Name()] = true
		}
	}
	dirs, err := os.ReadDir(node123Root)
	require.NoError(t, err)
	start := time.Now()
	type group struct{ counts [4]int }
	var all, reproduced, named112, newer group
	var failures []string
	var passedOld []string
	for _, d := range dirs {
		dir := filepath.Join(node123Root, d.Name())
		if _, err := os.Stat(filepath.Join(dir, "model.onnx")); err != nil {
			continue
		}
		res, _, msg := runCaseWithin(dir, node123CaseLimit)
		if res == caseHung {
			t.Errorf("%s: no result within %v", d.Name(), node123CaseLimit)
			res = caseFailed
		}
		all.counts[res]++
		if ort[d.Name()] {
			reproduced.counts[res]++
		}
		if old[d.Name()] {
			named112.counts[res]++
			if res == casePassed {
				passedOld = append(passedOld, d.Name())
			}
		} else {
			newer.counts[res]++
		}
		if res != casePassed && res != caseSkipped || res == caseSkipped && ort[d.Name()] {
			failures = append(failures, fmt.Sprintf("%s [%s, ort=%v]: %s", d.Name(), resultName(res), ort[d.Name()], firstLine(msg)))
		}
	}
	line := func(name string, g group) string {
		c := g.counts
		n := c[casePassed] + c[caseFailed] + c[caseUnsupported] + c[caseSkipped]
		pct := 0.0
		if n > 0 {
			pct = 100 * float64(c[casePassed]) / float64(n)
		}
		return fmt.Sprintf("  %-26s %5d %6d (%5.1f%%) %6d %11d %7d", name, n, c[casePassed], pct, c[caseFailed], c[caseUnsupported], c[caseSkipped])
	}
	table := strings.Join([]string{
		fmt.Sprintf("  %-26s %5s %15s %6s %11s %7s", "cases", "total", "passed", "failed", "unsupported", "skipped"),
		line("all", all),
		line("reproduced by ORT 1.30", reproduced),
		line("named in ONNX 1.12", named112),
		line("new since 1.12", newer),
	}, "\n")
	t.Logf("onnx 1.23 node conformance (%v):\n%s", time.Since(start).Round(time.Second), table)
	fmt.Printf("onnx 1.23 node conformance:\n%s\n", table)
	if testing.Verbose() {
		sort.Strings(failures)
		for _, f := range failures {
			t.Logf("NOT PASSED %s", f)
		}
	}
	floorBytes, err := os.ReadFile(filepath.Join("testdata", "conformance_floor_node123.txt"))
	require.NoError(t, err)
	floor, err := strconv.Atoi(strings.TrimSpace(string(floorBytes)))
	require.NoError(t, err)
	require.GreaterOrEqual(t, all.counts[casePassed], floor, "ONNX 1.23 conformance pass count fell below the committed floor")
	if len(old) > 0 {
		// The target: every case whose name is in the 1.12 data
		// still passes in its 1.23 form.
		c := named112.counts
		require.Zero(t, c[caseFailed]+c[caseUnsupported]+c[caseSkipped], "cases named in ONNX 1.12 that no longer pass (run with -v for the list)")
	}
}

// caseHung marks a case that gave no result within its time limit; it is
// reported and then counted as failed.
const caseHung caseResult = -1

// runCaseWithin runs one case, giving up on it after limit.
func runCaseWithin(dir string, limit time.Duration) (caseResult, []string, string) {
	type outcome struct {
		res caseResult
		ops []string
		msg string
	}
	done := make(chan outcome, 1)
	go func() {
		res, ops, msg := runCase(dir)
		done <- outcome{res, ops, msg}
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case o := <-done:
		return o.res, o.ops, o.msg
	case <-timer.C:
		return caseHung, nil, "no result within " + limit.String()
	}
}

// resultName names a case outcome for the failure list.
func resultName(r caseResult) string {
	switch r {
	case casePassed:
		return "passed"
	case caseFailed:
		return "failed"
	case caseUnsupported:
		return "unsupported op"
	case caseSkipped:
		return "unsupported type"
	}
	return "hung"
}

// readORTStatus reads the tab-separated case/status file: a case counts as
// reproduced when its status is pass or pass-adapted.
func readORTStatus(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ok := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, status, found := strings.Cut(line, "\t")
		if !found {
			continue
		}
		ok[name] = status == "pass" || status == "pass-adapted"
	}
	return ok, sc.Err()
}
