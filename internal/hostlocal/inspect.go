package hostlocal

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// This file is the read side the operators' CLI uses. Readers take no
// lock: a reservation file appears complete (link) and disappears whole
// (rename), so each file read is either the full reservation or nothing,
// and plugins never queue behind a listing of 60,000 files.

// Reservation is one reservation file of a state directory.
type Reservation struct {
	Addr  netip.Addr
	Owner alloc.Attachment
	// Since is the file's mtime: when the address was reserved (the file
	// is never rewritten in place).
	Since time.Time
	// Problem says why the content is not a reservation a plugin could
	// have written ("" when it is well formed).
	Problem string
}

// ReservedAddrs lists the addresses reserved in dir from the file names
// alone (no file is opened), sorted. A missing dir holds nothing.
func ReservedAddrs(dir string) ([]netip.Addr, error) {
	ents, err := readEntries(dir, os.Geteuid())
	out := make([]netip.Addr, len(ents.reservations))
	for i, n := range ents.reservations {
		out[i] = n.ip
	}
	return out, err
}

// ReadReservations reads every reservation of dir with its mtime, without
// the lock, sorted by address. Files are read by a few goroutines: the
// cost is one open, fstat and read per file, and at 60,000 files the
// system calls, not the CPU, dominate.
func ReadReservations(dir string) ([]Reservation, error) {
	ents, err := readEntries(dir, os.Geteuid())
	if err != nil {
		return nil, err
	}
	return readReservations(dir, ents.reservations)
}

// readReservations reads the reservations names of dir.
func readReservations(dir string, names []namedAddr) ([]Reservation, error) {
	// Files are opened relative to the directory: the kernel then looks
	// up one name per file instead of walking the whole path again.
	dirfd, err := openatRetry(atFDCWD, dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, cnierr.IO("open", dir, err)
	}
	defer syscall.Close(dirfd)
	out := make([]Reservation, len(names))
	errs := make([]error, len(names))
	workers := min(2*runtime.GOMAXPROCS(0), 8, max(1, len(names)/64))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(names); i += workers {
				out[i], errs[i] = readReservation(dirfd, dir, names[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// Files released while we read are simply gone.
	return slices.DeleteFunc(out, func(r Reservation) bool { return !r.Addr.IsValid() }), nil
}

// readReservation reads the reservation n of dir, opened relative to
// dirfd; a file that is gone is the zero Reservation.
func readReservation(dirfd int, dir string, n namedAddr) (Reservation, error) {
	data, st, err := readAt(dirfd, n.name)
	r := Reservation{Addr: n.ip}
	switch {
	case errors.Is(err, os.ErrNotExist):
		return Reservation{}, nil
	case errors.Is(err, syscall.ELOOP):
		r.Problem = "is a symbolic link, not a file"
		return r, nil
	case err == errNotRegular:
		r.Problem = "is not a regular file"
	case err != nil:
		return Reservation{}, cnierr.IO("read", filepath.Join(dir, n.name), err)
	default:
		r.Owner = parseReservation(data)
		r.Problem = r.Owner.Problem()
	}
	r.Since = time.Unix(st.Mtim.Unix())
	return r, nil
}
