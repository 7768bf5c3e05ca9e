// Package isatest runs a kernel package's tests under every instruction
// path the machine supports, so that one `go test` checks the AVX-512,
// AVX2 and pure-Go paths alike against their twins.
package isatest

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/emberml/ember/tensor/internal/isa"
)

// childEnv marks a test binary started by RunEachPath, so that it does not
// start children of its own.
const childEnv = "EMBER_ISA_TEST_CHILD"

// PathTest is the name of the test every package that calls RunEachPath
// defines to check that its kernel selection follows the path in force;
// RunEachPath always runs it in the children and checks that it passed.
const PathTest = "TestPathInForce"

// Child reports whether this test binary was started by RunEachPath.
func Child() bool { return os.Getenv(childEnv) != "" }

// CheckPath fails t unless the path in force is the one the parent asked
// for: a child started with EMBER_CPU=avx2 must run avx2. Outside a child
// it only checks that the path in force is one the machine supports.
func CheckPath(t *testing.T) {
	t.Helper()
	cur := isa.Current()
	if !isa.Supports(cur) {
		t.Fatalf("path in force %s is not supported by this machine (best %s)", cur, isa.Best())
	}
	if !Child() {
		return
	}
	want, err := isa.Parse(os.Getenv(isa.EnvVar))
	if err != nil {
		t.Fatal(err)
	}
	if cur != want {
		t.Fatalf("child asked for %s=%s but runs %s (%s)", isa.EnvVar, want, cur, isa.Describe())
	}
}

// RunEachPath re-runs the test binary's tests matching pattern (and
// PathTest) once under every path the machine supports other than the one
// in force, with EMBER_CPU set, and fails t with the child's output if one
// fails or does not run PathTest. It does nothing in a child, and is
// skipped under -short and -race (the children repeat the package's slower
// tests).
func RunEachPath(t *testing.T, pattern string) {
	t.Helper()
	if Child() {
		t.Skip("already a child of RunEachPath")
	}
	if testing.Short() {
		t.Skip("-short: the other paths are not re-run")
	}
	if raceEnabled {
		t.Skip("-race: the other paths are re-run by the plain test run")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("cannot find the test binary to re-run: %v", err)
	}
	for _, p := range isa.Supported() {
		if p == isa.Current() {
			continue
		}
		t.Run(p.String(), func(t *testing.T) {
			cmd := exec.Command(exe, "-test.run="+pattern+"|^"+PathTest+"$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), isa.EnvVar+"="+p.String(), childEnv+"=1")
			out, err := cmd.CombinedOutput()
			if errors.Is(err, syscall.ENOEXEC) {
				// A foreign binary run by a user-mode emulator (the arm64
				// tests under qemu-aarch64) cannot start itself again.
				t.Skipf("cannot re-run the test binary here: %v", err)
			}
			if err != nil {
				t.Fatalf("%s=%s: %v\n%s", isa.EnvVar, p, err, out)
			}
			if !strings.Contains(string(out), "--- PASS: "+PathTest) {
				t.Fatalf("%s=%s: the child did not pass %s:\n%s", isa.EnvVar, p, PathTest, out)
			}
		})
	}
}
