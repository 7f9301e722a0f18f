package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// DNS SRV bootstrap (--discovery-srv, --discovery-srv-name), as etcd does
// it: the initial cluster is read from the SRV records
// _etcd-server-ssl[-NAME]._tcp.DOMAIN (https peers) and
// _etcd-server[-NAME]._tcp.DOMAIN (http peers). A record whose target
// resolves to one of this member's advertised peer URLs is this member;
// the others get placeholder names ("0", "1", ...), which only serve to
// make the list parse: member IDs come from the peer URLs.

// The lookups are variables so that tests need no DNS server.
var (
	lookupSRV      = net.LookupSRV
	resolveTCPAddr = net.ResolveTCPAddr
)

// ClusterFromDNS returns the initial cluster ("name=url,...") that the
// SRV records of --discovery-srv describe.
func (c *Config) ClusterFromDNS(lg *zap.Logger) (string, error) {
	if lg == nil {
		lg = zap.NewNop()
	}
	suffix := ""
	if c.DNSClusterServiceName != "" {
		suffix = "-" + c.DNSClusterServiceName
	}
	var parts []string
	var errs []error
	names := 0
	for _, s := range []struct{ scheme, service string }{{"https", "etcd-server-ssl" + suffix}, {"http", "etcd-server" + suffix}} {
		got, err := c.srvCluster(s.scheme, s.service, &names)
		lg.Info("get cluster for "+strings.TrimSuffix(s.service, suffix)+" SRV",
			zap.String("service-scheme", s.scheme), zap.String("service-name", s.service),
			zap.String("server-name", c.Name), zap.String("discovery-srv", c.DNSCluster),
			zap.Strings("advertise-peer-urls", urlStrings(c.AdvertisePeerUrls)),
			zap.Strings("found-cluster", got), zap.Error(err))
		parts = append(parts, got...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(parts) == 0 {
		err := errors.Join(errs...)
		lg.Warn("failed to resolve during SRV discovery", zap.Error(err))
		return "", err
	}
	for _, p := range parts {
		lg.Info("got bootstrap from DNS for etcd-server", zap.String("node", p))
	}
	cluster := strings.Join(parts, ",")
	m, err := parseURLsMap(cluster)
	if err != nil {
		return "", err
	}
	if _, ok := m[c.Name]; !ok {
		return "", fmt.Errorf("cannot find local etcd member %q in SRV records", c.Name)
	}
	return cluster, nil
}

// srvCluster reads one SRV service into "name=scheme://target:port"
// entries; names counts the placeholder names handed out so far.
func (c *Config) srvCluster(scheme, service string, names *int) ([]string, error) {
	self := map[string]url.URL{}
	for _, u := range c.AdvertisePeerUrls {
		addr, err := resolveTCPAddr("tcp", u.Host)
		if err != nil {
			return nil, err
		}
		self[addr.String()] = u
	}
	_, records, err := lookupSRV(service, "tcp", c.DNSCluster)
	if err != nil {
		return nil, fmt.Errorf("error querying DNS SRV records for _%s %w", service, err)
	}
	var parts []string
	var lastErr error
	for _, r := range records {
		port := strconv.Itoa(int(r.Port))
		addr, err := resolveTCPAddr("tcp", net.JoinHostPort(r.Target, port))
		if err != nil {
			lastErr = err
			continue
		}
		// SRV targets end with a dot; URLs do not.
		host := net.JoinHostPort(strings.TrimSuffix(r.Target, "."), port)
		name := c.Name
		own, isSelf := self[addr.String()]
		if !isSelf {
			name = strconv.Itoa(*names)
			*names++
		}
		if isSelf && own.Scheme != scheme {
			lastErr = fmt.Errorf("bootstrap at %s from DNS for %s has scheme mismatch with expected peer %s", scheme+"://"+host, service, own.String())
			continue
		}
		parts = append(parts, name+"="+scheme+"://"+host)
	}
	if len(parts) == 0 && lastErr != nil {
		return nil, fmt.Errorf("error querying DNS SRV records for _%s %w", service, lastErr)
	}
	return parts, nil
}
