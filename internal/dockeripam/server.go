package dockeripam

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/cniplugins/cniplugins/internal/logging"
)

// shutdownGrace bounds how long in-flight requests may take to finish
// after SIGTERM.
const shutdownGrace = 10 * time.Second

// Listen creates the driver's unix socket at path, mode 0660 and owned by
// root, replacing a stale socket left by a crash but never a live one
// (another driver answering there) or a file that is not a socket.
//
// The socket is bound under a temporary name and renamed into place once
// its mode is set, so dockerd can never connect to it with looser
// permissions, nor find the path missing while a stale one is replaced.
func Listen(path string) (*net.UnixListener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	if err := checkStale(path); err != nil {
		return nil, err
	}
	tmp := path + ".tmp-" + strconv.Itoa(os.Getpid())
	_ = os.Remove(tmp)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	l.SetUnlinkOnClose(false) // the socket is renamed; Serve removes it by its final name
	err = os.Chmod(tmp, 0o660)
	if err == nil && os.Geteuid() == 0 {
		err = os.Chown(tmp, 0, 0)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		l.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return l, nil
}

func checkStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket; refusing to replace it", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("%s is in use: another driver answers there", path)
	}
	return nil // stale: Listen's rename replaces it
}

// Serve answers on l until ctx is cancelled, then lets in-flight requests
// finish, removes the socket at path and returns nil.
func (d *Driver) Serve(ctx context.Context, l *net.UnixListener, path string) error {
	srv := &http.Server{
		Handler:           d.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	d.log.Info("serving", logging.String("socket", path), logging.String("dataDir", d.cfg.DataDir))
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		err = srv.Shutdown(sctx)
		cancel()
		<-done
	}
	if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
