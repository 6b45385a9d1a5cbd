package delegated

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// Chain runs one command over the delegates, as docs/ipam-delegated.md
// describes. It knows nothing about how a delegate is run (Executor) nor
// about any personality: it only sequences and threads prevResult.
type Chain struct {
	Conf      *netconf.Envelope
	Delegates []Delegate
	Exec      Executor
	Log       *logging.Logger
}

// prevResult is what a delegate receives as prevResult. nil means "the
// runtime's input as is": the config is passed on byte for byte.
type prevResult json.RawMessage

// run runs cmd on delegate i with prev; built is prev as the in-process
// delegate that printed it built it (nil: unknown). It returns what the
// delegate printed, and the result it built it from when it ran
// in-process.
func (c *Chain) run(ctx context.Context, i int, cmd string, prev prevResult, built types.Result) ([]byte, types.Result, error) {
	conf, err := c.Conf.ForDelegate(json.RawMessage(prev))
	if err != nil {
		return nil, nil, err
	}
	if prev != nil {
		conf.PrevBuilt = built
	}
	c.Log.Debug("delegate", logging.String("delegate", c.Delegates[i].Name), logging.String("command", cmd))
	return c.Exec.Run(ctx, c.Delegates[i], cmd, conf)
}

// Add runs ADD on each delegate in order, delegate n+1 receiving delegate
// n's result as prevResult, and returns the last result verbatim. When
// delegate k fails, DEL runs once on delegates 1..k (see rollback) and
// delegate k's error is returned.
func (c *Chain) Add(ctx context.Context) (types.Result, error) {
	var prev prevResult
	var built types.Result
	var last *plugin.RawResult
	for k := range c.Delegates {
		out, res, err := c.run(ctx, k, plugin.CmdAdd, prev, built)
		if err == nil {
			last, err = c.validResult(out, res)
		}
		if err != nil {
			c.rollback(ctx, rolledBack(k, err), prev)
			return nil, c.named(k, err)
		}
		prev, built = prevResult(out), res
	}
	return last, nil
}

// rolledBack is the last delegate the rollback of delegate k's failed
// ADD runs DEL on: k itself, unless it answered 102. A 102 says that the
// attachment already holds what the ADD asked for, as a live attachment
// (a retried ADD): the delegate's DEL would release that address from
// under it (containerd's or CRI-O's teardown of that attachment, when
// it is really gone, frees it). The earlier delegates succeeded in this
// ADD and are rolled back as after any failure.
func rolledBack(k int, err error) int {
	if cnierr.Code(err) == cnierr.CodeDuplicateAttach {
		return k - 1
	}
	return k
}

// rollback runs DEL on delegates 0..k in order (none for k < 0), delegate
// 0 getting the prevResult delegate k received. DEL failures are logged
// and ignored: the ADD error is what the runtime needs.
func (c *Chain) rollback(ctx context.Context, k int, prev prevResult) {
	for _, err := range c.each(ctx, plugin.CmdDel, k+1, prev) {
		c.Log.Warn("rollback DEL failed", logging.Error(err))
	}
}

// Each runs cmd (DEL, CHECK, GC, STATUS) on every delegate and returns
// the errors joined.
func (c *Chain) Each(ctx context.Context, cmd string) error {
	return join(c.each(ctx, cmd, len(c.Delegates), nil))
}

// each runs cmd on delegates 0..n-1, even after an error, and returns
// their errors. What a delegate prints becomes the next one's prevResult,
// as in ADD: that is how a selector tells the allocator which pools a
// DEL, GC or STATUS concerns. A delegate that prints nothing (the spec's
// DEL) leaves prevResult as it was.
func (c *Chain) each(ctx context.Context, cmd string, n int, prev prevResult) []error {
	var errs []error
	for i := range n {
		out, _, err := c.run(ctx, i, cmd, prev, nil)
		if err != nil {
			errs = append(errs, c.named(i, err))
			continue
		}
		if next := printed(out); next != nil {
			prev = next
		}
	}
	return errs
}

// validResult accepts what a delegate's ADD printed only if it is a CNI
// result, decoding it to check unless the delegate ran in-process and
// handed over the result it built (built): this binary's result types
// only print what they can read back.
func (c *Chain) validResult(out []byte, built types.Result) (*plugin.RawResult, error) {
	if built != nil && len(bytes.TrimSpace(out)) > 0 {
		if raw, err := plugin.NewRawResult(out); err == nil {
			return raw, nil
		}
	}
	if printed(out) == nil {
		return nil, cnierr.New(cnierr.CodeDecoding, "delegate printed no result", "ADD succeeded with empty output")
	}
	raw, err := plugin.NewRawResult(out)
	if err == nil {
		if !versionKnown(out) {
			// A delegate that omits cniVersion answers in the config's.
			raw.CNIVersion = c.Conf.CNIVersion
		}
		_, err = raw.Decode()
	}
	if err != nil {
		return nil, cnierr.Wrap(cnierr.New(cnierr.CodeDecoding, "delegate printed no valid result", "%v", err), err)
	}
	return raw, nil
}

// named prefixes a delegate's error with its name and keeps its code.
func (c *Chain) named(i int, err error) error {
	e := cnierr.As(err)
	return cnierr.Wrap(types.NewError(e.Code, c.Delegates[i].Name+": "+e.Msg, e.Details), err)
}

// join folds several delegate errors into one CNI error with the first
// one's code, every message kept.
func join(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	msgs := make([]string, len(errs))
	details := make([]string, 0, len(errs))
	for i, err := range errs {
		e := cnierr.As(err)
		msgs[i] = e.Msg
		if e.Details != "" {
			details = append(details, e.Details)
		}
	}
	first := cnierr.As(errs[0])
	return cnierr.Wrap(types.NewError(first.Code, strings.Join(msgs, "; "), strings.Join(details, "; ")), errors.Join(errs...))
}

// printed returns out as a prevResult, or nil when nothing usable was
// printed (upstream host-local prints nothing on DEL).
func printed(out []byte) prevResult {
	t := bytes.TrimSpace(out)
	if len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		return nil
	}
	return prevResult(t)
}

func versionKnown(out []byte) bool {
	var v struct {
		CNIVersion string `json:"cniVersion"`
	}
	return json.Unmarshal(out, &v) == nil && v.CNIVersion != ""
}
