// Package discovery implements etcd's v3 discovery protocol: a new member
// finds the other members of the cluster it bootstraps through a separate
// etcd (or cairn) cluster, the discovery service.
//
// Every member of the new cluster shares a token. Under
// /_etcd/registry/<token>/ the service holds
//
//	_config/size          the expected cluster size, set by the operator
//	members/<member-id>   "name=peerURL,name=peerURL", one key per member
//
// A member first checks that the cluster is not full yet, registers itself,
// then waits (watching members/) until size members have registered. The
// first size registrations, ordered by their create revision, form the
// initial cluster; a member that is not among them fails with
// ErrFullCluster. A token bootstraps one cluster only.
//
// The package talks to the service with cairn's own client (client/).
package discovery

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/pkg/defaults"
	"github.com/cairnkv/cairn/pkg/wait"
)

// Prefix is the key prefix of every discovery token.
const Prefix = "/_etcd/registry"

// The errors of the protocol, in etcd's words.
var (
	ErrInvalidURL     = errors.New("discovery: invalid peer URL")
	ErrBadSizeKey     = errors.New("discovery: size key is bad")
	ErrSizeNotFound   = errors.New("discovery: size key not found")
	ErrFullCluster    = errors.New("discovery: cluster is full")
	ErrTooManyRetries = errors.New("discovery: too many retries")
)

// Config is the discovery client's configuration (etcd's --discovery-*
// flags).
type Config struct {
	Token     string
	Endpoints []string

	DialTimeout      time.Duration
	RequestTimeout   time.Duration
	KeepAliveTime    time.Duration
	KeepAliveTimeout time.Duration

	InsecureTransport  bool
	InsecureSkipVerify bool
	CertFile           string
	KeyFile            string
	CACertFile         string

	// Username and Password authenticate the client to the discovery
	// cluster when it has auth enabled (--discovery-user,
	// --discovery-password).
	Username, Password string

	// MaxRetries bounds the retries of a failed request to the service;
	// zero retries without bound (as etcd does), until ctx ends.
	MaxRetries int
	// RetryBase is the first retry's wait (default 1s); each further retry
	// doubles it, up to 2^8 times the base.
	RetryBase time.Duration
}

// SizeKey is the key of the token's expected cluster size.
func SizeKey(token string) string { return Prefix + "/" + token + "/_config/size" }

// MembersPrefix is the prefix of the token's member registrations.
func MembersPrefix(token string) string { return Prefix + "/" + token + "/members" }

// MemberKey is the registration key of the member with the given ID.
func MemberKey(token string, id uint64) string {
	return MembersPrefix(token) + "/" + strconv.FormatUint(id, 16)
}

// JoinCluster registers the member id, whose initial-cluster entry is self
// ("name=peerURL,name=peerURL"), under cfg.Token and returns the initial
// cluster ("name=url,...", the form of --initial-cluster) once the expected
// number of members has registered. It fails early, before registering,
// when the cluster is already full.
func JoinCluster(ctx context.Context, lg *zap.Logger, cfg Config, id uint64, self string) (string, error) {
	d, err := newDiscoverer(lg, cfg, id)
	if err != nil {
		return "", err
	}
	defer d.close()
	cluster, err := d.join(ctx, self)
	if err != nil {
		d.lg.Error("discovery failed to join cluster", zap.String("cluster", cluster), zap.Error(err))
		return "", err
	}
	d.lg.Info("discovery joined cluster successfully", zap.String("cluster", cluster))
	return cluster, nil
}

// GetCluster returns the initial cluster of cfg.Token without registering,
// waiting until it is complete.
func GetCluster(ctx context.Context, lg *zap.Logger, cfg Config) (string, error) {
	d, err := newDiscoverer(lg, cfg, 0)
	if err != nil {
		return "", err
	}
	defer d.close()
	regs, size, rev, err := d.check(ctx)
	if errors.Is(err, ErrFullCluster) {
		return regs.initialCluster(size)
	}
	if err != nil {
		return "", err
	}
	if err := d.wait(ctx, regs, size, rev); err != nil {
		return "", err
	}
	return regs.initialCluster(size)
}

type discoverer struct {
	lg      *zap.Logger
	cfg     Config
	id      uint64
	cli     *client.Client
	retries int
}

