package criclient

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// frame is gRPC's length-prefixed message: a compression flag (0: none)
// and the length, big-endian, before the protobuf bytes.
func frame(msg []byte) []byte {
	out := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(out[1:], uint32(len(msg)))
	return append(out, msg...)
}

// unframe returns the one message of a unary answer.
func unframe(b []byte) ([]byte, error) {
	if len(b) < 5 {
		return nil, fmt.Errorf("gRPC answer of %d bytes, shorter than a frame header", len(b))
	}
	if b[0] != 0 {
		return nil, errors.New("gRPC answer is compressed; none was asked for")
	}
	n := binary.BigEndian.Uint32(b[1:5])
	if uint64(len(b)-5) != uint64(n) {
		return nil, fmt.Errorf("gRPC frame says %d bytes, %d follow", n, len(b)-5)
	}
	return b[5:], nil
}

// sandbox is what gc needs of a CRI PodSandbox.
type sandbox struct {
	id    string
	ready bool
}

// Field numbers of the CRI runtime/v1 messages read here.
const (
	fieldListItems    = 1 // ListPodSandboxResponse.items
	fieldSandboxID    = 1 // PodSandbox.id
	fieldSandboxState = 3 // PodSandbox.state; SANDBOX_READY is 0, so absent means ready
	stateSandboxReady = 0
	wireVarint        = 0
	wireFixed64       = 1
	wireBytes         = 2
	wireFixed32       = 5
)

// decodeListPodSandbox reads a ListPodSandboxResponse.
func decodeListPodSandbox(b []byte) ([]sandbox, error) {
	var out []sandbox
	err := fields(b, func(num int, wire int, v uint64, data []byte) error {
		if num != fieldListItems || wire != wireBytes {
			return nil
		}
		s := sandbox{ready: true}
		err := fields(data, func(num int, wire int, v uint64, data []byte) error {
			switch {
			case num == fieldSandboxID && wire == wireBytes:
				s.id = string(data)
			case num == fieldSandboxState && wire == wireVarint:
				s.ready = v == stateSandboxReady
			}
			return nil
		})
		if err != nil {
			return err
		}
		if s.id == "" {
			return errors.New("a sandbox without an ID")
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// fields walks the fields of one protobuf message, calling f with each
// field's number, wire type and value (v for varints and fixed, data for
// length-delimited); unknown fields are skipped as protobuf requires.
func fields(b []byte, f func(num, wire int, v uint64, data []byte) error) error {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return errors.New("truncated field key")
		}
		b = b[n:]
		num, wire := int(key>>3), int(key&7)
		var v uint64
		var data []byte
		switch wire {
		case wireVarint:
			if v, n = binary.Uvarint(b); n <= 0 {
				return errors.New("truncated varint")
			}
			b = b[n:]
		case wireFixed64:
			if len(b) < 8 {
				return errors.New("truncated fixed64")
			}
			v, b = binary.LittleEndian.Uint64(b), b[8:]
		case wireFixed32:
			if len(b) < 4 {
				return errors.New("truncated fixed32")
			}
			v, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
		case wireBytes:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return errors.New("truncated length-delimited field")
			}
			data, b = b[n:n+int(l)], b[n+int(l):]
		default:
			return fmt.Errorf("unsupported wire type %d", wire)
		}
		if err := f(num, wire, v, data); err != nil {
			return err
		}
	}
	return nil
}
