package netconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Decode unmarshals raw into v and turns encoding/json's errors into CNI
// errors that name the offending field: syntax errors are code 6 (the input
// is not JSON), type errors are code 7 (the config says the wrong thing).
// prefix is the path of raw inside the network config ("" for the root).
func Decode(raw []byte, prefix string, v any) error {
	err := json.Unmarshal(raw, v)
	if err == nil {
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := join(prefix, typeErr.Field)
		return cnierr.Wrap(cnierr.InvalidConfig(field, "a JSON "+typeErr.Value, "expected "+jsonKind(typeErr.Type.Kind().String())), err)
	case errors.As(err, &syntaxErr):
		where := prefix
		if where == "" {
			where = "stdin"
		}
		return cnierr.Wrap(cnierr.New(cnierr.CodeDecoding, "network configuration is not valid JSON", "%s: %v at offset %d", where, syntaxErr, syntaxErr.Offset), err)
	default:
		// A field's own UnmarshalJSON in this project already returns a
		// typed error; anything else is a bad value of the section.
		var typed *types.Error
		if errors.As(err, &typed) {
			return err
		}
		return cnierr.Wrap(cnierr.InvalidConfig(orRoot(prefix), "the given value", err.Error()), err)
	}
}

func join(prefix, field string) string {
	switch {
	case prefix == "":
		return orRoot(field)
	case field == "":
		return prefix
	default:
		return prefix + "." + field
	}
}

func orRoot(field string) string {
	if field == "" {
		return "config"
	}
	return field
}

func jsonKind(goKind string) string {
	switch goKind {
	case "slice", "array":
		return "array"
	case "map", "struct", "ptr":
		return "object"
	case "string":
		return "string"
	case "bool":
		return "boolean"
	default:
		return "number"
	}
}

// clip shortens a hostile value before it is echoed into an error.
func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return fmt.Sprintf("%s... (%d bytes)", bytes.ToValidUTF8(b[:n], nil), len(b))
}
