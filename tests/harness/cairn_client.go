package harness

import (
	"testing"

	"github.com/cairnkv/cairn/client"
)

// CairnClient is the counterpart of ClientWith for cairn's own client
// library: it connects with cfg as given (no defaults, so a test may leave
// DialTimeout unset on purpose), fails t if that fails, and closes the
// client when the test ends.
func CairnClient(t testing.TB, cfg client.Config) *client.Client {
	t.Helper()
	c, err := client.New(cfg)
	if err != nil {
		t.Fatalf("cairn client of %v: %v", cfg.Endpoints, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
