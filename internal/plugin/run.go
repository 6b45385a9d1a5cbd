package plugin

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	cniversion "github.com/containernetworking/cni/pkg/version"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/version"
)

// MaxConfigSize bounds stdin. IPAM configs are a few KiB; reading a
// runaway stream whole would only delay the error.
const MaxConfigSize = 4 << 20

// Run executes one invocation of p over pio and returns the exit code. It
// never panics: a panic inside the personality is reported as that
// personality's CNI error, which is what lets a delegate run in-process.
func Run(p Personality, pio IO) (exit int) {
	log, closeLog := logging.New(logging.Options{
		Personality: p.Name, Verbose: version.Verbose(), Getenv: pio.Getenv, Stderr: pio.Stderr,
	})
	defer closeLog()
	cniVersion := ""
	defer func() {
		if r := recover(); r != nil {
			log.Error("panic", logging.Any("panic", r), logging.ByteString("stack", debug.Stack()))
			writeError(pio.Stdout, cniVersion, cnierr.New(cnierr.CodeInternal, p.Name+" panicked", "%v", r))
			exit = 1
		}
	}()
	log.Debug("start", logging.String("version", version.Version), logging.String("command", pio.Getenv("CNI_COMMAND")),
		logging.String("containerID", pio.Getenv("CNI_CONTAINERID")), logging.String("ifname", pio.Getenv("CNI_IFNAME")))

	res, ver, err := dispatch(p, pio, log)
	cniVersion = ver
	if err != nil {
		e := cnierr.As(err)
		log.Warn("failed", logging.String("command", pio.Getenv("CNI_COMMAND")), logging.Uint("code", e.Code), logging.String("error", e.Msg), logging.String("details", e.Details))
		writeError(pio.Stdout, cniVersion, e)
		return 1
	}
	if res != nil {
		if err := res.PrintTo(pio.Stdout); err != nil {
			log.Error("cannot write result", logging.Error(err))
			return 1
		}
		if pio.Printed != nil {
			*pio.Printed = res
		}
	}
	return 0
}

// dispatch returns the result already converted to the config's version.
func dispatch(p Personality, pio IO, log *logging.Logger) (types.Result, string, error) {
	cmd := pio.Getenv("CNI_COMMAND")
	switch cmd {
	case "":
		fmt.Fprintf(pio.Stderr, "cniplugins %s %s\nCNI protocol versions supported: %s\n", p.Name, version.Version, strings.Join(version.SpecVersions(), ", "))
		return nil, "", cnierr.New(cnierr.CodeInvalidEnv, "required environment variables missing", "CNI_COMMAND")
	case CmdVersion:
		return versionResult{}, "", nil
	}
	fn := p.Funcs.lookup(cmd)
	if fn == nil {
		return nil, "", cnierr.InvalidEnv("CNI_COMMAND", cmd, "want ADD, DEL, CHECK, GC, STATUS or VERSION")
	}
	args, err := readEnv(cmd, pio.Getenv)
	if err != nil {
		return nil, "", err
	}
	conf := pio.Conf // a delegate run in-process: stdin is not read
	if conf == nil {
		stdin, err := io.ReadAll(io.LimitReader(pio.Stdin, MaxConfigSize+1))
		if err != nil {
			return nil, "", cnierr.IO("read", "stdin", err)
		}
		if len(stdin) > MaxConfigSize {
			return nil, "", cnierr.New(cnierr.CodeInvalidConfig, "network configuration larger than 4 MiB", "stdin")
		}
		if conf, err = netconf.Parse(stdin); err != nil {
			return nil, "", err
		}
	}
	args.StdinData = conf.Raw
	// The first spec version that defines the command.
	if min := map[string]string{CmdCheck: "0.4.0", CmdGC: "1.1.0", CmdStatus: "1.1.0"}[cmd]; min != "" {
		if ok, _ := cniversion.GreaterThanOrEqualTo(conf.CNIVersion, min); !ok {
			return nil, conf.CNIVersion, cnierr.New(cnierr.CodeIncompatibleVersion, "config version does not allow "+cmd, "cniVersion=%s; %s needs %s or later", conf.CNIVersion, cmd, min)
		}
	}
	var cniArgs []netconf.CNIArg
	if p.ArgKeys != nil { // ipam-delegated passes CNI_ARGS on unread
		known, err := p.ArgKeys(conf)
		if err == nil {
			cniArgs, err = netconf.ParseCNIArgs(args.Args, known)
		}
		if err != nil {
			return nil, conf.CNIVersion, err
		}
	}
	now := time.Now
	if pio.Now != nil {
		now = pio.Now
	}
	res, err := fn(&Request{
		Command: cmd, Args: args, CNIArgs: cniArgs, Conf: conf,
		Environ: pio.Environ, Getenv: pio.Getenv, Stderr: pio.Stderr, Log: log, Now: now(),
	})
	if err != nil || res == nil {
		return nil, conf.CNIVersion, err
	}
	converted, err := res.GetAsVersion(conf.CNIVersion)
	if err != nil {
		return nil, conf.CNIVersion, cnierr.New(cnierr.CodeIncompatibleVersion, "cannot convert result to the config's cniVersion", "cniVersion=%s: %v", conf.CNIVersion, err)
	}
	return converted, conf.CNIVersion, nil
}

func (f Funcs) lookup(cmd string) Func {
	return map[string]Func{CmdAdd: f.Add, CmdDel: f.Del, CmdCheck: f.Check, CmdGC: f.GC, CmdStatus: f.Status}[cmd]
}

func writeError(w io.Writer, cniVersion string, e *types.Error) {
	_, _ = w.Write(netconf.ErrorJSON(cniVersion, e))
}
