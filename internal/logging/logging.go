// Package logging builds the per-invocation zap logger.
//
// stdout belongs to the CNI result, so nothing here ever writes to it:
// warnings and errors always go to stderr (the runtime shows them to the
// operator); debug and info go to a log file only when asked for, by the
// verbose flavour or by the environment, so the standard build pays no file
// I/O on the hot path.
package logging

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"go.uber.org/zap/zapcore"
)

const (
	// EnvLevel raises (or lowers) the file log level: debug, info, warn, error.
	// Setting it enables the file log in the standard flavour too.
	EnvLevel = "CNIPLUGINS_LOG_LEVEL"
	// EnvFile chooses the log file instead of /var/log/cni/<personality>.log.
	// Setting it enables the file log in the standard flavour too.
	EnvFile = "CNIPLUGINS_LOG_FILE"
	// DefaultDir is where the verbose flavour logs, one file per personality.
	DefaultDir = "/var/log/cni"
)

// Options says where and how much one invocation logs.
type Options struct {
	Personality string
	Verbose     bool // the verbose flavour: file log at debug by default
	Getenv      func(string) string
	Stderr      io.Writer
}

// New returns the logger and a func that flushes and closes it. A log file
// that cannot be opened never fails the CNI operation: it is reported on
// stderr and the logger carries on with stderr alone.
func New(o Options) (*Logger, func()) {
	stderrCore := zapcore.NewCore(
		zapcore.NewConsoleEncoder(consoleEncoding()),
		zapcore.AddSync(o.Stderr),
		zapcore.WarnLevel,
	)
	level, path, wantFile, err := fileSettings(o)
	if err != nil {
		fmt.Fprintf(o.Stderr, "cniplugins %s: %v; using the default level\n", o.Personality, err)
	}
	if !wantFile {
		return &Logger{core: stderrCore, name: o.Personality}, func() {}
	}
	f, err := openLogFile(path)
	if err != nil {
		fmt.Fprintf(o.Stderr, "cniplugins %s: cannot open log file: %v; logging to stderr only\n", o.Personality, err)
		return &Logger{core: stderrCore, name: o.Personality}, func() {}
	}
	fileCore := zapcore.NewCore(
		// One JSON object per line.
		zapcore.NewJSONEncoder(encoding("ts", "level", "logger", "msg", zapcore.LowercaseLevelEncoder)),
		zapcore.AddSync(f),
		level,
	)
	logger := &Logger{core: zapcore.NewTee(stderrCore, fileCore).With([]Field{Int("pid", os.Getpid())}), name: o.Personality}
	return logger, func() { _ = logger.Sync(); _ = f.Close() }
}

// fileSettings decides whether to log to a file, where, and at what level.
func fileSettings(o Options) (zapcore.Level, string, bool, error) {
	level := zapcore.DebugLevel
	want := o.Verbose
	var err error
	if s := o.Getenv(EnvLevel); s != "" {
		if perr := level.UnmarshalText([]byte(s)); perr != nil {
			level, err = zapcore.DebugLevel, fmt.Errorf("invalid %s=%q (want debug, info, warn or error)", EnvLevel, s)
		} else {
			want = true
		}
	}
	path := o.Getenv(EnvFile)
	if path != "" {
		want = true
	} else {
		path = filepath.Join(DefaultDir, o.Personality+".log")
	}
	return level, path, want, err
}

func openLogFile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
}

// consoleEncoding is the human-readable stderr format.
func consoleEncoding() zapcore.EncoderConfig {
	return encoding("T", "L", "N", "M", zapcore.CapitalLevelEncoder)
}

func encoding(timeKey, levelKey, nameKey, msgKey string, level zapcore.LevelEncoder) zapcore.EncoderConfig {
	return zapcore.EncoderConfig{
		TimeKey: timeKey, LevelKey: levelKey, NameKey: nameKey, MessageKey: msgKey,
		LineEnding:     zapcore.DefaultLineEnding,
		EncodeLevel:    level,
		EncodeTime:     zapcore.ISO8601TimeEncoder,
		EncodeDuration: zapcore.StringDurationEncoder,
		EncodeName:     zapcore.FullNameEncoder,
	}
}
