// Package docs holds the tests that keep README.md and the guides in this
// folder true: every Go block in them is type-checked against the current
// API, the complete programs among them that end with an "// Output:"
// comment are built and run, and every relative link must lead to a file.
// It has no Go API of its own.
package docs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const modulePath = "github.com/emberml/ember"

// knownImports maps the package names a fragment may use without
// importing them to their import paths. A fragment (a Go block without a
// package clause) gets the imports whose names it uses as "name.".
var knownImports = map[string]string{
	"tensor":      modulePath + "/tensor",
	"autograd":    modulePath + "/autograd",
	"nn":          modulePath + "/nn",
	"models":      modulePath + "/nn/models",
	"optim":       modulePath + "/optim",
	"data":        modulePath + "/data",
	"onnx":        modulePath + "/onnx",
	"distributed": modulePath + "/distributed",
	"train":       modulePath + "/train",
	"cuda":        modulePath + "/cuda",
	"tensorboard": modulePath + "/tensorboard",
	"graphviz":    modulePath + "/graphviz",
	"profiler":    modulePath + "/profiler",
	"serve":       modulePath + "/serve",
	"context":     "context",
	"errors":      "errors",
	"fmt":         "fmt",
	"http":        "net/http",
	"io":          "io",
	"json":        "encoding/json",
	"log":         "log",
	"math":        "math",
	"os":          "os",
	"filepath":    "path/filepath",
	"signal":      "os/signal",
	"strings":     "strings",
	"iter":        "iter",
	"sync":        "sync",
	"time":        "time",
}

// snippet is one ```go block of a Markdown file.
type snippet struct {
	file  string // path relative to the repository root
	line  int    // line of the opening fence
	code  string
	given string // parameters from a preceding <!-- given: ... --> comment
}

func (s snippet) String() string { return fmt.Sprintf("%s:%d", s.file, s.line) }

// complete reports whether the block is a whole program (it has a package
// clause).
func (s snippet) complete() bool {
	return strings.HasPrefix(strings.TrimSpace(stripComments(s.code)), "package ")
}

// runnable reports whether the block is a complete program whose expected
// output follows an "// Output:" comment, as in an Example function.
func (s snippet) runnable() bool {
	return s.complete() && strings.Contains(s.code, "\n// Output:")
}

