// Package wiretest checks, for the api packages' tests, that a generated
// proto file keeps the wire shape of etcd's: every message field's name,
// number and type and every method's request and response, one line each,
// against a list transcribed by hand from etcd v3.7's .proto.
package wiretest

import (
	"fmt"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Check fails t unless fd describes exactly want (see Describe) and every
// unary method svc serves is among fd's methods.
func Check(t testing.TB, fd protoreflect.FileDescriptor, svc grpc.ServiceDesc, want []string) {
	t.Helper()
	got := Describe(fd)
	if !slices.Equal(got, want) {
		t.Fatalf("wire shape differs from etcd's:\ngot  %q\nwant %q", got, want)
	}
	for _, m := range svc.Methods {
		if !slices.Contains(got, fmt.Sprintf("rpc /%s/%s %s", svc.ServiceName, m.MethodName, rpcTypes(fd, m.MethodName))) {
			t.Errorf("grpc method %s is not in %s", m.MethodName, fd.Path())
		}
	}
}

// Describe lists every field of every message of fd, then every method of
// its service, as one line each:
//
//	pkg.Message.field=N type
//	rpc /pkg.Service/Method pkg.Request -> [stream ]pkg.Response
func Describe(fd protoreflect.FileDescriptor) []string {
	var out []string
	for i := 0; i < fd.Messages().Len(); i++ {
		m := fd.Messages().Get(i)
		for j := 0; j < m.Fields().Len(); j++ {
			f := m.Fields().Get(j)
			kind := f.Kind().String()
			if f.Message() != nil {
				kind = string(f.Message().FullName())
			}
			out = append(out, fmt.Sprintf("%s.%s=%d %s", m.FullName(), f.Name(), f.Number(), kind))
		}
	}
	svc := fd.Services().Get(0)
	for i := 0; i < svc.Methods().Len(); i++ {
		name := string(svc.Methods().Get(i).Name())
		out = append(out, fmt.Sprintf("rpc /%s/%s %s", svc.FullName(), name, rpcTypes(fd, name)))
	}
	return out
}

func rpcTypes(fd protoreflect.FileDescriptor, method string) string {
	m := fd.Services().Get(0).Methods().ByName(protoreflect.Name(method))
	if m == nil {
		return "?"
	}
	stream := ""
	if m.IsStreamingServer() {
		stream = "stream "
	}
	return fmt.Sprintf("%s -> %s%s", m.Input().FullName(), stream, m.Output().FullName())
}
