package nn_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exportedNames parses the non-test Go files of dir and returns its
// exported names: top-level functions, types, constants and variables as
// "Name", and methods, struct fields and interface methods as
// "Type.Name".
func exportedNames(t *testing.T, dir string) map[string]bool {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, decl := range f.Decls {
				switch d := decl.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil {
						names[d.Name.Name] = true
						continue
					}
					recv := d.Recv.List[0].Type
					if s, ok := recv.(*ast.StarExpr); ok {
						recv = s.X
					}
					if ix, ok := recv.(*ast.IndexExpr); ok {
						recv = ix.X
					}
					if id, ok := recv.(*ast.Ident); ok {
						names[id.Name+"."+d.Name.Name] = true
					}
				case *ast.GenDecl:
					for _, spec := range d.Specs {
						switch s := spec.(type) {
						case *ast.TypeSpec:
							names[s.Name.Name] = true
							var fields *ast.FieldList
							switch ty := s.Type.(type) {
							case *ast.StructType:
								fields = ty.Fields
							case *ast.InterfaceType:
								fields = ty.Methods
							}
							if fields == nil {
								continue
							}
							for _, fl := range fields.List {
								for _, n := range fl.Names {
									names[s.Name.Name+"."+n.Name] = true
								}
							}
						case *ast.ValueSpec:
							for _, n := range s.Names {
								names[n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	return names
}

// TestCatalogue checks docs/catalogue.md against the code: every Go name
// in a table's first column exists in its package, every "## Section (N)"
// and "### Family (N)" heading counts its rows (a section includes its
// families' rows), and the count table at the top agrees with the
// sections.
func TestCatalogue(t *testing.T) {
	text, err := os.ReadFile("../docs/catalogue.md")
	require.NoError(t, err)
	pkgs := map[string]map[string]bool{
		"nn":     exportedNames(t, "."),
		"optim":  exportedNames(t, "../optim"),
		"models": exportedNames(t, "models"),
	}
	heading := regexp.MustCompile(`^(##+) (.+) \((\d+)\)$`)
	entry := regexp.MustCompile("^\\| `([a-z]+)\\.([A-Za-z0-9_.]+)` \\|")
	summary := regexp.MustCompile(`^\| ([A-Za-z ]+) \| (\d+) \|$`)
	type section struct {
		title      string
		want, rows int
	}
	var sections []*section
	var h2, h3 *section
	listed := map[string]int{}
	seen := map[string]bool{}
	for i, line := range strings.Split(string(text), "\n") {
		if m := heading.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[3])
			s := &section{title: m[2], want: n}
			sections = append(sections, s)
			if m[1] == "##" {
				h2, h3 = s, nil
			} else {
				h3 = s
			}
			continue
		}
		if m := summary.FindStringSubmatch(line); m != nil && h2 == nil {
			n, _ := strconv.Atoi(m[2])
			listed[m[1]] = n
			continue
		}
		m := entry.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		require.NotNil(t, h2, "line %d: entry before any section", i+1)
		names, ok := pkgs[m[1]]
		require.True(t, ok, "line %d: unknown package %q", i+1, m[1])
		assert.True(t, names[m[2]], "line %d: %s.%s does not exist", i+1, m[1], m[2])
		key := h2.title + "/" + m[1] + "." + m[2]
		assert.False(t, seen[key], "line %d: %s.%s listed twice in %s", i+1, m[1], m[2], h2.title)
		seen[key] = true
		h2.rows++
		if h3 != nil {
			h3.rows++
		}
	}
	require.NotEmpty(t, sections)
	top := 0
	for _, s := range sections {
		assert.Equal(t, s.want, s.rows, "heading %q", s.title)
		if n, ok := listed[s.title]; ok {
			assert.Equal(t, s.rows, n, "count table entry %q", s.title)
			top++
		}
	}
	assert.Equal(t, len(listed), top, "every count-table entry names a section")
	assert.Len(t, listed, 10)
}