// expectedOutput returns the lines of the "// Output:" comment.
func (s snippet) expectedOutput() string {
	_, after, _ := strings.Cut(s.code, "\n// Output:")
	first, rest, _ := strings.Cut(after, "\n")
	lines := []string{strings.TrimSpace(first)}
	for l := range strings.SplitSeq(rest, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "//") {
			break
		}
		lines = append(lines, strings.TrimSpace(strings.TrimPrefix(l, "//")))
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

func stripComments(code string) string {
	var b strings.Builder
	for l := range strings.SplitSeq(code, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "//") {
			continue
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

var givenComment = regexp.MustCompile(`^<!--\s*given:\s*(.*?)\s*-->$`)

// markdownFiles returns README.md and the guides, relative to the
// repository root.
func markdownFiles(t *testing.T) []string {
	guides, err := filepath.Glob("*.md")
	require.NoError(t, err)
	files := []string{"README.md"}
	for _, g := range guides {
		files = append(files, filepath.Join("docs", g))
	}
	return files
}

// extractSnippets returns the ```go blocks of the Markdown file at path
// (relative to the repository root).
func extractSnippets(t *testing.T, path string) []snippet {
	text, err := os.ReadFile(filepath.Join("..", path))
	require.NoError(t, err)
	var (
		out     []snippet
		cur     *snippet
		code    []string
		given   string
		lineNum int
	)
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lineNum++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur != nil && trimmed == "```":
			cur.code = strings.Join(code, "\n") + "\n"
			out = append(out, *cur)
			cur, code, given = nil, nil, ""
		case cur != nil:
			code = append(code, line)
		case trimmed == "```go":
			cur = &snippet{file: path, line: lineNum, given: given}
		case givenComment.MatchString(trimmed):
			given = givenComment.FindStringSubmatch(trimmed)[1]
		case trimmed != "":
			given = ""
		}
	}
	require.NoError(t, sc.Err())
	require.Nil(t, cur, "%s: a ```go block is not closed", path)
	return out
}

var selectorName = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.`)

// fragmentSource turns a fragment into a Go file of package snippets: top-level
// declarations stay as they are, statements become the body of a function
// whose parameters are the block's given names and which returns an error
// (so that "return err" works).
func fragmentSource(s snippet, index int) string {
	var imports []string
	seen := map[string]bool{}
	for _, m := range selectorName.FindAllStringSubmatch(s.code+" "+s.given, -1) {
		if path, ok := knownImports[m[1]]; ok && !seen[path] {
			seen[path] = true
			imports = append(imports, path)
		}
	}
	sort.Strings(imports)
	var b strings.Builder
	b.WriteString("package snippets\n\n")
	for _, p := range imports {
		fmt.Fprintf(&b, "import %q\n", p)
	}
	if topLevel(s.code) {
		fmt.Fprintf(&b, "\n//line %s:%d\n%s", s.file, s.line+1, s.code)
		return b.String()
	}
	fmt.Fprintf(&b, "\nfunc snippet%d(%s) error {\n//line %s:%d\n%s\nreturn nil\n}\n", index, s.given, s.file, s.line+1, s.code)
	return b.String()
}

// topLevel reports whether code is a list of declarations (funcs, types,
// vars, consts) rather than statements.
func topLevel(code string) bool {
	_, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+code, parser.SkipObjectResolution)
	return err == nil
}

// ignoredInFragments are errors that only say a fragment is not a whole
// program: it computes values the text goes on to talk about.
var ignoredInFragments = []string{"declared and not used", "imported and not used", "is not used"}

// exportData lists the export data files of pkgs and their dependencies.
func exportData(t *testing.T, goTool string, pkgs []string) map[string]string {
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, pkgs...)
	cmd := exec.Command(goTool, args...)
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list -export: %s", stderr.String())
	files := map[string]string{}
	for l := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		path, file, _ := strings.Cut(l, "\t")
		files[path] = file
	}
	return files
}

func goTool(t *testing.T) string {
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	p, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is needed to compile the documentation's Go blocks")
	}
	return p
}

// TestGoBlocksCompile type-checks every ```go block of README.md and
// docs/*.md against the packages of this module. A block with a package
// clause is checked as a whole program; any other block is a fragment:
// its declarations, or its statements wrapped in a function whose
// parameters are the names a preceding "<!-- given: ... -->" comment
// declares (e.g. <!-- given: model nn.Module, x *tensor.Tensor -->), with
// the imports of the package names it uses. The fragments of one file form
// one package, so their top-level names must differ.
func TestGoBlocksCompile(t *testing.T) {
	tool := goTool(t)
	var all []snippet
	for _, f := range markdownFiles(t) {
		all = append(all, extractSnippets(t, f)...)
	}
	require.NotEmpty(t, all)

	fset := token.NewFileSet()
	type unit struct {
		s    snippet
		file *ast.File
	}
	var units []unit
	need := map[string]bool{}
	for i, s := range all {
		src := s.code
		if !s.complete() {
			src = fragmentSource(s, i)
		} else {
			src = fmt.Sprintf("//line %s:%d\n%s", s.file, s.line+1, src)
		}
		// The file name has no folder: //line names are taken relative to it.
		f, err := parser.ParseFile(fset, fmt.Sprintf("block%d.go", i), src, parser.SkipObjectResolution|parser.ParseComments)
		if !assert.NoError(t, err, "%s does not parse", s) {
			continue
		}
		for _, imp := range f.Imports {
			need[strings.Trim(imp.Path.Value, `"`)] = true
		}
		units = append(units, unit{s, f})
	}
	exports := exportData(t, tool, slices.Sorted(func(yield func(string) bool) {
		for p := range need {
			if !yield(p) {
				return
			}
		}
	}))
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})

	// Each complete program is checked alone; the fragments of one file are
	// checked together, as one package (a fragment may call a function
	// another one declares), and their errors that only mean "not a whole
	// program" are dropped.
	check := func(what string, fragments bool, files []*ast.File) {
		var errs []string
		conf := types.Config{Importer: imp, Error: func(err error) {
			msg := err.Error()
			if fragments && slices.ContainsFunc(ignoredInFragments, func(s string) bool { return strings.Contains(msg, s) }) {
				return
			}
			errs = append(errs, msg)
		}}
		_, _ = conf.Check("snippets", fset, files, nil)
		assert.Empty(t, errs, "Go blocks of %s do not compile:\n%s", what, strings.Join(errs, "\n"))
	}
	fragments := map[string][]*ast.File{}
	var files []string
	for _, u := range units {
		if u.s.complete() {
			check(u.s.String(), false, []*ast.File{u.file})
			continue
		}
		if _, ok := fragments[u.s.file]; !ok {
			files = append(files, u.s.file)
		}
		fragments[u.s.file] = append(fragments[u.s.file], u.file)
	}
	for _, f := range files {
		check(f, true, fragments[f])
	}
	t.Logf("%d Go blocks type-checked", len(units))
}

