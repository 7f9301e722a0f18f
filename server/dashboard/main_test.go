package dashboard_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The dashboard runs a sampler and keeps connections to other members;
// both must end with the member.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
