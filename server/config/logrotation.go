package config

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairnkv/cairn/pkg/logrotate"
)

// ErrLogRotationInvalidLogOutput is etcd's refusal of --enable-log-rotation
// without exactly one file among --log-outputs. (etcd names the flag
// --log-rotate-config-json in it; the message is kept as etcd prints it.)
var ErrLogRotationInvalidLogOutput = errors.New("--log-outputs requires a single file path when --log-rotate-config-json is defined")

// logRotationJSON is --log-rotation-config-json. Unknown keys are ignored
// and missing ones are zero, as in etcd (so {"maxsize":1} keeps every
// backup forever).
type logRotationJSON struct {
	MaxSize    int  `json:"maxsize"`
	MaxAge     int  `json:"maxage"`
	MaxBackups int  `json:"maxbackups"`
	LocalTime  bool `json:"localtime"`
	Compress   bool `json:"compress"`
}

// LogRotation is the rotating writer's configuration for
// --enable-log-rotation: --log-rotation-config-json applied to the one file
// in --log-outputs. Filename is empty when --log-outputs names no file at
// all (etcd accepts, say, "stderr,stdout" and then rotates nothing).
func (c *Config) LogRotation() (logrotate.Config, error) {
	var files []string
	outputs := c.LogOutputs
	if len(outputs) == 0 {
		outputs = []string{DefaultLogOutput}
	}
	for _, o := range outputs {
		if o != DefaultLogOutput && o != "stderr" && o != "stdout" {
			files = append(files, o)
		}
	}
	// etcd's test, quirks included: one non-file output is refused, but
	// several non-file outputs are not.
	if (len(outputs) == 1 && len(files) == 0) || len(files) > 1 {
		return logrotate.Config{}, ErrLogRotationInvalidLogOutput
	}
	var j logRotationJSON
	if err := json.Unmarshal([]byte(c.LogRotationConfigJSON), &j); err != nil {
		return logrotate.Config{}, logRotationJSONError(err)
	}
	rc := logrotate.Config{MaxSize: j.MaxSize, MaxAge: j.MaxAge, MaxBackups: j.MaxBackups, LocalTime: j.LocalTime, Compress: j.Compress}
	if len(files) == 1 {
		rc.Filename = files[0]
	}
	return rc, nil
}

// logRotationJSONError words a JSON error as etcd does. etcd decodes into
// its own wrapper (embed.logRotationConfig around lumberjack's Logger), and
// Go's type errors name that wrapper, so those are re-worded with etcd's
// type names rather than ours.
func logRotationJSONError(err error) error {
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("improperly formatted log rotation config: %w", err)
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return fmt.Errorf("invalid log rotation config: json: cannot unmarshal %s into Go value of type embed.logRotationConfig", typeErr.Value)
	case errors.As(err, &typeErr):
		return fmt.Errorf("invalid log rotation config: json: cannot unmarshal %s into Go struct field logRotationConfig.Logger.%s of type %s",
			typeErr.Value, typeErr.Field, typeErr.Type)
	default:
		return fmt.Errorf("fail to unmarshal log rotation config: %w", err)
	}
}
