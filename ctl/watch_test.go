package ctl

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseWatchCmdline(t *testing.T) {
	tests := []struct {
		name             string
		args             []string
		dashAt           int
		envKey, envRange string
		wantArgs, exec   []string
		wantErr          error
	}{
		{name: "key", args: []string{"foo"}, dashAt: -1, wantArgs: []string{"foo"}},
		{name: "range", args: []string{"foo", "zoo"}, dashAt: -1, wantArgs: []string{"foo", "zoo"}},
		{name: "exec", args: []string{"foo", "echo", "hi"}, dashAt: 1, wantArgs: []string{"foo"}, exec: []string{"echo", "hi"}},
		{name: "exec name repeated", args: []string{"foo", "echo", "echo"}, dashAt: 1, wantArgs: []string{"foo", "echo"}, exec: []string{"echo", "echo"}},
		{name: "no args", dashAt: -1, wantErr: errBadArgsNum},
		{name: "separator last", args: []string{"foo"}, dashAt: 1, wantErr: errBadArgsNumSeparator},
		{name: "env key", envKey: "k", dashAt: -1, wantArgs: []string{"k"}},
		{name: "env key and range", envKey: "k", envRange: "z", dashAt: -1, wantArgs: []string{"k", "z"}},
		{name: "env key and exec", envKey: "k", args: []string{"echo"}, dashAt: 0, wantArgs: []string{"k"}, exec: []string{"echo"}},
		{name: "env key conflicts", envKey: "k", args: []string{"foo"}, dashAt: -1, wantErr: errBadArgsNumConflictEnv},
		{name: "env key conflicts before exec", envKey: "k", args: []string{"foo", "echo"}, dashAt: 1, wantErr: errBadArgsNumConflictEnv},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := parseWatchCmdline(tt.args, tt.dashAt, opts{}, tt.envKey, tt.envRange)
			if err != tt.wantErr {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if !reflect.DeepEqual(spec.args, tt.wantArgs) || !reflect.DeepEqual(spec.exec, tt.exec) {
				t.Fatalf("args %q exec %q, want %q %q", spec.args, spec.exec, tt.wantArgs, tt.exec)
			}
		})
	}
}

func TestParseWatchLine(t *testing.T) {
	tests := []struct {
		line           string
		envKey         string
		wantArgs, exec []string
		want           opts
		wantErr        string
	}{
		{line: "watch foo", wantArgs: []string{"foo"}},
		{line: "watch --prefix --rev 3 --prev-kv foo", wantArgs: []string{"foo"}, want: opts{prefix: true, rev: 3, prevKV: true}},
		{line: "watch foo --progress-notify bar", wantArgs: []string{"foo", "bar"}, want: opts{progressNotify: true}},
		{line: "watch foo -- echo hi", wantArgs: []string{"foo"}, exec: []string{"echo", "hi"}},
		{line: "watch -- echo", envKey: "k", wantArgs: []string{"k"}, exec: []string{"echo"}},
		{line: "watch foo --", wantErr: errBadArgsNumSeparator.Error()},
		{line: "watch --rev 2", wantErr: errBadArgsNum.Error()},
		{line: "watch foo", envKey: "k", wantErr: errBadArgsNumConflictEnv.Error()},
		{line: "watch --nosuch foo", wantErr: "unknown flag: --nosuch"},
		{line: "watch -h foo", wantErr: "unknown shorthand flag: 'h' in -h"},
		{line: "watch --rev x foo", wantErr: `invalid argument "x" for "--rev" flag: strconv.ParseInt: parsing "x": invalid syntax`},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			spec, err := parseWatchLine(argify(tt.line), tt.envKey, "")
			if tt.wantErr != "" || err != nil {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if !reflect.DeepEqual(spec.args, tt.wantArgs) || !reflect.DeepEqual(spec.exec, tt.exec) {
				t.Fatalf("args %q exec %q, want %q %q", spec.args, spec.exec, tt.wantArgs, tt.exec)
			}
			o := spec.o
			if o.prefix != tt.want.prefix || o.rev != tt.want.rev || o.prevKV != tt.want.prevKV || o.progressNotify != tt.want.progressNotify {
				t.Fatalf("options %+v, want %+v", o, tt.want)
			}
		})
	}
}

func TestWatchOps(t *testing.T) {
	tests := []struct {
		spec    watchSpec
		wantErr string
	}{
		{spec: watchSpec{args: []string{"a"}}},
		{spec: watchSpec{args: []string{"a", "b"}}},
		{spec: watchSpec{args: []string{"a", "b"}, o: opts{prefix: true}}, wantErr: "`range_end` and `--prefix` are mutually exclusive"},
		{spec: watchSpec{}, wantErr: errBadArgsNum.Error()},
	}
	for _, tt := range tests {
		_, _, err := tt.spec.watchOps()
		if got := errString(err); got != tt.wantErr {
			t.Errorf("%+v: err %q, want %q", tt.spec, got, tt.wantErr)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestWatchUsageErrors runs the command up to its argument checks, which
// fail before any connection is made.
func TestWatchUsageErrors(t *testing.T) {
	tests := []struct {
		args    []string
		env     map[string]string
		code    int
		wantErr string
	}{
		{args: []string{"watch"}, code: exitBadArgs, wantErr: "Error: bad number of arguments\n"},
		{args: []string{"watch", "a", "--"}, code: exitBadArgs, wantErr: "Error: bad number of arguments (found separator --, but no commands)\n"},
		{args: []string{"watch", "--prefix", "a", "b"}, code: exitBadArgs, wantErr: "Error: `range_end` and `--prefix` are mutually exclusive\n"},
		{args: []string{"watch", "a"}, env: map[string]string{"ETCDCTL_WATCH_RANGE_END": "z"}, code: exitBadArgs, wantErr: "Error: ETCDCTL_WATCH_KEY is empty but got ETCDCTL_WATCH_RANGE_END=\"z\"\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb strings.Builder
			code := run(tt.args, env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string { return tt.env[k] }})
			if code != tt.code || errb.String() != tt.wantErr {
				t.Fatalf("exit %d stderr %q, want %d %q", code, errb.String(), tt.code, tt.wantErr)
			}
		})
	}
}
