package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestReport(t *testing.T) {
	const pass = `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Output":"PASS\n"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.01s\n"}
{"Action":"pass","Package":"p"}
`
	const skip = `{"Action":"run","Package":"q","Test":"TestB"}
{"Action":"output","Package":"q","Test":"TestB","Output":"    b_test.go:9: SKIPPING: needs root\n"}
{"Action":"output","Package":"q","Test":"TestB","Output":"--- SKIP: TestB (0.00s)\n"}
{"Action":"skip","Package":"q","Test":"TestB"}
{"Action":"output","Package":"q","Output":"ok  \tq\t0.01s\n"}
{"Action":"pass","Package":"q"}
`
	const fail = `{"Action":"run","Package":"r","Test":"TestC"}
{"Action":"output","Package":"r","Test":"TestC","Output":"    c_test.go:3: boom\n"}
{"Action":"output","Package":"r","Test":"TestC","Output":"--- FAIL: TestC (0.00s)\n"}
{"Action":"fail","Package":"r","Test":"TestC"}
{"Action":"output","Package":"r","Output":"FAIL\tr\t0.01s\n"}
{"Action":"fail","Package":"r"}
`
	tests := []struct {
		name     string
		in       string
		code     int
		has, not []string
	}{
		{"all pass", pass, 0, []string{"ok  \tp", "tests: 1 passed, 0 failed, 0 skipped"}, []string{"=== RUN", "PASS\n"}},
		{"a skip shows its reason", pass + skip, 0, []string{"SKIPPING: needs root", "--- SKIP: TestB", "skipped: q TestB", "tests: 1 passed, 0 failed, 1 skipped"}, nil},
		{"a failure shows its output", pass + fail, 1, []string{"boom", "--- FAIL: TestC", "FAIL\tr", "tests: 1 passed, 1 failed, 0 skipped"}, nil},
		{"the go command's text is shown", "go: downloading x v1\n" + pass, 0, []string{"go: downloading x v1"}, nil},
		{"a build failure fails", `{"Action":"build-output","ImportPath":"r","Output":"r.go:1: syntax error\n"}` + "\n" + `{"Action":"build-fail","ImportPath":"r"}` + "\n" + pass, 1, []string{"syntax error"}, nil},
		{"a package failing outside tests fails", `{"Action":"output","Package":"s","Output":"panic in TestMain\n"}` + "\n" + `{"Action":"fail","Package":"s"}` + "\n", 1, []string{"panic in TestMain"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			r := &report{out: &out, buffered: map[string][]string{}}
			if err := r.read(strings.NewReader(tc.in)); err != nil {
				t.Fatal(err)
			}
			if code := r.close(); code != tc.code {
				t.Errorf("exit code %d, want %d; output:\n%s", code, tc.code, out.String())
			}
			for _, s := range tc.has {
				if !strings.Contains(out.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, out.String())
				}
			}
			for _, s := range tc.not {
				if strings.Contains(out.String(), s) {
					t.Errorf("output has %q:\n%s", s, out.String())
				}
			}
		})
	}
}
