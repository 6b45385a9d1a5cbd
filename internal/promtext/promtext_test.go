package promtext

import (
	"strings"
	"testing"
)

func TestLabelQuoting(t *testing.T) {
	var b strings.Builder
	if err := Write(&b, []Family{{Name: "m", Samples: []Sample{{Labels: []Label{{Name: "l", Value: "a\"b\\c\nd"}}}}}}); err != nil {
		t.Fatal(err)
	}
	if want := `m{l="a\"b\\c\nd"} 0` + "\n"; !strings.HasSuffix(b.String(), want) {
		t.Errorf("exposition %q, want it to end in %q", b.String(), want)
	}
}
