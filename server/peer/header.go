package peer

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// URL paths served on the peer URLs.
const (
	pipelinePath     = "/raft"
	streamPathPrefix = "/raft/stream/"
	snapshotPath     = "/raft/snapshot"
	probingPath      = "/raft/probing"
)

// Request and response headers.
const (
	hdrClusterID         = "X-Etcd-Cluster-ID"
	hdrFrom              = "X-Server-From"
	hdrTo                = "X-Raft-To"
	hdrServerVersion     = "X-Server-Version"
	hdrMinClusterVersion = "X-Min-Cluster-Version"
	hdrPeerURLs          = "X-PeerURLs"
)

// Errors a peer reports; the first two travel as 412 response bodies and
// must keep etcd's text.
var (
	// ErrClusterIDMismatch means the remote belongs to another cluster.
	ErrClusterIDMismatch = errors.New("cluster ID mismatch")
	// ErrIncompatibleVersion means the remote's version cannot join ours.
	ErrIncompatibleVersion = errors.New("incompatible version")
	// ErrMemberRemoved is reported on Errors when a remote says this member
	// was removed from the cluster; the member should stop.
	ErrMemberRemoved = errors.New("the member has been permanently removed from the cluster")
	// errRemovedSender is Process's answer to a message from a removed member.
	errRemovedSender = errors.New("cannot process message from removed member")
)

// versionWhenAbsent is what a request without version headers claims
// (etcd v2 did not send them).
const versionWhenAbsent = "2.0.0"

// idString formats a member or cluster ID as etcd does: lowercase hex
// without padding.
func idString(id uint64) string { return strconv.FormatUint(id, 16) }

func parseID(s string) (uint64, error) { return strconv.ParseUint(s, 16, 64) }

// majorMinor is the part of a version compatibility is judged on.
type majorMinor struct{ major, minor int }

func parseMajorMinor(v string) (majorMinor, error) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 3 {
		return majorMinor{}, fmt.Errorf("malformed version %q", v)
	}
	maj, err1 := strconv.Atoi(parts[0])
	mnr, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || maj < 0 || mnr < 0 {
		return majorMinor{}, fmt.Errorf("malformed version %q", v)
	}
	return majorMinor{maj, mnr}, nil
}

func (a majorMinor) less(b majorMinor) bool {
	return a.major < b.major || (a.major == b.major && a.minor < b.minor)
}

func headerVersion(h http.Header, key string) (majorMinor, error) {
	v := h.Get(key)
	if v == "" {
		v = versionWhenAbsent
	}
	return parseMajorMinor(v)
}

// checkVersions enforces that the remote's server version is at least our
// minimum cluster version and that our server version is at least the
// remote's minimum cluster version.
func (t *Transport) checkVersions(h http.Header) error {
	remoteServer, err := headerVersion(h, hdrServerVersion)
	if err != nil {
		return err
	}
	remoteMin, err := headerVersion(h, hdrMinClusterVersion)
	if err != nil {
		return err
	}
	if remoteServer.less(t.minCluster) {
		return fmt.Errorf("remote version is too low: remote[%s]=%s, local=%s",
			h.Get(hdrFrom), h.Get(hdrServerVersion), t.cfg.ServerVersion)
	}
	if t.server.less(remoteMin) {
		return fmt.Errorf("local version is too low: remote[%s]=%s, local=%s",
			h.Get(hdrFrom), h.Get(hdrServerVersion), t.cfg.ServerVersion)
	}
	return nil
}

// checkCompatibility validates the versions and cluster ID a request
// carries and returns the error whose text becomes the 412 body.
func (t *Transport) checkCompatibility(h http.Header) error {
	if err := t.checkVersions(h); err != nil {
		t.lg.Warn("rejected peer request: incompatible version",
			zap.String("remote-peer-id", h.Get(hdrFrom)), zap.Error(err))
		return ErrIncompatibleVersion
	}
	if got := h.Get(hdrClusterID); got != idString(t.cfg.ClusterID) {
		t.lg.Warn("rejected peer request: cluster ID mismatch",
			zap.String("remote-peer-id", h.Get(hdrFrom)),
			zap.String("remote-peer-cluster-id", got),
			zap.String("local-member-cluster-id", idString(t.cfg.ClusterID)))
		return ErrClusterIDMismatch
	}
	return nil
}

// setIdentity puts the headers every outgoing request carries.
func (t *Transport) setIdentity(h http.Header) {
	h.Set(hdrFrom, idString(t.cfg.ID))
	h.Set(hdrServerVersion, t.cfg.ServerVersion)
	h.Set(hdrMinClusterVersion, t.cfg.MinClusterVersion)
	h.Set(hdrClusterID, idString(t.cfg.ClusterID))
	if len(t.cfg.URLs) > 0 {
		h.Set(hdrPeerURLs, strings.Join(t.cfg.URLs, ","))
	}
}

// preconditionError maps a 412 body back to the error the remote meant.
func preconditionError(body []byte) error {
	switch strings.TrimSuffix(string(body), "\n") {
	case ErrIncompatibleVersion.Error():
		return ErrIncompatibleVersion
	case ErrClusterIDMismatch.Error():
		return ErrClusterIDMismatch
	default:
		return fmt.Errorf("unhandled error %q when precondition failed", string(body))
	}
}

// postResult interprets the answer to a pipeline or snapshot POST.
func postResult(resp *http.Response, body []byte, u *url.URL) error {
	switch resp.StatusCode {
	case http.StatusNoContent:
		return nil
	case http.StatusPreconditionFailed:
		return preconditionError(body)
	case http.StatusForbidden:
		return ErrMemberRemoved
	default:
		return fmt.Errorf("unexpected http status %s while posting to %q",
			http.StatusText(resp.StatusCode), u.String())
	}
}

// withPath returns base with its path replaced.
func withPath(base url.URL, p string) string {
	base.Path = p
	base.RawPath = ""
	return base.String()
}
