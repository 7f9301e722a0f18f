package v3rpc

import (
	"context"
	"errors"
	"slices"
	"testing"

	"google.golang.org/grpc"
)

// TestCheckedUnaryRunsChecksInOrderUntilOneRefuses: the member's checks
// run in the order given (learner, leader, auth), the first refusal is
// the answer, and neither later checks nor the handler run after it.
func TestCheckedUnaryRunsChecksInOrderUntilOneRefuses(t *testing.T) {
	refused := errors.New("refused")
	tests := []struct {
		name        string
		refuseAt    int // index of the refusing check; -1 for none
		wantRan     []int
		wantHandler bool
	}{
		{"all pass", -1, []int{0, 1, 2}, true},
		{"first refuses", 0, []int{0}, false},
		{"last refuses", 2, []int{0, 1, 2}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ran []int
			var checks []unaryCheck
			for i := range 3 {
				checks = append(checks, func(context.Context, any) error {
					ran = append(ran, i)
					if i == tt.refuseAt {
						return refused
					}
					return nil
				})
			}
			handled := false
			resp, err := checkedUnary(checks)(context.Background(), "req", &grpc.UnaryServerInfo{}, func(context.Context, any) (any, error) {
				handled = true
				return "resp", nil
			})
			if !slices.Equal(ran, tt.wantRan) || handled != tt.wantHandler {
				t.Fatalf("checks ran %v, handler %v; want %v, %v", ran, handled, tt.wantRan, tt.wantHandler)
			}
			if tt.wantHandler && (err != nil || resp != "resp") {
				t.Fatalf("answer %v, %v", resp, err)
			}
			if !tt.wantHandler && (!errors.Is(err, refused) || resp != nil) {
				t.Fatalf("answer %v, %v; want the refusal", resp, err)
			}
		})
	}
}
