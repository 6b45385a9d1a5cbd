package hostlocal

import (
	"encoding/hex"
	"errors"
	"os"
	"strings"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Spill records (docs/tenancy.md, "How ipam-da-pools follows a chain"):
// D's _spill/<key> (its entryKey in hex, holding its network) says that
// an attachment may hold an address further down D's chain. Written
// before that address is taken and removed after a DEL released
// everything, a record a crash leaves only costs its attachment's next
// ADD a look into every pool, until GC removes it.
const spillDirName = "_spill"

var _ alloc.SpillRecorder = (*Disk)(nil)

// maxSpillName: a record's name is one file name.
const maxSpillName = 255

func (d stateDir) spillDir() string { return child(d.dir, spillDirName) }

// spillName is a's record's file name, or false when a can have none.
func spillName(a alloc.Attachment) (string, bool) {
	key, ok := entryKey(a)
	if !ok || 2*len(key) > maxSpillName {
		return "", false
	}
	return hex.EncodeToString([]byte(key)), true
}

// MaySpill implements alloc.SpillRecorder: one lstat(2).
func (d *Disk) MaySpill(a alloc.Attachment) (bool, error) {
	name, ok := spillName(a)
	if !ok {
		return true, nil
	}
	path := child(d.spillDir(), name)
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return true, cnierr.IO("stat", path, err)
	}
	return err == nil, nil
}

// RecordSpill implements alloc.SpillRecorder.
func (d *Disk) RecordSpill(a alloc.Attachment) error {
	name, ok := spillName(a)
	if !ok {
		return nil // MaySpill is always true for a
	}
	if err := d.makeSubdir(d.spillDir()); err != nil {
		return err
	}
	return overwrite(child(d.spillDir(), name), a.Network, modePrivate)
}

// ForgetSpill implements alloc.SpillRecorder.
func (d *Disk) ForgetSpill(a alloc.Attachment) error {
	name, ok := spillName(a)
	if !ok {
		return nil
	}
	if ok, err := d.subdir(d.spillDir()); err != nil || !ok {
		return err
	}
	return removeIfAny(child(d.spillDir(), name))
}

// Spills implements alloc.SpillRecorder, under D's lock. A file there
// that is no record (a name no attachment has, or not a regular file)
// is removed as it is met: storage hygiene, which no rule decides.
func (d *Disk) Spills() ([]alloc.Attachment, error) {
	des, err := readDirIfAny(d.spillDir(), d.uid)
	if err != nil {
		return nil, err
	}
	var recs []alloc.Attachment
	for _, de := range des {
		path := child(d.spillDir(), de.Name())
		a, ok := spillOwner(de.Name())
		if !ok || !de.Type().IsRegular() {
			if err := os.RemoveAll(path); err != nil {
				return nil, cnierr.IO("remove", path, err)
			}
			continue
		}
		network, err := readFile(path)
		if err != nil {
			return nil, err
		}
		a.Network = string(network)
		recs = append(recs, a)
	}
	return recs, nil
}

// spillOwner is the attachment (without its network) a record's file
// name is for.
func spillOwner(name string) (alloc.Attachment, bool) {
	raw, err := hex.DecodeString(name)
	id, ifname, ok := strings.Cut(string(raw), "@")
	a := alloc.Attachment{ContainerID: id, IfName: ifname}
	if n, ok2 := spillName(a); err != nil || !ok || !ok2 || n != name {
		return alloc.Attachment{}, false
	}
	return a, true
}
