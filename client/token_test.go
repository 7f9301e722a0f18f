package client

import (
	"context"
	"slices"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// fakeAuthClient is a Client with only what the interceptors use, whose
// token is "old" and whose Authenticate answers "new".
func fakeAuthClient(authentications *int) *Client {
	c := &Client{cfg: Config{MaxRetries: -1}.withDefaults(), lg: zap.NewNop()}
	c.tokens = &tokens{user: "u", password: "p", token: "old", refreshing: make(chan struct{}, 1),
		authenticate: func(context.Context, string, string) (*AuthenticateResponse, error) {
			*authentications++
			return &AuthenticateResponse{Token: "new"}, nil
		}}
	return c
}

// invoke runs the unary interceptor over an invoker that answers the
// errors in turn (nil once they are used up) and returns the tokens the
// invoker saw.
func invoke(c *Client, method string, errs ...error) (seen []string, err error) {
	invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
		md, _ := metadata.FromOutgoingContext(ctx)
		seen = append(seen, md.Get(rpctypes.TokenFieldNameGRPC)...)
		if len(errs) == 0 {
			return nil
		}
		err := errs[0]
		errs = errs[1:]
		return err
	}
	err = c.unaryRetry(context.Background(), method, nil, nil, nil, invoker)
	return seen, err
}

func TestTokenInterceptor(t *testing.T) {
	const put = "/etcdserverpb.KV/Put"
	for _, tc := range []struct {
		name            string
		method          string
		errs            []error
		wantSeen        []string
		wantErr         error
		authentications int
	}{
		{"token on every request", put, nil, []string{"old"}, nil, 0},
		{"none on Authenticate", authenticateMethod, nil, nil, nil, 0},
		{"invalid token: renewed and sent again", put, []error{rpctypes.ErrGRPCInvalidAuthToken}, []string{"old", "new"}, nil, 1},
		{"old revision: renewed", put, []error{rpctypes.ErrGRPCAuthOldRevision}, []string{"old", "new"}, nil, 1},
		{"user empty: renewed", put, []error{rpctypes.ErrGRPCUserEmpty}, []string{"old", "new"}, nil, 1},
		{"renewed once only", put, []error{rpctypes.ErrGRPCInvalidAuthToken, rpctypes.ErrGRPCInvalidAuthToken},
			[]string{"old", "new"}, rpctypes.ErrGRPCInvalidAuthToken, 1},
		{"other errors keep the token", put, []error{rpctypes.ErrGRPCPermissionDenied}, []string{"old"}, rpctypes.ErrGRPCPermissionDenied, 0},
		{"Authenticate is not renewed", authenticateMethod, []error{rpctypes.ErrGRPCInvalidAuthToken}, nil, rpctypes.ErrGRPCInvalidAuthToken, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n int
			seen, err := invoke(fakeAuthClient(&n), tc.method, tc.errs...)
			if err != tc.wantErr {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if !slices.Equal(seen, tc.wantSeen) {
				t.Errorf("tokens sent %v, want %v", seen, tc.wantSeen)
			}
			if n != tc.authentications {
				t.Errorf("%d authentications, want %d", n, tc.authentications)
			}
		})
	}
}

func TestTokenFixedIsNeverRenewed(t *testing.T) {
	ts := newTokens(Config{Token: "jwt"}, nil)
	if ts.current() != "jwt" || ts.refreshable("/etcdserverpb.KV/Put", rpctypes.ErrGRPCInvalidAuthToken) {
		t.Errorf("fixed token: %q, refreshable", ts.current())
	}
	if ts := newTokens(Config{Username: "u"}, nil); ts.user != "" {
		t.Error("a username without a password must send no credentials")
	}
}

func TestTokenRefreshKeepsANewerToken(t *testing.T) {
	var n int
	c := fakeAuthClient(&n)
	c.tokens.token = "newer"
	if err := c.tokens.refresh(context.Background(), "old"); err != nil || n != 0 || c.tokens.current() != "newer" {
		t.Errorf("refresh of a replaced token: %v, %d authentications, token %q", err, n, c.tokens.current())
	}
}
