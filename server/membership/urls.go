package membership

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
)

// ErrNoPeerURLs is returned by ParsePeerURLs for an empty list.
var ErrNoPeerURLs = errors.New("no valid URLs given")

// ParsePeerURLs checks the peer URLs of a member being added and returns
// them in the form etcd stores: trimmed, normalized by url.URL.String and
// sorted. The rules are etcd's: the scheme is http, https, unix or unixs;
// http(s) URLs name a host:port and carry no path; unix(s) URLs are taken
// as they are (the host is the socket's path). The error says which rule a
// URL broke; callers answer etcd's "given member URLs are invalid".
func ParsePeerURLs(raw []string) ([]string, error) {
	if len(raw) == 0 {
		return nil, ErrNoPeerURLs
	}
	out := make([]string, len(raw))
	for i, s := range raw {
		u, err := parsePeerURL(strings.TrimSpace(s))
		if err != nil {
			return nil, err
		}
		out[i] = u.String()
	}
	sort.Strings(out)
	return out, nil
}

func parsePeerURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "http", "https":
		if _, _, err := net.SplitHostPort(u.Host); err != nil {
			return nil, fmt.Errorf(`URL address does not have the form "host:port": %s`, s)
		}
		if u.Path != "" {
			return nil, fmt.Errorf("URL must not contain a path: %s", s)
		}
	case "unix", "unixs":
	default:
		return nil, fmt.Errorf("URL scheme must be http, https, unix, or unixs: %s", s)
	}
	return u, nil
}
