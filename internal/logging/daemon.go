package logging

import (
	"io"

	"go.uber.org/zap/zapcore"
)

// Daemon is the logger of a long-running command (the full flavour's
// docker-ipam): everything from info up, human-readable, on stderr, which
// a service manager collects. A CNI invocation never uses it: there,
// stderr carries only warnings and errors (see New).
func Daemon(name string, stderr io.Writer) *Logger {
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(consoleEncoding()), zapcore.AddSync(stderr), zapcore.InfoLevel)
	return &Logger{core: core, name: name}
}
