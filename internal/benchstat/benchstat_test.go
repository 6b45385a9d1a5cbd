package benchstat

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []float64
		want float64
	}{
		{"empty", nil, 0},
		{"one", []float64{7}, 7},
		{"odd count, unsorted", []float64{5, 1, 3}, 3},
		{"even count is the mean of the middle two", []float64{4, 1, 3, 2}, 2.5},
		{"duplicates", []float64{2, 2, 9, 2}, 2},
	} {
		in := slices.Clone(tc.in)
		if got := Median(in); got != tc.want {
			t.Errorf("%s: Median(%v) = %v, want %v", tc.name, tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("%s: Median reordered its input to %v", tc.name, in)
		}
	}
	// Integer samples: the even-count mean truncates.
	if got := Median([]int{1, 2, 3, 4}); got != 2 {
		t.Errorf("Median(int 1..4) = %d, want 2", got)
	}
	if got := Median([]time.Duration{3 * time.Millisecond, time.Millisecond}); got != 2*time.Millisecond {
		t.Errorf("Median(1ms, 3ms) = %v, want 2ms", got)
	}
}

func TestQuantile(t *testing.T) {
	hundred := make([]int, 100) // 1..100, reversed
	for i := range hundred {
		hundred[i] = 100 - i
	}
	ten := []int{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}
	for _, tc := range []struct {
		name string
		in   []int
		q    float64
		want int
	}{
		{"empty", nil, 0.5, 0},
		{"one value, any q", []int{4}, 0.99, 4},
		{"p99 of 100 is the 99th", hundred, 0.99, 99},
		{"p100 is the largest", hundred, 1, 100},
		{"p0 is the smallest", hundred, 0, 1},
		{"p50 of 10 is the 5th (no mean)", ten, 0.5, 5},
		{"p90 of 10 is the 9th", ten, 0.9, 9},
		{"p99 of 10 rounds up to the 10th", ten, 0.99, 10},
		{"p91 of 10 rounds up to the 10th", ten, 0.91, 10},
		{"p50 of 3 is the 2nd", []int{30, 10, 20}, 0.5, 20},
	} {
		in := slices.Clone(tc.in)
		if got := Quantile(in, tc.q); got != tc.want {
			t.Errorf("%s: Quantile(q=%v) = %d, want %d", tc.name, tc.q, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("%s: Quantile reordered its input", tc.name)
		}
	}
}

func TestMS(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want float64
	}{
		{0, 0},
		{time.Millisecond, 1},
		{1500 * time.Microsecond, 1.5},
		{2 * time.Second, 2000},
	} {
		if got := MS(tc.in); got != tc.want {
			t.Errorf("MS(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestRatio(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name    string
		a, b    float64
		want    float64
		wantNaN bool
	}{
		{"plain", 3, 2, 1.5, false},
		{"zero numerator", 0, 2, 0, false},
		{"zero denominator", 3, 0, 0, true},
		{"missing numerator", nan, 2, 0, true},
		{"missing denominator", 3, nan, 0, true},
	} {
		got := Ratio(tc.a, tc.b)
		if tc.wantNaN {
			if !math.IsNaN(got) {
				t.Errorf("%s: Ratio(%v, %v) = %v, want NaN", tc.name, tc.a, tc.b, got)
			}
		} else if got != tc.want {
			t.Errorf("%s: Ratio(%v, %v) = %v, want %v", tc.name, tc.a, tc.b, got, tc.want)
		}
	}
}

func TestParseInittrace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stderr  string
		wantSum float64
		wantPkg map[string]float64
	}{
		{"nothing", "", 0, map[string]float64{}},
		{"no trace lines", "some log line\nanother\n", 0, map[string]float64{}},
		{
			"two packages among other output",
			"init internal/bytealg @0.008 ms, 0.010 ms clock, 0 bytes, 0 allocs\n" +
				"plugin says hello\n" +
				"init runtime @0.021 ms, 0.25 ms clock, 16 bytes, 1 allocs\n",
			0.26, map[string]float64{"internal/bytealg": 0.010, "runtime": 0.25},
		},
		{
			"a package twice adds up",
			"init a @1 ms, 1.5 ms clock, 0 bytes, 0 allocs\ninit a @3 ms, 0.5 ms clock, 0 bytes, 0 allocs\n",
			2, map[string]float64{"a": 2},
		},
		{
			"malformed lines are skipped",
			"init b @1 ms, x ms clock, 0 bytes, 0 allocs\n  init c @1 ms, 1 ms clock, 0 bytes, 0 allocs\ninit d @1 ms, 1 ms clock\n",
			0, map[string]float64{},
		},
	} {
		sum, byPkg := ParseInittrace([]byte(tc.stderr))
		if math.Abs(sum-tc.wantSum) > 1e-9 {
			t.Errorf("%s: sum = %v, want %v", tc.name, sum, tc.wantSum)
		}
		if len(byPkg) != len(tc.wantPkg) {
			t.Errorf("%s: byPkg = %v, want %v", tc.name, byPkg, tc.wantPkg)
			continue
		}
		for p, v := range tc.wantPkg {
			if math.Abs(byPkg[p]-v) > 1e-9 {
				t.Errorf("%s: byPkg[%s] = %v, want %v", tc.name, p, byPkg[p], v)
			}
		}
	}
}

func TestFileSize(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, make([]byte, 1234), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		want       int64
	}{
		{"a file", f, 1234},
		{"an empty file", empty, 0},
		{"missing", filepath.Join(dir, "nope"), 0},
		{"no path (subject not built)", "", 0},
	} {
		if got := FileSize(tc.path); got != tc.want {
			t.Errorf("%s: FileSize(%q) = %d, want %d", tc.name, tc.path, got, tc.want)
		}
	}
}
