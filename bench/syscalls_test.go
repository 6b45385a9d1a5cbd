package main

import "testing"

func TestParseStraceSummary(t *testing.T) {
	in := `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ------------------
 23.67    0.001079        1079         1           execve
 13.34    0.000608           5       114           rt_sigaction
  1.93    0.000088           5        15         2 openat
  0.00    0.000000           0         4           pwrite64
  0.00    0.000000           0         2           fdatasync
  0.00    0.000000           0         2           renameat
------ ----------- ----------- --------- --------- ------------------
100.00    0.004559          16       138         2 total
`
	got := parseStraceSummary([]byte(in))
	want := syscallCount{total: 138, files: 23, fsyncs: 2}
	if got != want {
		t.Errorf("parseStraceSummary = %+v, want %+v", got, want)
	}
}
