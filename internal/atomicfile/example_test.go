package atomicfile_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/emberml/ember/internal/atomicfile"
)

func ExampleWriteFile() {
	dir, _ := os.MkdirTemp("", "atomicfile")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "settings.json")
	if err := atomicfile.WriteFile(path, []byte(`{"lr": 0.1}`), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	data, _ := os.ReadFile(path)
	fmt.Println(string(data))
	// Output: {"lr": 0.1}
}

func ExampleCreate() {
	dir, _ := os.MkdirTemp("", "atomicfile")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "log.txt")
	save := func() error {
		f, err := atomicfile.Create(path, 0o644)
		if err != nil {
			return err
		}
		defer f.Close() // discards the temporary unless Commit succeeded
		for i := range 3 {
			if _, err := fmt.Fprintf(f, "line %d\n", i); err != nil {
				return err
			}
		}
		return f.Commit()
	}
	if err := save(); err != nil {
		fmt.Println(err)
		return
	}
	data, _ := os.ReadFile(path)
	fmt.Print(string(data))
	// Output:
	// line 0
	// line 1
	// line 2
}
