package promtext

import "testing"

func TestQuote(t *testing.T) {
	if got := quote("a\"b\\c\nd"); got != `"a\"b\\c\nd"` {
		t.Errorf("quote = %s", got)
	}
}
