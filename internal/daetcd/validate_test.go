package daetcd

import (
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// conf is a network of ipam-da-etcd whose ipam section is ipam.
func conf(t *testing.T, ipam string) *netconf.Envelope {
	t.Helper()
	env, err := netconf.Parse([]byte(`{"cniVersion":"1.1.0","name":"n","ipam":{"type":"ipam-da-etcd",` + ipam + `}}`))
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// Validate checks ipam.etcd without touching the host (no host name
// needed) and the allocator's keys as ipam-da-pools does.
func TestValidate(t *testing.T) {
	if err := Personality().Validate(conf(t, `"ranges":[[{"subnet":"10.214.0.0/24"}]],"etcd":{"endpoints":["http://e:2379"]}`)); err != nil {
		t.Fatal(err)
	}
	if err := Personality().Validate(conf(t, `"ranges":[[{"subnet":"10.214.0.0/24"}]],"etcd":{"endpoints":["ftp://e"]}`)); cnierr.Code(err) != cnierr.CodeInvalidConfig {
		t.Fatalf("got %v", err)
	}
	env, _ := netconf.Parse([]byte(`{"cniVersion":"1.1.0","name":"n","ipam":{"type":"ipam-da-etcd","etcd":{"endpoints":["http://e:2379"]},"ranges":[[{"subnet":"10.214.0.0/33"}]]}}`))
	if err := Personality().Validate(env); cnierr.Code(err) != cnierr.CodeInvalidConfig || !strings.Contains(cnierr.As(err).Msg, "ranges[0][0].subnet") {
		t.Fatalf("got %v", err)
	}
}
