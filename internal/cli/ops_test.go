package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

func TestBar(t *testing.T) {
	for p, want := range map[float64]string{0: "[....................]", 50: "[##########..........]", 100: "[####################]", 2.4: "[....................]", 2.6: "[#...................]"} {
		if got := bar(p); got != want {
			t.Errorf("bar(%v) = %s, want %s", p, got, want)
		}
	}
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	if err := writeTable(&b, []string{"A", "LONGER"}, [][]string{{"x", ""}, {"wide-cell", "y"}}, false); err != nil {
		t.Fatal(err)
	}
	want := "A          LONGER\nx          -\nwide-cell  y\n"
	if b.String() != want {
		t.Errorf("table:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	_ = writeTable(&b, []string{"A", "B"}, [][]string{{"\x1b[2Jevil\xff", "z"}}, true)
	if b.String() != "?[2Jevil?  z\n" {
		t.Errorf("control characters reach the terminal: %q", b.String())
	}
	b.Reset()
	_ = writeTable(&b, []string{"A"}, [][]string{{"x"}}, true)
	if b.String() != "x\n" {
		t.Errorf("--no-headers: %q", b.String())
	}
}

func TestParseKeep(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want alloc.Attachment
		err  bool
	}{
		{"abc@eth0", alloc.Attachment{ContainerID: "abc", IfName: "eth0"}, false},
		{"abc", alloc.Attachment{ContainerID: "abc"}, false},
		{" abc@net1 ", alloc.Attachment{ContainerID: "abc", IfName: "net1"}, false},
		{"@eth0", alloc.Attachment{}, true},
		{"", alloc.Attachment{}, true},
	} {
		got, err := parseKeep(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("parseKeep(%q) = %+v, %v", tt.in, got, err)
		}
	}
	file := func(content string) string {
		path := filepath.Join(t.TempDir(), "keep")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	got, err := readKeepFile(file("# live\nc1@eth0\n\n  c2\n"))
	if err != nil || len(got) != 2 || got[1].ContainerID != "c2" {
		t.Errorf("readKeepFile = %+v, %v", got, err)
	}
	if _, err := readKeepFile(file("c1\n@x\n")); err == nil {
		t.Error("readKeepFile accepted @x")
	}
}
