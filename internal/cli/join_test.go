package cli

import (
	"testing"

	"github.com/spf13/cobra"
)

func TestJoin(t *testing.T) {
	cmds := func(names ...string) func() []*cobra.Command {
		return func() []*cobra.Command {
			var out []*cobra.Command
			for _, n := range names {
				out = append(out, &cobra.Command{Use: n})
			}
			return out
		}
	}
	cases := []struct {
		name  string
		first func() []*cobra.Command
		more  []func() []*cobra.Command
		want  []string
	}{
		{"nil first", nil, []func() []*cobra.Command{cmds("docker-ipam")}, []string{"docker-ipam"}},
		{"order kept", cmds("a"), []func() []*cobra.Command{cmds("b", "c"), cmds("d")}, []string{"a", "b", "c", "d"}},
		{"nothing", nil, nil, nil},
	}
	for _, c := range cases {
		var got []string
		for _, cmd := range Join(c.first, c.more...)() {
			got = append(got, cmd.Use)
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
			}
		}
	}
}
