//go:build tools

// Package tools pins dependencies that later code imports.
package tools

import (
	_ "github.com/anishathalye/porcupine"
	_ "github.com/golang-jwt/jwt/v5"
	_ "github.com/google/btree"
	_ "github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "go.etcd.io/bbolt"
	_ "go.etcd.io/etcd/api/v3/etcdserverpb"
	_ "go.etcd.io/etcd/api/v3/etcdserverpb/gw"
	_ "go.etcd.io/etcd/client/v3"
	_ "go.etcd.io/raft/v3"
	_ "go.uber.org/goleak"
	_ "go.uber.org/zap"
	_ "golang.org/x/crypto/bcrypt"
	_ "google.golang.org/grpc"
	_ "sigs.k8s.io/yaml"
)
