package kubernetes

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// What a PromQL expression holds besides metric names, removed before
// its identifiers are read: strings, label matchers, ranges and
// subqueries, the label lists of by/without/on/ignoring/group_*, and
// Grafana's variables.
var promqlNoise = []*regexp.Regexp{
	regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`"),
	regexp.MustCompile(`\{[^}]*\}`),
	regexp.MustCompile(`\[[^\]]*\]`),
	regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`),
	regexp.MustCompile(`\$\{[^}]*\}|\$\w+`),
}

// promqlIdent is an identifier; metricNames drops one inside a number
// (1h, 1e3) and one followed by "(" (a function, an aggregation).
var promqlIdent = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)

var promqlKeywords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan", "atan2"}

// metricNames lists the metric names expr selects, sorted, once each: a
// lexical reading, enough for a dashboard's queries (its own test below
// says what it understands).
func metricNames(expr string) []string {
	for _, re := range promqlNoise {
		expr = re.ReplaceAllString(expr, " ")
	}
	var names []string
	for _, loc := range promqlIdent.FindAllStringIndex(expr, -1) {
		name := expr[loc[0]:loc[1]]
		inNumber := loc[0] > 0 && strings.ContainsRune("0123456789.", rune(expr[loc[0]-1]))
		called := strings.HasPrefix(strings.TrimLeft(expr[loc[1]:], " \t\n"), "(")
		if inNumber || called || slices.Contains(promqlKeywords, strings.ToLower(name)) {
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// labelValuesSelector is the series selector of a Grafana query
// variable's label_values(SELECTOR, LABEL).
func labelValuesSelector(def string) (string, bool) {
	m := regexp.MustCompile(`^\s*label_values\(\s*(.+),\s*\w+\s*\)\s*$`).FindStringSubmatch(def)
	if m == nil {
		return "", false
	}
	return m[1], true
}

func TestMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`cniplugins_ipam_exhausted{kind="pool",instance=~"$instance"} == 1`, []string{"cniplugins_ipam_exhausted"}},
		{`sum by (instance, name) (a{x="b c"}) / max by (instance, name) (b > 0)`, []string{"a", "b"}},
		{`sum(a) by (instance) / on (instance, tenant) group_left (pool) max(b)`, []string{"a", "b"}},
		{`sum by (instance) (increase(c_total{i=~"$instance"}[1h]))`, []string{"c_total"}},
		{`rate(c_total[$__rate_interval]) * 1e3 offset 5m`, []string{"c_total"}},
		{`time() - (ts_seconds{a="{b}"} > 0)`, []string{"ts_seconds"}},
		{`count by (version, flavour) (build_info)`, []string{"build_info"}},
		{`a and b unless bool_metric or c`, []string{"a", "b", "bool_metric", "c"}},
		{`${datasource} + x`, []string{"x"}},
		{`vector(1)`, nil},
	}
	for _, tt := range tests {
		if got := metricNames(tt.expr); !slices.Equal(got, tt.want) {
			t.Errorf("metricNames(%q) = %v, want %v", tt.expr, got, tt.want)
		}
	}
	if sel, ok := labelValuesSelector("label_values(cniplugins_build_info{a=\"b\"}, instance)"); !ok || sel != `cniplugins_build_info{a="b"}` {
		t.Errorf("label_values: %q %v", sel, ok)
	}
}
