module github.com/cairnkv/cairn

go 1.26.8

require (
	github.com/cairnkv/cairn/api v0.1.0 // indirect
	github.com/cairnkv/cairn/client v0.1.0
	github.com/cairnkv/cairn/ctl v0.1.0
	github.com/cairnkv/cairn/pkg v0.1.0
	github.com/cairnkv/cairn/server v0.1.0
	github.com/cairnkv/cairn/tests v0.1.0
	github.com/cairnkv/cairn/utl v0.1.0
)

require (
	go.etcd.io/etcd/api/v3 v3.7.3
	go.uber.org/goleak v1.3.0
	go.uber.org/zap v1.28.0
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	github.com/golang/protobuf v1.5.4 // indirect
	github.com/google/btree v1.1.3 // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.29.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.1 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	go.etcd.io/bbolt v1.5.0 // indirect
	go.etcd.io/raft/v3 v3.7.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)

replace (
	github.com/cairnkv/cairn/api => ./api
	github.com/cairnkv/cairn/client => ./client
	github.com/cairnkv/cairn/ctl => ./ctl
	github.com/cairnkv/cairn/pkg => ./pkg
	github.com/cairnkv/cairn/server => ./server
	github.com/cairnkv/cairn/tests => ./tests
	github.com/cairnkv/cairn/utl => ./utl
)
