package cli

import (
	"bytes"
	"testing"
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
