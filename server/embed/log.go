package embed

import (
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/cairnkv/cairn/pkg/logrotate"
	"github.com/cairnkv/cairn/server/config"
)

// NewLogger builds etcd's zap logger from --log-level, --log-format and
// --log-outputs. With --enable-log-rotation the one file among the outputs
// is written through a rotating writer instead. The returned function
// closes that writer (letting pending backup compression finish); call it
// after the last log line.
func NewLogger(cfg *config.Config) (*zap.Logger, func(), error) {
	zc := zap.NewProductionConfig()
	if err := zc.Level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return nil, nil, fmt.Errorf("invalid --log-level %q: %w", cfg.LogLevel, err)
	}
	zc.Sampling = nil
	zc.EncoderConfig.TimeKey = "ts"
	zc.EncoderConfig.EncodeTime = zapISO8601
	zc.OutputPaths, zc.ErrorOutputPaths = logOutputs(cfg.LogOutputs), []string{"stderr"}
	if cfg.LogFormat == "console" {
		zc.Encoding = "console"
	}
	if !cfg.EnableLogRotation {
		lg, err := zc.Build()
		return lg, func() {}, err
	}
	rc, err := cfg.LogRotation()
	if err != nil {
		return nil, nil, err
	}
	if rc.Filename == "" { // etcd accepts rotation with no file to rotate
		lg, err := zc.Build()
		return lg, func() {}, err
	}
	rot := logrotate.New(rc)
	zc.OutputPaths = slices.DeleteFunc(slices.Clone(zc.OutputPaths), func(p string) bool { return p == rc.Filename })
	lg, err := zc.Build(zap.WrapCore(rotatingCore(zc, rot)))
	if err != nil {
		rot.Close()
		return nil, nil, err
	}
	return lg, func() { _ = rot.Close() }, nil
}

// rotatingCore adds a core writing to rot beside the one zap built for the
// other outputs, or replaces it when the file is the only output.
func rotatingCore(zc zap.Config, rot *logrotate.Writer) func(zapcore.Core) zapcore.Core {
	enc := zapcore.NewJSONEncoder(zc.EncoderConfig)
	if zc.Encoding == "console" {
		enc = zapcore.NewConsoleEncoder(zc.EncoderConfig)
	}
	// rot serialises its own writes; no zapcore.Lock needed.
	file := zapcore.NewCore(enc, rot, zc.Level)
	others := len(zc.OutputPaths) > 0
	return func(c zapcore.Core) zapcore.Core {
		if !others {
			return file
		}
		return zapcore.NewTee(c, file)
	}
}

// zapISO8601 writes timestamps as etcd does: 2006-01-02T15:04:05.000000Z0700.
func zapISO8601(t time.Time, enc zapcore.PrimitiveArrayEncoder) {
	enc.AppendString(t.Format("2006-01-02T15:04:05.000000Z0700"))
}

func logOutputs(outs []string) []string {
	var paths []string
	for _, o := range outs {
		switch o {
		case "", "default", "stderr":
			paths = append(paths, "stderr")
		case "stdout":
			paths = append(paths, "stdout")
		default:
			paths = append(paths, o)
		}
	}
	if len(paths) == 0 {
		paths = []string{"stderr"}
	}
	return dedupe(paths)
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