// TestRunnableBlocks builds the complete programs of the documentation that
// end with an "// Output:" comment (in one go build, through an overlay, so
// nothing is written into the module) and checks what they print.
func TestRunnableBlocks(t *testing.T) {
	tool := goTool(t)
	var runnable []snippet
	for _, f := range markdownFiles(t) {
		for _, s := range extractSnippets(t, f) {
			if s.runnable() {
				runnable = append(runnable, s)
			}
		}
	}
	require.NotEmpty(t, runnable, "no runnable Go block found")

	root, err := filepath.Abs("..")
	require.NoError(t, err)
	tmp := t.TempDir()
	overlay := map[string]string{}
	var pkgs []string
	for i, s := range runnable {
		src := filepath.Join(tmp, fmt.Sprintf("snippet%d.go", i))
		require.NoError(t, os.WriteFile(src, []byte(s.code), 0o600))
		// A folder that does not exist in the module: the overlay alone
		// makes it a package.
		dir := filepath.Join(root, "docs", "internal", "runnable", fmt.Sprintf("snippet%d", i))
		overlay[filepath.Join(dir, "main.go")] = src
		pkgs = append(pkgs, "./docs/internal/runnable/"+fmt.Sprintf("snippet%d", i))
	}
	overlayJSON, err := json.Marshal(map[string]any{"Replace": overlay})
	require.NoError(t, err)
	overlayFile := filepath.Join(tmp, "overlay.json")
	require.NoError(t, os.WriteFile(overlayFile, overlayJSON, 0o600))
	bin := filepath.Join(tmp, "bin")
	require.NoError(t, os.Mkdir(bin, 0o700))
	build := exec.Command(tool, append([]string{"build", "-overlay", overlayFile, "-o", bin + string(filepath.Separator)}, pkgs...)...)
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build of the runnable blocks:\n%s", out)

	for i, s := range runnable {
		exe := filepath.Join(bin, fmt.Sprintf("snippet%d", i))
		if runtime.GOOS == "windows" {
			exe += ".exe"
		}
		run := exec.Command(exe)
		run.Dir = tmp
		got, err := run.CombinedOutput()
		if !assert.NoError(t, err, "%s exited with an error:\n%s", s, got) {
			continue
		}
		assert.Equal(t, s.expectedOutput(), normalizeOutput(string(got)), "output of the program at %s", s)
	}
}

// normalizeOutput trims each line, as go test does for Example output.
func normalizeOutput(s string) string {
	var lines []string
	for l := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
		lines = append(lines, strings.TrimSpace(l))
	}
	return strings.Join(lines, "\n")
}

var markdownLink = regexp.MustCompile(`\]\(([^)#\s]+)(#[^)\s]*)?\)`)

// TestRelativeLinksResolve checks that every relative link of README.md and
// the guides names a file or folder of the repository.
func TestRelativeLinksResolve(t *testing.T) {
	for _, f := range markdownFiles(t) {
		text, err := os.ReadFile(filepath.Join("..", f))
		require.NoError(t, err)
		for _, m := range markdownLink.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			p := filepath.Join("..", filepath.Dir(f), target)
			_, err := os.Stat(p)
			if !assert.NoError(t, err, "%s links to %s, which does not exist", f, target) {
				continue
			}
			if anchor := strings.TrimPrefix(m[2], "#"); anchor != "" && strings.HasSuffix(target, ".md") {
				assert.Contains(t, headingAnchors(t, p), anchor, "%s links to %s#%s, which has no such heading", f, target, anchor)
			}
		}
	}
}

