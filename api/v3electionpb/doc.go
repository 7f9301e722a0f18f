// Package v3electionpb holds the wire messages and gRPC bindings of the
// Election service (etcd's v3electionpb: same proto package, names and field
// numbers). v3election.pb.go is generated from v3election.proto by
// tools/protogen; v3election_grpc.pb.go is written by hand.
package v3electionpb

//go:generate env GOWORK=off go run -C ../../tools/protogen . -I ../../api/v3electionpb -I imports -out ../../api/v3electionpb v3election.proto
