package dsselect

import (
	"fmt"
	"strings"
	"testing"
)

// Selectable lists each pool the rules, their podChoice and the defaults
// can select once, defined where its ranges are written, chains resolved.
func TestSelectableArgs(t *testing.T) {
	for _, tt := range []struct {
		name, ipam string
		want       []string // "name field chain"
	}{
		{"inline, bare, podChoice, defaults",
			`"rules":[{"namespace":"a","pools":["shared"],"podChoice":["shared","fast"]},
				{"namespace":"b","pools":[{"name":"b","subnet":"10.1.2.0/24","overflow":"shared"}]}],
				"defaultPools":[{"name":"shared","subnet":"10.1.9.0/24"}],"poolDefinitions":{"fast":[{"subnet":"10.1.3.0/24"}]}`,
			[]string{"shared ipam.defaultPools[0] []", "b ipam.rules[1].pools[0] [shared]", "fast ipam.rules[0].podChoice[1] []"}},
		{"a bare name first, its definition later",
			`"rules":[{"namespace":"a","pools":["p"]},{"namespace":"b","pools":[{"name":"p","subnet":"10.1.4.0/24"}]}]`,
			[]string{"p ipam.rules[1].pools[0] []"}},
		{"defaults alone",
			`"defaultPools":[{"name":"d","subnet":"10.1.5.0/24"},"e"],"poolDefinitions":{"e":[{"subnet":"10.1.6.0/24"}]}`,
			[]string{"d ipam.defaultPools[0] []", "e ipam.defaultPools[1] []"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ps, _, _, err := Selectable(argsEnvelope(t, tt.ipam, input{}), []string{ArgsName})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range ps {
				got = append(got, fmt.Sprintf("%s %s %v", p.Name, p.Field, p.Names()[1:]))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Selectable:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
