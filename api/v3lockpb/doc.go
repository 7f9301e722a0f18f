// Package v3lockpb holds the wire messages and gRPC bindings of the Lock
// service (etcd's v3lockpb: same proto package, names and field numbers).
// v3lock.pb.go is generated from v3lock.proto by tools/protogen;
// v3lock_grpc.pb.go is written by hand.
package v3lockpb

//go:generate env GOWORK=off go run -C ../../tools/protogen . -I ../../api/v3lockpb -I imports -out ../../api/v3lockpb v3lock.proto
