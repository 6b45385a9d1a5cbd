package plugin

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/logging"
)

// Every line of the JSON file log is one object with each key once: log
// shippers keep one value of a repeated key (a failed operation's line
// once carried "msg" twice: the encoder's message and the CNI error's).
func TestRunFileLogKeysOnce(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "test.log")
	env := []string{logging.EnvFile + "=" + logFile, logging.EnvLevel + "=debug", "CNI_CONTAINERID=abc", "CNI_NETNS=/x", "CNI_IFNAME=eth0", "CNI_PATH=/p"}
	var calls []string
	for _, tt := range []struct{ command, stdin string }{
		{"ADD", `{"cniVersion":"1.0.0","name":"net","ipam":{}}`},
		{"CHECK", `{"cniVersion":"0.3.1","name":"net","ipam":{}}`}, // refused: code 1
		{"FROB", `{"cniVersion":"1.0.0","name":"net","ipam":{}}`},  // refused: code 4
	} {
		Run(testPersonality(&calls), IO{Environ: append([]string{"CNI_COMMAND=" + tt.command}, env...), Stdin: strings.NewReader(tt.stdin), Stdout: io.Discard, Stderr: io.Discard})
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	failed := 0
	for _, line := range lines {
		if err := keysOnce(json.NewDecoder(strings.NewReader(line))); err != nil {
			t.Errorf("%v in %s", err, line)
		}
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "failed" {
			failed++
			if m["error"] == nil || m["code"] == nil || m["details"] == nil {
				t.Errorf("failure line without error, code and details: %s", line)
			}
		}
	}
	if failed != 2 {
		t.Errorf("%d failure lines, want 2 (CHECK on 0.3.1, FROB):\n%s", failed, b)
	}
}

// keysOnce reads one JSON value from dec and fails on an object, at any
// depth, that holds a key twice.
func keysOnce(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := k.(string)
			if seen[key] {
				return errors.New("key " + key + " twice")
			}
			seen[key] = true
			if err := keysOnce(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	case json.Delim('['):
		for dec.More() {
			if err := keysOnce(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	}
	return nil
}