func newDiscoverer(lg *zap.Logger, cfg Config, id uint64) (*discoverer, error) {
	if lg == nil {
		lg = zap.NewNop()
	}
	if cfg.Token == "" {
		return nil, errors.New("discovery: token is empty")
	}
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("discovery: no endpoints")
	}
	cfg.RequestTimeout = defaults.Positive(cfg.RequestTimeout, 5*time.Second)
	cfg.RetryBase = defaults.Positive(cfg.RetryBase, time.Second)
	lg = lg.With(zap.String("discovery-token", cfg.Token), zap.String("discovery-endpoints", strings.Join(cfg.Endpoints, ",")))
	tlsCfg, err := clientTLS(cfg)
	if err != nil {
		return nil, err
	}
	cli, err := client.New(client.Config{
		Endpoints:            cfg.Endpoints,
		DialTimeout:          cfg.DialTimeout,
		DialKeepAliveTime:    cfg.KeepAliveTime,
		DialKeepAliveTimeout: cfg.KeepAliveTimeout,
		TLS:                  tlsCfg,
		Username:             cfg.Username,
		Password:             cfg.Password,
		Logger:               lg,
	})
	if err != nil {
		return nil, fmt.Errorf("discovery: connecting to %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	return &discoverer{lg: lg, cfg: cfg, id: id, cli: cli}, nil
}

// clientTLS builds the client's TLS configuration, or nil for plain
// connections (https endpoints then use the system roots).
func clientTLS(cfg Config) (*tls.Config, error) {
	if cfg.CertFile == "" && cfg.KeyFile == "" && cfg.CACertFile == "" && !cfg.InsecureSkipVerify {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // operator's choice
	if cfg.CertFile != "" || cfg.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("discovery: loading client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if cfg.CACertFile != "" {
		pem, err := os.ReadFile(cfg.CACertFile)
		if err != nil {
			return nil, fmt.Errorf("discovery: reading CA bundle: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("discovery: no certificates in %s", cfg.CACertFile)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

func (d *discoverer) close() { d.cli.Close() }

func (d *discoverer) join(ctx context.Context, self string) (string, error) {
	// Fail early: a full cluster needs no registration.
	if _, _, _, err := d.check(ctx); err != nil {
		return "", err
	}
	if err := d.register(ctx, self); err != nil {
		return "", err
	}
	regs, size, rev, err := d.check(ctx)
	if err != nil {
		return "", err
	}
	if err := d.wait(ctx, regs, size, rev); err != nil {
		return "", err
	}
	return regs.initialCluster(size)
}

// backoff waits before the next retry of step, or fails once the retries
// are exhausted or ctx ends.
func (d *discoverer) backoff(ctx context.Context, step string, cause error) error {
	d.retries++
	if d.cfg.MaxRetries > 0 && d.retries > d.cfg.MaxRetries {
		return fmt.Errorf("%w: %s: %w", ErrTooManyRetries, step, cause)
	}
	shift := min(d.retries, 8)
	backoff := d.cfg.RetryBase << shift
	d.lg.Warn("retry connecting to discovery service", zap.String("reason", step), zap.Duration("backoff", backoff), zap.Error(cause))
	if !wait.Sleep(ctx, backoff) {
		return ctx.Err()
	}
	return nil
}

func (d *discoverer) request(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d.cfg.RequestTimeout)
}

func (d *discoverer) size(ctx context.Context) (int, error) {
	rctx, cancel := d.request(ctx)
	defer cancel()
	resp, err := d.cli.Get(rctx, SizeKey(d.cfg.Token))
	if err != nil {
		return 0, err
	}
	return clusterSize(resp.Kvs)
}

// clusterSize reads the expected member count from the size key's answer:
// a positive decimal number, or the discovery errors etcd gives for a
// missing or unusable key.
func clusterSize(kvs []*mvccpb.KeyValue) (int, error) {
	if len(kvs) == 0 {
		return 0, ErrSizeNotFound
	}
	if n, err := strconv.Atoi(string(kvs[0].Value)); err == nil && n > 0 {
		return n, nil
	}
	return 0, ErrBadSizeKey
}

func (d *discoverer) members(ctx context.Context) (*registrations, int64, error) {
	rctx, cancel := d.request(ctx)
	defer cancel()
	resp, err := d.cli.Get(rctx, MembersPrefix(d.cfg.Token), client.WithPrefix())
	if err != nil {
		return nil, 0, err
	}
	regs := &registrations{prefix: MembersPrefix(d.cfg.Token)}
	for _, kv := range resp.Kvs {
		d.add(regs, string(kv.Key), string(kv.Value), kv.CreateRevision)
	}
	return regs, resp.Header.Revision, nil
}

func (d *discoverer) add(regs *registrations, key, val string, createRev int64) {
	key, val = strings.TrimSpace(key), strings.TrimSpace(val)
	if err := regs.add(key, val, createRev); err != nil {
		d.lg.Warn(err.Error(), zap.String("memberKey", key), zap.String("memberInfo", val))
		return
	}
	d.lg.Info("found peer from discovery service", zap.String("memberKey", key), zap.String("memberInfo", val))
}

// check reads the expected size and the registrations and fails with
// ErrFullCluster when size others registered before this member. Errors
// talking to the service are retried.
func (d *discoverer) check(ctx context.Context) (*registrations, int, int64, error) {
	for {
		size, err := d.size(ctx)
		if errors.Is(err, ErrSizeNotFound) || errors.Is(err, ErrBadSizeKey) {
			return nil, 0, 0, err
		}
		var regs *registrations
		var rev int64
		if err == nil {
			regs, rev, err = d.members(ctx)
		}
		if err != nil {
			if berr := d.backoff(ctx, "cluster status check", err); berr != nil {
				return nil, 0, 0, berr
			}
			continue
		}
		d.retries = 0
		self := MemberKey(d.cfg.Token, d.id)
		for i, r := range regs.list {
			if r.key == self {
				break
			}
			if i >= size-1 {
				return regs, size, rev, ErrFullCluster
			}
		}
		return regs, size, rev, nil
	}
}

func (d *discoverer) register(ctx context.Context, self string) error {
	key := MemberKey(d.cfg.Token, d.id)
	for {
		rctx, cancel := d.request(ctx)
		_, err := d.cli.Put(rctx, key, self)
		cancel()
		if err == nil {
			d.retries = 0
			d.lg.Info("register member itself successfully", zap.String("memberKey", key), zap.String("memberInfo", self))
			return nil
		}
		if berr := d.backoff(ctx, "register member itself", err); berr != nil {
			return berr
		}
	}
}

// wait watches the registrations after rev until size members are known.
// A broken or compacted watch is replaced by a fresh read.
func (d *discoverer) wait(ctx context.Context, regs *registrations, size int, rev int64) error {
	for len(regs.list) < size {
		d.lg.Info("waiting for peers from discovery service", zap.Int("cluster-size", size), zap.Int("found-peers", len(regs.list)))
		wctx, cancel := context.WithCancel(ctx)
		wch := d.cli.Watch(wctx, MembersPrefix(d.cfg.Token), client.WithPrefix(), client.WithRev(rev+1))
		broken := false
		for !broken && len(regs.list) < size {
			select {
			case <-ctx.Done():
				cancel()
				return ctx.Err()
			case wr, ok := <-wch:
				if !ok || wr.Err() != nil || wr.Canceled {
					broken = true
					continue
				}
				for _, ev := range wr.Events {
					if ev.Type != client.EventTypePut {
						continue
					}
					d.add(regs, string(ev.Kv.Key), string(ev.Kv.Value), ev.Kv.CreateRevision)
				}
				if wr.Header != nil && wr.Header.Revision > rev {
					rev = wr.Header.Revision
				}
			}
		}
		cancel()
		if broken {
			if err := ctx.Err(); err != nil {
				return err
			}
			fresh, _, frev, err := d.check(ctx)
			if err != nil && !errors.Is(err, ErrFullCluster) {
				return err
			}
			*regs, rev = *fresh, frev
		}
	}
	d.lg.Info("found all needed peers from discovery service", zap.Int("cluster-size", size), zap.Int("found-peers", len(regs.list)))
	return nil
}

type registration struct {
	key       string
	value     string // "name=peerURL,..."
	createRev int64
}

// registrations are the members registered under a token, ordered by
// create revision.
type registrations struct {
	prefix string
	list   []registration
}

func (r *registrations) add(key, val string, createRev int64) error {
	if !strings.HasPrefix(key, r.prefix+"/") {
		return errors.New("invalid peer registry key")
	}
	if !strings.Contains(val, "=") {
		return errors.New("invalid peer info returned from discovery service")
	}
	for _, m := range r.list {
		if m.key == key {
			return errors.New("found duplicate peer from discovery service")
		}
	}
	r.list = append(r.list, registration{key: key, value: val, createRev: createRev})
	sort.SliceStable(r.list, func(i, j int) bool { return r.list[i].createRev < r.list[j].createRev })
	return nil
}

// initialCluster joins the first size registrations into an
// --initial-cluster value and checks that it parses.
func (r *registrations) initialCluster(size int) (string, error) {
	n := min(size, len(r.list))
	parts := make([]string, 0, n)
	for _, m := range r.list[:n] {
		parts = append(parts, m.value)
	}
	s := strings.Join(parts, ",")
	if err := validCluster(s); err != nil {
		return s, ErrInvalidURL
	}
	return s, nil
}

// validCluster checks that s is "name=URL,..." with http(s) URLs.
func validCluster(s string) error {
	for _, part := range strings.Split(s, ",") {
		name, raw, ok := strings.Cut(part, "=")
		if !ok || name == "" {
			return fmt.Errorf("bad entry %q", part)
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("bad peer URL %q", raw)
		}
	}
	return nil
}
