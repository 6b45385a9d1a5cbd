package etcd

import (
	"testing"
)

func TestSmoke(t *testing.T) {
	needCluster(t)
	h := newHost(t, "node-a")
	conf := standalone(t, h, [][]map[string]string{{{"subnet": "10.214.0.0/24"}}}, nil)
	r, as := mustAdd(t, "c1", conf)
	t.Logf("%s %v %s", r.Stdout, as, r.Stderr)
	t.Log(keys(t))
	mustRun(t, "DEL", "c1", withPrev(t, conf, r.Stdout))
	wantNoKeys(t)
}
