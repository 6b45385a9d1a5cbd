package install

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// While the file is replaced again and again, a reader opening it by
// name always finds it, and always reads one whole version: never
// missing, never partial, never a mix. No temporary file stays behind.
func TestReplaceFileIsAtomicForReaders(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "cniplugins")
	versions := [][]byte{bytes.Repeat([]byte{'a'}, 1<<20), bytes.Repeat([]byte{'b'}, 3<<19)}
	write := func(v []byte) func(io.Writer) error {
		return func(w io.Writer) error {
			// In two halves, so a reader of the open file would see half.
			if _, err := w.Write(v[:len(v)/2]); err != nil {
				return err
			}
			_, err := w.Write(v[len(v)/2:])
			return err
		}
	}
	if err := ReplaceFile(dst, 0o755, write(versions[0])); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var reads, bad atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				b, err := os.ReadFile(dst)
				reads.Add(1)
				if err != nil || !(bytes.Equal(b, versions[0]) || bytes.Equal(b, versions[1])) {
					bad.Add(1)
				}
			}
		}()
	}
	for i := range 200 {
		if err := ReplaceFile(dst, 0o755, write(versions[i%2])); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if bad.Load() != 0 {
		t.Errorf("%d of %d reads found the file missing or not one whole version", bad.Load(), reads.Load())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left in the directory: %v", entries)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %v (%v), want 0755", fi.Mode(), err)
	}
}
