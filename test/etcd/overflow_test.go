package etcd

import (
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/tenancycase"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// etcdEnv is ipam-da-etcd on host h, pool mode, through the real binary.
func etcdEnv(h host) tenancycase.Env {
	return tenancycase.Env{
		Conf: func(t *testing.T, defs map[string]any, pools []map[string]any) []byte {
			ipam := map[string]any{"type": "ipam-da-etcd", "dataDir": h.dir, "etcd": etcdKeys(t, h, nil), "poolDefinitions": defs}
			return mustJSON(t, map[string]any{"cniVersion": "1.1.0", "name": "tenancy", "ipam": ipam,
				"prevResult": map[string]any{"cniVersion": "1.1.0", "pools": pools}})
		},
		Run: func(cmd, cid string, conf []byte) testbin.Reply {
			if cid == "" {
				return testbin.Run(testbin.Call{Plugin: "ipam-da-etcd", Command: cmd, Path: binDir, Stdin: conf})
			}
			return run1(cmd, cid, conf)
		},
	}
}

func TestOverflowChains(t *testing.T) {
	needCluster(t)
	tenancycase.RunOverflow(t, etcdEnv(newHost(t, "host-a")))
}
