package alloc_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The engine decides over values already read: what a runtime hands a
// plugin (the envelope, CNI_ARGS, annotations, prevResult) is
// internal/ipamconf's to read and the dispatcher internal/plugin's, so
// that "where is rule X decided" has one answer. Every non-test file
// counts, whatever its build tags.
func TestEngineReadsNoCNIInput(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	forbidden := []string{"/internal/netconf", "/internal/plugin", "/internal/ipamconf"}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			for _, bad := range forbidden {
				if strings.HasSuffix(path, bad) {
					t.Errorf("%s imports %s: the engine takes parsed values, internal/ipamconf reads CNI input", f, path)
				}
			}
		}
	}
	if len(files) == 0 {
		t.Fatal("no Go files found: the test must run in the package's directory")
	}
}
