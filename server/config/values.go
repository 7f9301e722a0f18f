package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// parseURLs parses a list of member URLs the way etcd does: each must be
// http(s)://host:port with no path, or unix(s)://path; the result is sorted
// so that equal sets compare equal.
func parseURLs(strs []string) ([]url.URL, error) {
	if len(strs) == 0 {
		return nil, errors.New("no valid URLs given")
	}
	out := make([]url.URL, 0, len(strs))
	for _, in := range strs {
		in = strings.TrimSpace(in)
		u, err := url.Parse(in)
		if err != nil {
			return nil, err
		}
		if err := checkURLShape(u, in); err != nil {
			return nil, err
		}
		out = append(out, *u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

func checkURLShape(u *url.URL, in string) error {
	switch u.Scheme {
	case "http", "https":
		_, port, err := net.SplitHostPort(u.Host)
		if err != nil {
			return fmt.Errorf(`URL address does not have the form "host:port": %s`, in)
		}
		// url.Parse takes any digits; etcd would only fail when it binds.
		if _, err := strconv.ParseUint(port, 10, 16); port != "" && err != nil {
			return fmt.Errorf("address %s: invalid port in %s", port, in)
		}
		if u.Path != "" {
			return fmt.Errorf("URL must not contain a path: %s", in)
		}
	case "unix", "unixs":
	default:
		return fmt.Errorf("URL scheme must be http, https, unix, or unixs: %s", in)
	}
	return nil
}

// parseUniqueURLs parses a comma-separated URL list and drops repeats.
func parseUniqueURLs(s string) ([]url.URL, error) {
	us, err := parseURLs(strings.Split(s, ","))
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(us))
	out := us[:0]
	for _, u := range us {
		if !seen[u.String()] {
			seen[u.String()] = true
			out = append(out, u)
		}
	}
	return out, nil
}

func mustURLs(s string) []url.URL {
	us, err := parseUniqueURLs(s)
	if err != nil {
		panic(fmt.Sprintf("config: bad built-in URL %q: %v", s, err))
	}
	return us
}

func urlStrings(us []url.URL) []string {
	out := make([]string, len(us))
	for i := range us {
		out[i] = us[i].String()
	}
	return out
}

// SplitNamedURLs splits a "name=url,name=url" list (--initial-cluster) by
// name, the URLs unparsed; a name may repeat to give a member several URLs.
// Empty items are skipped, as in etcd.
func SplitNamedURLs(s string) map[string][]string {
	raw := make(map[string][]string)
	for _, item := range strings.Split(s, ",") {
		if item == "" {
			continue
		}
		name, u, _ := strings.Cut(item, "=")
		raw[name] = append(raw[name], u)
	}
	return raw
}

// parseURLsMap parses a "name=url,name=url" list (SplitNamedURLs).
func parseURLsMap(s string) (map[string][]url.URL, error) {
	raw := SplitNamedURLs(s)
	out := make(map[string][]url.URL, len(raw))
	for name, strs := range raw {
		us, err := parseURLs(strs)
		if err != nil {
			return nil, err
		}
		out[name] = us
	}
	return out, nil
}

// urlsMapString renders a name => URLs map as etcd does: sorted name=url
// pairs joined by commas.
func urlsMapString(m map[string][]url.URL) string {
	var pairs []string
	for name, us := range m {
		for _, u := range us {
			pairs = append(pairs, name+"="+u.String())
		}
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

// listFlag is a flag.Value for a comma-separated list; a later occurrence
// replaces the earlier one. parse turns a value into the list kept
// (parseUniqueURLs, splitList, splitSet, corsOrigins); strs gives the
// items back as text.
type listFlag[T any] struct {
	dst   *[]T
	parse func(s string) ([]T, error)
	strs  func([]T) []string
}

func (f listFlag[T]) Set(s string) error {
	v, err := f.parse(s)
	if err != nil {
		return err
	}
	*f.dst = v
	return nil
}

func (f listFlag[T]) String() string {
	if f.dst == nil {
		return ""
	}
	return strings.Join(f.strs(*f.dst), ",")
}

// sameStrings is the strs of a list of strings.
func sameStrings(s []string) []string { return s }

// splitList keeps the items in the given order.
func splitList(s string) ([]string, error) { return strings.Split(s, ","), nil }

// splitSet keeps the items as a set, sorted (etcd keeps such lists in a map
// and reads them back sorted).
func splitSet(s string) ([]string, error) { return uniqueSorted(strings.Split(s, ",")), nil }

func uniqueSorted(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := make([]string, 0, len(in))
	for _, v := range in {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// choiceFlag accepts only the listed values; etcd's message is bare
// "invalid value".
type choiceFlag struct {
	dst    *string
	valids []string
}

func (f choiceFlag) Set(s string) error {
	for _, v := range f.valids {
		if s == v {
			*f.dst = s
			return nil
		}
	}
	return errors.New("invalid value")
}

func (f choiceFlag) String() string {
	if f.dst == nil {
		return ""
	}
	return *f.dst
}

// choicesFlag is a comma-separated list of allowed values (etcd's
// --v2-deprecation), stored sorted.
type choicesFlag struct {
	dst    *string
	valids []string
}

func (f choicesFlag) Set(s string) error {
	vs := strings.Split(s, ",")
	for _, v := range vs {
		if !contains(f.valids, v) {
			return fmt.Errorf("invalid value %q", v)
		}
	}
	sort.Strings(vs)
	*f.dst = strings.Join(vs, ",")
	return nil
}

func (f choicesFlag) String() string {
	if f.dst == nil {
		return ""
	}
	return *f.dst
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// uint32Flag parses like strconv.ParseUint(s, 0, 32).
type uint32Flag struct{ dst *uint32 }

func (f uint32Flag) Set(s string) error {
	v, err := strconv.ParseUint(s, 0, 32)
	*f.dst = uint32(v)
	return err
}

func (f uint32Flag) String() string {
	if f.dst == nil {
		return "0"
	}
	return strconv.FormatUint(uint64(*f.dst), 10)
}

// ignoredFlag stands for flags etcd still accepts and ignores (relics of
// etcd v2). It behaves as a boolean so that "--snapshot" alone parses.
type ignoredFlag struct{}

func (ignoredFlag) IsBoolFlag() bool { return true }
func (ignoredFlag) Set(string) error { return nil }
func (ignoredFlag) String() string   { return "" }

// corsOrigins reads etcd's --cors: "*" or a list of origin URLs, kept as
// a sorted set.
func corsOrigins(s string) ([]string, error) {
	if s == "*" {
		return []string{"*"}, nil
	}
	us, err := parseUniqueURLs(s)
	if err != nil {
		return nil, err
	}
	return uniqueSorted(urlStrings(us)), nil
}
