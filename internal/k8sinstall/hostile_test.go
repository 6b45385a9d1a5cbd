package k8sinstall

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/install"
)

// plugin writes an executable stand-in plugin into dir.
func plugin(t *testing.T, dir, name, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

const upTo100 = `printf '%s' '{"cniVersion":"1.0.0","supportedVersions":["0.3.1","0.4.0","1.0.0"]}'`

// Each of the runtime's checks names the file, the JSON path, the value
// and why; a plugin is asked once per pass; ours are never asked.
func TestRuntimeCheck(t *testing.T) {
	bin := t.TempDir()
	plugin(t, bin, "bridge", upTo100)
	plugin(t, bin, "slow", "exec sleep 30")
	plugin(t, bin, "broken", "echo no >&2; exit 3")
	if err := os.Symlink("/nonexistent/usr/lib/cni/macvlan", filepath.Join(bin, "macvlan")); err != nil {
		t.Fatal(err)
	}
	r := Runtime{BinDir: bin, Ours: []string{"ipam-delegated", "ipam-ds-args"}, VersionTimeout: 300 * time.Millisecond}
	for _, tc := range []struct{ conf, want string }{
		{`{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"bridge","ipam":{"type":"ipam-delegated","delegates":["ipam-ds-args"]}}]}`, ""},
		{`{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"bridgee"}]}`, "f.conflist: plugins[0].type = bridgee: no plugin bridgee in the bin dir"},
		{`{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"../../../tmp/x"}]}`, "plugins[0].type = ../../../tmp/x: a plugin type is a file name"},
		{`{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"bridge","ipam":{"delegates":["ipam-ds-args"]}}]}`, "plugins[0].ipam.type: an ipam object needs a type"},
		{`{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"bridge","ipam":{"type":"ipam-delegated","delegates":["ipam-ds-args"],"rules":[{"quota":{"max":0}}]}}]}`, "plugins[0].ipam.rules[0].quota.max = 0"},
		{`{"cniVersion":"1.0.0","cniVersions":["1.0.0","1.1.0"],"name":"n","plugins":[{"type":"bridge"}]}`, "the plugin does not support version 1.1.0 (cniVersions[1]); it supports 0.3.1, 0.4.0, 1.0.0"},
		{`{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"slow"}]}`, "did not answer VERSION within 300ms"},
		{`{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"broken"}]}`, "VERSION failed (exit status 3): no"},
		{`{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"macvlan"}]}`, ""},
	} {
		start := time.Now()
		problems, notes, err := r.check(context.Background(), sourceFile{name: "f.conflist", data: []byte(tc.conf)}, map[string]pluginVersions{})
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(problems, "\n")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: problems %q, want %q", tc.conf, got, tc.want)
		}
		if strings.Contains(tc.conf, "macvlan") && (len(notes) != 1 || !strings.Contains(notes[0], "checked for its presence only")) {
			t.Errorf("an absolute link: notes %q", notes)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: took %s", tc.conf, d)
		}
	}
}

// The context's end (SIGTERM) stops a pass waiting on a plugin's VERSION.
func TestRuntimeCheckStopsOnCancel(t *testing.T) {
	bin := t.TempDir()
	plugin(t, bin, "slow", "exec sleep 30")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := Runtime{BinDir: bin, VersionTimeout: time.Minute}.check(ctx, sourceFile{name: "f.conflist", data: []byte(`{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"slow"}]}`)}, map[string]pluginVersions{})
	if err == nil || time.Since(start) > 10*time.Second {
		t.Errorf("err %v after %s, want the context's error at once", err, time.Since(start))
	}
}

// Only the kubelet's layout is followed, hidden keys are skipped, and a
// FIFO is refused without blocking.
func TestReadSourceRules(t *testing.T) {
	cm := newConfigMap(t, map[string]string{"10-a.conflist": goodConf, ".00-hidden.conflist": goodConf, "30-fifo.conflist": "x"})
	gen, err := os.Readlink(filepath.Join(cm.Dir, "..data"))
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(cm.Dir, gen, "30-fifo.conflist")
	if err := os.Remove(fifo); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(goodConf), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(cm.Dir, "20-link.conflist")); err != nil {
		t.Fatal(err)
	}
	files, skipped, err := readSource(cm.Dir)
	if len(files) != 1 || files[0].name != "10-a.conflist" || string(files[0].data) != goodConf {
		t.Errorf("read %v", files)
	}
	if len(skipped) != 1 || skipped[0] != ".00-hidden.conflist" {
		t.Errorf("skipped %v", skipped)
	}
	for _, want := range []string{`20-link.conflist: a symbolic link to "` + secret + `"`, "30-fifo.conflist", "not a regular file (a FIFO)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

// A file of net.d that the installer did not write is refused, and the
// refusal writes nothing, not even the ConfigMap's other files; a file
// equal to the ConfigMap's (an install from before the record) is adopted.
func TestConfsOwnership(t *testing.T) {
	netDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(netDir, "10-calico.conflist"), []byte("calico's"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(netDir, "20-tenants.conflist"), []byte(goodConf), 0o644); err != nil {
		t.Fatal(err)
	}
	other := strings.Replace(goodConf, "tenants", "other", 1)
	cm := newConfigMap(t, map[string]string{"10-calico.conflist": goodConf, "30-new.conflist": other})
	c := Confs{Source: cm.Dir, NetDir: netDir, Validate: validJSON}
	written, err := install1(c)
	if err == nil || !strings.Contains(err.Error(), "10-calico.conflist not installed: refusing to replace") || len(written) != 0 {
		t.Errorf("wrote %v, error %v; want calico's file refused", written, err)
	}
	if readFile(t, filepath.Join(netDir, "10-calico.conflist")) != "calico's" {
		t.Error("calico's conflist was replaced")
	}
	if _, err := os.Lstat(filepath.Join(netDir, "30-new.conflist")); err == nil {
		t.Error("a refused ConfigMap's other file was installed")
	}

	// Adopted: recorded, and so replaced by the next update.
	cm2 := newConfigMap(t, map[string]string{"20-tenants.conflist": goodConf})
	c.Source = cm2.Dir
	if written, err := install1(c); err != nil || len(written) != 0 {
		t.Fatalf("adopting: wrote %v (%v)", written, err)
	}
	rec, err := install.ReadRecord(netDir)
	if err != nil || !rec.Holds("20-tenants.conflist", install.Sum([]byte(goodConf))) {
		t.Errorf("record %v (%v) does not hold the adopted file", rec, err)
	}
	update(t, cm2, map[string]string{"20-tenants.conflist": other})
	if written, err := install1(c); err != nil || len(written) != 1 || readFile(t, filepath.Join(netDir, "20-tenants.conflist")) != other {
		t.Errorf("updating the adopted file: wrote %v (%v)", written, err)
	}
	// Changed behind the installer's back: no longer provably its own.
	if err := os.WriteFile(filepath.Join(netDir, "20-tenants.conflist"), []byte("edited"), 0o644); err != nil {
		t.Fatal(err)
	}
	update(t, cm2, map[string]string{"20-tenants.conflist": goodConf})
	if _, err := install1(c); err == nil || !strings.Contains(err.Error(), "not installed by cniplugins") {
		t.Errorf("a file edited by someone else: %v, want a refusal", err)
	}
}
