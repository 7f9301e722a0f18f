// Hand-written gRPC bindings of the Lock service in v3lock.proto, in the
// shape protoc-gen-go-grpc gives them. Method names are etcd's, so etcd's
// clients reach cairn's server and the reverse.

package v3lockpb

import (
	"context"

	"google.golang.org/grpc"
)

// Full method names of the Lock service.
const (
	Lock_Lock_FullMethodName   = "/v3lockpb.Lock/Lock"
	Lock_Unlock_FullMethodName = "/v3lockpb.Lock/Unlock"
)

// LockClient calls the Lock service.
type LockClient interface {
	Lock(ctx context.Context, in *LockRequest, opts ...grpc.CallOption) (*LockResponse, error)
	Unlock(ctx context.Context, in *UnlockRequest, opts ...grpc.CallOption) (*UnlockResponse, error)
}

type lockClient struct{ cc grpc.ClientConnInterface }

// NewLockClient returns a LockClient over cc.
func NewLockClient(cc grpc.ClientConnInterface) LockClient { return &lockClient{cc} }

func (c *lockClient) Lock(ctx context.Context, in *LockRequest, opts ...grpc.CallOption) (*LockResponse, error) {
	out := new(LockResponse)
	if err := c.cc.Invoke(ctx, Lock_Lock_FullMethodName, in, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *lockClient) Unlock(ctx context.Context, in *UnlockRequest, opts ...grpc.CallOption) (*UnlockResponse, error) {
	out := new(UnlockResponse)
	if err := c.cc.Invoke(ctx, Lock_Unlock_FullMethodName, in, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

// LockServer serves the Lock service.
type LockServer interface {
	Lock(context.Context, *LockRequest) (*LockResponse, error)
	Unlock(context.Context, *UnlockRequest) (*UnlockResponse, error)
}

// RegisterLockServer registers srv on s.
func RegisterLockServer(s grpc.ServiceRegistrar, srv LockServer) {
	s.RegisterService(&Lock_ServiceDesc, srv)
}

func lockLockHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	in := new(LockRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(LockServer).Lock(ctx, in)
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: Lock_Lock_FullMethodName}
	handler := func(ctx context.Context, req any) (any, error) {
		return srv.(LockServer).Lock(ctx, req.(*LockRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func lockUnlockHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	in := new(UnlockRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(LockServer).Unlock(ctx, in)
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: Lock_Unlock_FullMethodName}
	handler := func(ctx context.Context, req any) (any, error) {
		return srv.(LockServer).Unlock(ctx, req.(*UnlockRequest))
	}
	return interceptor(ctx, in, info, handler)
}

// Lock_ServiceDesc describes the Lock service to grpc.Server.
var Lock_ServiceDesc = grpc.ServiceDesc{
	ServiceName: "v3lockpb.Lock",
	HandlerType: (*LockServer)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Lock", Handler: lockLockHandler},
		{MethodName: "Unlock", Handler: lockUnlockHandler},
	},
	Streams:  []grpc.StreamDesc{},
	Metadata: "v3lock.proto",
}
