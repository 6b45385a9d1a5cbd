package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// The in-process and exec paths give byte-identical results and state, and
// the in-process path is really taken unless CNIPLUGINS_EXEC_DELEGATES is set.
func TestInProcessAndExecDelegationAgree(t *testing.T) {
	// The verbose flavour, with all its personalities, so that its debug
	// log shows which path ran.
	dir := t.TempDir()
	if err := testkit.Install(verboseBin, dir); err != nil {
		t.Fatal(err)
	}
	run := func(forceExec bool) (string, string, string) {
		dataDir := t.TempDir()
		logFile := filepath.Join(t.TempDir(), "log")
		env := []string{"CNIPLUGINS_LOG_FILE=" + logFile}
		if forceExec {
			env = append(env, "CNIPLUGINS_EXEC_DELEGATES=1")
		}
		var out []string
		for _, cmd := range []string{"ADD", "CHECK", "DEL"} {
			conf := chainConf("inproc", dataDir, `[{"name":"p","subnet":"10.91.0.0/24"},{"name":"q","ranges":[{"subnet":"fd91::/120"}]}]`)
			if cmd != "ADD" {
				conf = []byte(strings.Replace(string(conf), `"name":"inproc",`, `"name":"inproc","prevResult":`+out[0]+`,`, 1))
			}
			c := call("ipam-delegated", cmd, "ctr", conf)
			c.Path, c.Env = dir, env
			out = append(out, string(testbin.MustSucceed(t, c).Stdout))
		}
		log, _ := os.ReadFile(logFile)
		return strings.Join(out, "\n--\n"), stateFiles(t, filepath.Join(dataDir, "_pools", "p")), string(log)
	}
	inOut, inState, inLog := run(false)
	exOut, exState, exLog := run(true)
	if inOut != exOut {
		t.Errorf("outputs differ:\nin-process:\n%s\nexec:\n%s", inOut, exOut)
	}
	if inState != exState {
		t.Errorf("state differs:\nin-process:\n%s\nexec:\n%s", inState, exState)
	}
	if !strings.Contains(inOut, "10.91.0.2/24") || !strings.Contains(inOut, "fd91::2/120") {
		t.Errorf("unexpected result %s", inOut)
	}
	if n := strings.Count(inLog, "delegate runs in-process"); n != 6 {
		t.Errorf("in-process log shows %d in-process runs, want 6 (2 delegates x 3 commands)", n)
	}
	if strings.Contains(exLog, "delegate runs in-process") {
		t.Errorf("CNIPLUGINS_EXEC_DELEGATES=1 still ran a delegate in-process")
	}
}
