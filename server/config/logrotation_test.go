package config

import (
	"fmt"
	"testing"

	"github.com/cairnkv/cairn/pkg/logrotate"
)

// TestLogRotationErrors: each message is what etcd v3.7.3 prints after
// "failed to verify flags" for the same arguments.
func TestLogRotationErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"default output only", []string{"--enable-log-rotation"},
			"--log-outputs requires a single file path when --log-rotate-config-json is defined"},
		{"stderr only", []string{"--enable-log-rotation", "--log-outputs=stderr"},
			"--log-outputs requires a single file path when --log-rotate-config-json is defined"},
		{"two files", []string{"--enable-log-rotation", "--log-outputs=a.log,b.log"},
			"--log-outputs requires a single file path when --log-rotate-config-json is defined"},
		{"syntax", []string{"--enable-log-rotation", "--log-outputs=a.log", "--log-rotation-config-json={bad"},
			"improperly formatted log rotation config: invalid character 'b' looking for beginning of object key string"},
		{"empty", []string{"--enable-log-rotation", "--log-outputs=a.log", "--log-rotation-config-json="},
			"improperly formatted log rotation config: unexpected end of JSON input"},
		{"trailing data", []string{"--enable-log-rotation", "--log-outputs=a.log", `--log-rotation-config-json={"maxsize":1}x`},
			"improperly formatted log rotation config: invalid character 'x' after top-level value"},
		{"string size", []string{"--enable-log-rotation", "--log-outputs=a.log", `--log-rotation-config-json={"maxsize":"x"}`},
			"invalid log rotation config: json: cannot unmarshal string into Go struct field logRotationConfig.Logger.maxsize of type int"},
		{"fractional size", []string{"--enable-log-rotation", "--log-outputs=a.log", `--log-rotation-config-json={"maxsize":1.5}`},
			"invalid log rotation config: json: cannot unmarshal number 1.5 into Go struct field logRotationConfig.Logger.maxsize of type int"},
		{"number compress", []string{"--enable-log-rotation", "--log-outputs=a.log", `--log-rotation-config-json={"compress":1}`},
			"invalid log rotation config: json: cannot unmarshal number into Go struct field logRotationConfig.Logger.compress of type bool"},
		{"array", []string{"--enable-log-rotation", "--log-outputs=a.log", "--log-rotation-config-json=[1]"},
			"invalid log rotation config: json: cannot unmarshal array into Go value of type embed.logRotationConfig"},
		{"rotation checked before the log format", []string{"--enable-log-rotation", "--log-format=xml"},
			"--log-outputs requires a single file path when --log-rotate-config-json is defined"},
		{"default among outputs checked first", []string{"--enable-log-rotation", "--log-outputs=default,a.log"},
			`multi logoutput for "default" is not supported yet`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.args, nil)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLogRotationAccepted(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want logrotate.Config
	}{
		{"etcd's default settings", []string{"--enable-log-rotation", "--log-outputs=/var/log/cairn.log"},
			logrotate.Config{Filename: "/var/log/cairn.log", MaxSize: 100}},
		{"missing keys are zero", []string{"--enable-log-rotation", "--log-outputs=a.log", `--log-rotation-config-json={"maxsize":1}`},
			logrotate.Config{Filename: "a.log", MaxSize: 1}},
		{"every key, unknown ones ignored", []string{"--enable-log-rotation", "--log-outputs=stderr,a.log",
			`--log-rotation-config-json={"maxsize":5,"maxage":7,"maxbackups":3,"localtime":true,"compress":true,"filename":"x","other":1}`},
			logrotate.Config{Filename: "a.log", MaxSize: 5, MaxAge: 7, MaxBackups: 3, LocalTime: true, Compress: true}},
		// etcd lets this through and then rotates nothing.
		{"several outputs none a file", []string{"--enable-log-rotation", "--log-outputs=stderr,stdout"},
			logrotate.Config{MaxSize: 100}},
		// etcd panics on null; cairn takes it as "all defaults".
		{"null", []string{"--enable-log-rotation", "--log-outputs=a.log", "--log-rotation-config-json=null"},
			logrotate.Config{Filename: "a.log"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(tc.args, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.LogRotation()
			if err != nil {
				t.Fatal(err)
			}
			if got.Now != nil {
				t.Fatal("LogRotation sets a clock; the writer should use time.Now")
			}
			if got, want := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", tc.want); got != want {
				t.Errorf("LogRotation() = %s, want %s", got, want)
			}
		})
	}
}

// TestLogRotationConfigIgnoredWhenDisabled: etcd reads the JSON only when
// rotation is on.
func TestLogRotationConfigIgnoredWhenDisabled(t *testing.T) {
	if _, err := Parse([]string{"--log-rotation-config-json={bad"}, nil); err != nil {
		t.Fatal(err)
	}
}
