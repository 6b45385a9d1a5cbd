package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"time"

	"github.com/cniplugins/cniplugins/internal/etcdtest"
)

func main() {
	for _, dir := range []string{"", "/dev/shm"} {
		d := ""
		if dir != "" {
			d, _ = os.MkdirTemp(dir, "etcdm-")
		}
		c, err := etcdtest.Start(etcdtest.Options{Dir: d})
		if err != nil {
			panic(err)
		}
		ep := c.Members[0].ClientURL
		cl := &http.Client{}
		post := func(path string, body any) []byte {
			b, _ := json.Marshal(body)
			r, err := cl.Post(ep+path, "application/json", bytes.NewReader(b))
			if err != nil {
				panic(err)
			}
			out, _ := io.ReadAll(r.Body)
			r.Body.Close()
			return out
		}
		meas := func(name string, f func(i int)) {
			var ds []time.Duration
			for i := 0; i < 300; i++ {
				t := time.Now()
				f(i)
				ds = append(ds, time.Since(t))
			}
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			fmt.Printf("%-10s %-28s p50 %v p90 %v\n", dir, name, ds[150], ds[270])
		}
		meas("range(lin)", func(i int) { post("/v3/kv/range", map[string]any{"key": []byte("x")}) })
		meas("range(serial)", func(i int) { post("/v3/kv/range", map[string]any{"key": []byte("x"), "serializable": true}) })
		meas("txn create", func(i int) {
			k := []byte(fmt.Sprintf("/t/%d", i))
			post("/v3/kv/txn", map[string]any{
				"compare": []any{map[string]any{"key": k, "target": "CREATE", "result": "EQUAL", "create_revision": "0"}},
				"success": []any{map[string]any{"request_put": map[string]any{"key": k, "value": []byte("v")}},
					map[string]any{"request_put": map[string]any{"key": append(k, 'i'), "value": []byte("v")}}},
				"failure": []any{map[string]any{"request_range": map[string]any{"key": k}}},
			})
		})
		meas("lease grant", func(i int) { post("/v3/lease/grant", map[string]any{"TTL": "10"}) })
		fmt.Println(string(post("/v3/lease/grant", map[string]any{"TTL": "10"})))
		fmt.Println(string(post("/v3/kv/txn", map[string]any{
			"compare": []any{map[string]any{"key": []byte("/t/1"), "target": "CREATE", "result": "EQUAL", "create_revision": "0"}},
			"failure": []any{map[string]any{"request_range": map[string]any{"key": []byte("/t/1")}}}})))
		c.Stop()
	}
}
