package logging

import (
	"fmt"
	"time"

	"go.uber.org/zap/zapcore"
)

// Logger is a leveled, structured logger over a zapcore.Core.
//
// It stands in for zap.Logger because package zap imports net/http (for
// its level-changing HTTP handler), and with it crypto/tls and x509: in a
// binary that every CNI call execs, that roughly doubled the start-up
// time. zapcore alone gives the encoders, levels and tees we use.
type Logger struct {
	core zapcore.Core
	name string
}

// Field is a structured log field.
type Field = zapcore.Field

// Nop is a logger that discards everything (tests, and a nil-safe default).
func Nop() *Logger { return &Logger{core: zapcore.NewNopCore()} }

func (l *Logger) Debug(msg string, fields ...Field) { l.log(zapcore.DebugLevel, msg, fields) }
func (l *Logger) Info(msg string, fields ...Field)  { l.log(zapcore.InfoLevel, msg, fields) }
func (l *Logger) Warn(msg string, fields ...Field)  { l.log(zapcore.WarnLevel, msg, fields) }
func (l *Logger) Error(msg string, fields ...Field) { l.log(zapcore.ErrorLevel, msg, fields) }

func (l *Logger) log(level zapcore.Level, msg string, fields []Field) {
	if l == nil || !l.core.Enabled(level) {
		return
	}
	entry := zapcore.Entry{Level: level, Time: time.Now(), LoggerName: l.name, Message: msg}
	if ce := l.core.Check(entry, nil); ce != nil {
		ce.Write(fields...)
	}
}

// Sync flushes buffered entries.
func (l *Logger) Sync() error { return l.core.Sync() }

// Field constructors, named like zap's.

func String(key, value string) Field { return Field{Key: key, Type: zapcore.StringType, String: value} }
func Int(key string, value int) Field {
	return Field{Key: key, Type: zapcore.Int64Type, Integer: int64(value)}
}
func Uint(key string, value uint) Field {
	return Field{Key: key, Type: zapcore.Uint64Type, Integer: int64(value)}
}
func Stringer(key string, value fmt.Stringer) Field {
	return Field{Key: key, Type: zapcore.StringerType, Interface: value}
}
func Any(key string, value any) Field {
	return Field{Key: key, Type: zapcore.ReflectType, Interface: value}
}
func ByteString(key string, value []byte) Field {
	return Field{Key: key, Type: zapcore.ByteStringType, Interface: value}
}
func Error(err error) Field {
	if err == nil {
		return Field{Key: "error", Type: zapcore.SkipType}
	}
	return Field{Key: "error", Type: zapcore.ErrorType, Interface: err}
}
