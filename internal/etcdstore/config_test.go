package etcdstore

import (
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/clusteraccess"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

func envelope(t *testing.T, etcd string) *netconf.Envelope {
	t.Helper()
	env, err := netconf.Parse([]byte(`{"cniVersion":"1.1.0","name":"n","ipam":{"type":"ipam-da-etcd","ranges":[[{"subnet":"10.214.0.0/24"}]]` + etcd + `}}`))
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestParseEtcd(t *testing.T) {
	tests := []struct {
		name  string
		etcd  string
		field string // named in the error; "" means valid
		check func(*etcdConf) bool
	}{
		{"defaults", `,"etcd":{"endpoints":["http://127.0.0.1:2379"],"nodeName":"n1"}`, "", func(c *etcdConf) bool {
			return c.Prefix == clusteraccess.DefaultPrefix && c.timeout == DefaultTimeout && c.NodeName == "n1" && c.Endpoints[0] == "http://127.0.0.1:2379"
		}},
		{"prefix gets its slash, trailing slash of an endpoint dropped", `,"etcd":{"endpoints":["https://[fd00:214::1]:2379/"],"prefix":"/x/y","timeout":"250ms","nodeName":"a"}`, "", func(c *etcdConf) bool {
			return c.Prefix == "/x/y/" && c.timeout == 250*time.Millisecond && c.Endpoints[0] == "https://[fd00:214::1]:2379"
		}},
		{"host name is the default node", `,"etcd":{"endpoints":["http://e:2379"]}`, "", func(c *etcdConf) bool { return c.NodeName != "" }},
		{"no etcd", ``, "ipam.etcd", nil},
		{"no endpoints", `,"etcd":{}`, "ipam.etcd.endpoints", nil},
		{"not a URL scheme", `,"etcd":{"endpoints":["127.0.0.1:2379"]}`, "ipam.etcd.endpoints[0]", nil},
		{"credentials in URL", `,"etcd":{"endpoints":["http://u:p@e:2379"]}`, "ipam.etcd.endpoints[0]", nil},
		{"path in URL", `,"etcd":{"endpoints":["http://e:2379","http://e:2379/v3"]}`, "ipam.etcd.endpoints[1]", nil},
		{"relative prefix", `,"etcd":{"endpoints":["http://e:2379"],"prefix":"cni/"}`, "ipam.etcd.prefix", nil},
		{"control character in prefix", `,"etcd":{"endpoints":["http://e:2379"],"prefix":"/a\nb/"}`, "ipam.etcd.prefix", nil},
		{"node name with a slash", `,"etcd":{"endpoints":["http://e:2379"],"nodeName":"a/../b"}`, "ipam.etcd.nodeName", nil},
		{"timeout not a duration", `,"etcd":{"endpoints":["http://e:2379"],"timeout":"5"}`, "ipam.etcd.timeout", nil},
		{"timeout too long", `,"etcd":{"endpoints":["http://e:2379"],"timeout":"1h"}`, "ipam.etcd.timeout", nil},
		{"inline password", `,"etcd":{"endpoints":["http://e:2379"],"username":"u","password":"secret"}`, "ipam.etcd.password", nil},
		{"username without passwordFile", `,"etcd":{"endpoints":["http://e:2379"],"username":"u"}`, "ipam.etcd.username", nil},
		{"password over http://", `,"etcd":{"endpoints":["https://a:2379","http://e:2379"],"username":"u","passwordFile":"/pw"}`, "ipam.etcd.allowPasswordOverHTTP", nil},
		{"password over http://, opted in", `,"etcd":{"endpoints":["http://e:2379"],"username":"u","passwordFile":"/pw","allowPasswordOverHTTP":true,"nodeName":"n"}`, "", func(c *etcdConf) bool { return c.Username == "u" }},
		{"password over https:// and loopback http://", `,"etcd":{"endpoints":["https://e:2379","http://127.0.0.1:2379","http://[::1]:2379","http://localhost:2379"],"username":"u","passwordFile":"/pw","nodeName":"n"}`, "", func(c *etcdConf) bool { return len(c.Endpoints) == 4 }},
		{"cert without key", `,"etcd":{"endpoints":["https://e:2379"],"tls":{"certFile":"/c.pem"}}`, "ipam.etcd.tls", nil},
		{"wrong type", `,"etcd":{"endpoints":"http://e:2379"}`, "ipam.etcd.endpoints", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseEtcd(envelope(t, tt.etcd), true)
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !tt.check(c) {
					t.Fatalf("parsed %+v", c)
				}
				return
			}
			if cnierr.Code(err) != cnierr.CodeInvalidConfig {
				t.Fatalf("error %v, want code 7", err)
			}
			if e := cnierr.As(err); !strings.Contains(e.Msg+e.Details, tt.field) {
				t.Fatalf("error %q / %q does not name %s", e.Msg, e.Details, tt.field)
			}
			if strings.Contains(cnierr.As(err).Details, "secret") {
				t.Fatal("the error shows the password")
			}
		})
	}
}
