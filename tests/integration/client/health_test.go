package client_test

import (
	"testing"
	"time"

	"github.com/cairnkv/cairn/client"
)

func TestHealthCheckSteersOffStoppedMember(t *testing.T) {
	ms := startCluster(t, 3)
	c, err := client.New(client.Config{Endpoints: urls(ms), HealthCheckInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stopMember(t, ms[2])
	time.Sleep(300 * time.Millisecond)
	for range 20 {
		must(c.Get(testCtx(t), "k"))
	}
}