// headingAnchors returns the anchors GitHub gives the headings of the
// Markdown file at path: lower case, punctuation dropped, spaces as dashes.
func headingAnchors(t *testing.T, path string) []string {
	text, err := os.ReadFile(path)
	require.NoError(t, err)
	var anchors []string
	inCode := false
	for l := range strings.SplitSeq(string(text), "\n") {
		if strings.HasPrefix(l, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(l, "#") {
			continue
		}
		title := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
		var b strings.Builder
		for _, r := range title {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		anchors = append(anchors, b.String())
	}
	return anchors
}

// TestREADME checks what the front door promises: at most 250 lines, and
// the two commands CI runs near the top.
func TestREADME(t *testing.T) {
	text, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimRight(string(text), "\n"), "\n")
	assert.LessOrEqual(t, len(lines), 250, "README.md has %d lines", len(lines))
	top := strings.Join(lines[:min(40, len(lines))], "\n")
	assert.Contains(t, top, "go run ./examples/quickstart")
	assert.Contains(t, top, "go test ./...")
	ci, err := os.ReadFile("../.ci/run")
	require.NoError(t, err)
	assert.Contains(t, string(ci), "go run ./examples/quickstart", ".ci/run no longer runs the README's quickstart command")
	assert.Contains(t, string(ci), "\ngo test ./...\n", ".ci/run no longer runs the README's test command")
	for _, guide := range []string{"getting-started", "inference", "training", "pytorch", "distributed", "gpu",
		"observability", "extending", "architecture", "performance", "troubleshooting"} {
		assert.Contains(t, string(text), "docs/"+guide+".md", "README.md does not link the %s guide", guide)
		_, err := os.Stat(guide + ".md")
		assert.NoError(t, err, "guide docs/%s.md is missing", guide)
	}
}

var (
	exampleName = regexp.MustCompile(`\bExample[A-Za-z0-9_]*`)
	sourceFile  = regexp.MustCompile(`\b[a-z0-9_]+\.(go|s)\b`)
)

// TestPackageDocs checks the package documentation of the packages users
// start from: each names at least one runnable example that exists, every
// example it names exists, and none sends the reader to a source file.
func TestPackageDocs(t *testing.T) {
	for _, dir := range []string{"tensor", "autograd", "nn", "optim", "data", "onnx", "distributed", "train", "profiler", "serve", "tensorboard", "graphviz", "cuda", "nn/models"} {
		t.Run(dir, func(t *testing.T) {
			fset := token.NewFileSet()
			pkgs, err := parser.ParseDir(fset, filepath.Join("..", dir), nil, parser.ParseComments|parser.PackageClauseOnly)
			require.NoError(t, err)
			var doc string
			examples := map[string]bool{}
			for name, pkg := range pkgs {
				for fname, f := range pkg.Files {
					if strings.HasSuffix(fname, "_test.go") {
						continue
					}
					if f.Doc != nil && !strings.HasSuffix(name, "_test") {
						doc += f.Doc.Text()
					}
				}
			}
			// Example functions live in the test files, in either package.
			tests, err := filepath.Glob(filepath.Join("..", dir, "*_test.go"))
			require.NoError(t, err)
			for _, tf := range tests {
				f, err := parser.ParseFile(fset, tf, nil, parser.SkipObjectResolution)
				require.NoError(t, err)
				for _, d := range f.Decls {
					if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Example") {
						examples[fd.Name.Name] = true
					}
				}
			}
			require.NotEmpty(t, doc, "package %s has no package documentation", dir)
			named := exampleName.FindAllString(doc, -1)
			assert.NotEmpty(t, named, "the documentation of package %s names no runnable example", dir)
			for _, e := range named {
				assert.True(t, examples[e], "the documentation of package %s names %s, which does not exist", dir, e)
			}
			assert.Empty(t, sourceFile.FindAllString(doc, -1), "the documentation of package %s sends readers to source files", dir)
		})
	}
}

var fileName = regexp.MustCompile(`\.[a-z]+$`)

var repoPath = regexp.MustCompile("`((?:\\./)?(?:examples|cmd|bench|internal|docs|tensor|autograd|nn|optim|data|onnx|distributed|train|cuda|tensorboard|graphviz|\\.ci)/[A-Za-z0-9_./*<>-]*)")

// TestPathsExist checks that the repository paths README.md and the guides
// quote in code spans (`examples/onnx-serve`, `bench/compare.py`, ...)
// exist, globs included.
func TestPathsExist(t *testing.T) {
	for _, f := range markdownFiles(t) {
		text, err := os.ReadFile(filepath.Join("..", f))
		require.NoError(t, err)
		for _, m := range repoPath.FindAllStringSubmatch(string(text), -1) {
			p := strings.TrimSuffix(strings.TrimPrefix(m[1], "./"), ".")
			if strings.ContainsAny(p, "<>") {
				continue // a placeholder such as gen_<area>.py
			}
			top, _, _ := strings.Cut(p, "/")
			if !slices.Contains([]string{"examples", "cmd", "bench", "internal", "docs", ".ci"}, top) && !fileName.MatchString(p) {
				continue // under a package folder only file names count: "train/loss" is a TensorBoard tag
			}
			matches, err := filepath.Glob(filepath.Join("..", p))
			require.NoError(t, err)
			assert.NotEmpty(t, matches, "%s names %s, which does not exist", f, p)
		}
	}
}
