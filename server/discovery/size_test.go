package discovery

import (
	"errors"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

func TestClusterSize(t *testing.T) {
	kv := func(v string) []*mvccpb.KeyValue { return []*mvccpb.KeyValue{{Value: []byte(v)}} }
	tests := []struct {
		kvs  []*mvccpb.KeyValue
		want int
		err  error
	}{
		{nil, 0, ErrSizeNotFound},
		{kv("3"), 3, nil},
		{kv("0"), 0, ErrBadSizeKey},
		{kv("-1"), 0, ErrBadSizeKey},
		{kv("three"), 0, ErrBadSizeKey},
		{kv(""), 0, ErrBadSizeKey},
	}
	for _, tt := range tests {
		got, err := clusterSize(tt.kvs)
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("%v: got %d, %v; want %d, %v", tt.kvs, got, err, tt.want, tt.err)
		}
	}
}
