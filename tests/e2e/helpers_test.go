package e2e

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// wantErr fails unless err is want (for rpctypes errors this means both the
// gRPC code and etcd's exact message match).
func wantErr(t testing.TB, err, want error) {
	t.Helper()
	if !sameErr(err, want) {
		t.Fatalf("error = %s, want %s", describeErr(err), describeErr(want))
	}
}

// sameErr reports whether err is want, either as the client's rpctypes
// error or as a raw gRPC status with the same code and message.
func sameErr(err, want error) bool {
	if errors.Is(err, want) {
		return true
	}
	var w rpctypes.EtcdError
	if !errors.As(want, &w) {
		return false
	}
	s, ok := status.FromError(err)
	return ok && s.Code() == w.Code() && s.Message() == w.Error()
}

// wantCode fails unless err carries the gRPC code c.
func wantCode(t testing.TB, err error, c codes.Code) {
	t.Helper()
	if err == nil || status.Code(err) != c {
		t.Fatalf("error = %s, want code %v", describeErr(err), c)
	}
}

func describeErr(err error) string {
	if err == nil {
		return "<nil>"
	}
	if s, ok := status.FromError(err); ok {
		return fmt.Sprintf("%q (code %v)", s.Message(), s.Code())
	}
	return fmt.Sprintf("%q (%T)", err.Error(), err)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %s", describeErr(err))
	}
}

// kvPairs renders kvs as "key=value" strings (or just keys when values are
// empty) for compact comparisons.
func kvPairs(kvs []*mvccpb.KeyValue) string {
	var parts []string
	for _, kv := range kvs {
		if len(kv.Value) == 0 {
			parts = append(parts, string(kv.Key))
		} else {
			parts = append(parts, string(kv.Key)+"="+string(kv.Value))
		}
	}
	return strings.Join(parts, ",")
}

// mustPut puts key=val and returns the new revision.
func mustPut(t testing.TB, cli *clientv3.Client, key, val string) int64 {
	t.Helper()
	resp, err := cli.Put(ctx(t), key, val)
	must(t, err)
	return resp.Header.Revision
}

// currentRev returns the store's current revision.
func currentRev(t testing.TB, cli *clientv3.Client) int64 {
	t.Helper()
	resp, err := cli.Get(ctx(t), "\x00-current-rev-probe")
	must(t, err)
	return resp.Header.Revision
}

// httpDo sends an HTTP request with body and returns the answer's status
// and body.
func httpDo(t testing.TB, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), method, url, strings.NewReader(body))
	must(t, err)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, string(b)
}
