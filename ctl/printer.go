package ctl

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/pkg/bytesize"
)

// printer writes responses in one of etcdctl's output formats.
type printer struct {
	w         io.Writer
	format    string
	hex       bool
	valueOnly bool
}

func newPrinter(w io.Writer, format string, isHex bool) (*printer, error) {
	switch format {
	case "simple", "json", "fields", "table", "protobuf":
		return &printer{w: w, format: format, hex: isHex}, nil
	}
	return nil, fail(exitBadFeature, "unsupported output format %q", format)
}

func (p *printer) unsupported() error {
	return fail(exitBadFeature, "%s not supported as output format", p.format)
}

func (p *printer) println(a ...any)                        { fmt.Fprintln(p.w, a...) }
func (p *printer) printf(f string, a ...any)               { fmt.Fprintf(p.w, f, a...) }
func (p *printer) json(v any) error                        { return writeJSON(p.w, v) }
func (p *printer) pb(m proto.Message) error                { return writePB(p.w, m) }
func (p *printer) fieldHdr(h *pb.ResponseHeader)           { fieldsHeader(p.w, p.hex, h) }
func (p *printer) fieldKV(pfx string, kv *mvccpb.KeyValue) { fieldsKV(p.w, p.hex, pfx, kv) }

// pbHeader is etcdctl's protobuf output of its client-side lease
// responses: they embed the response header, so only the header is
// marshalled.
func (p *printer) pbHeader(h *pb.ResponseHeader) error {
	if h == nil {
		h = &pb.ResponseHeader{}
	}
	return p.pb(h)
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, string(b))
	return nil
}

func writePB(w io.Writer, m proto.Message) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// hexBytes renders b as \x-escaped hex pairs.
func hexBytes(b []byte) string {
	s := hex.EncodeToString(b)
	var sb strings.Builder
	for i := 0; i < len(s); i += 2 {
		sb.WriteString(`\x`)
		sb.WriteString(s[i : i+2])
	}
	return sb.String()
}

func (p *printer) kv(kv *mvccpb.KeyValue) {
	k, v := string(kv.GetKey()), string(kv.GetValue())
	if p.hex {
		k, v = hexBytes(kv.GetKey()), hexBytes(kv.GetValue())
	}
	if !p.valueOnly {
		p.println(k)
	}
	p.println(v)
}

func fieldsKV(w io.Writer, isHex bool, pfx string, kv *mvccpb.KeyValue) {
	fmt.Fprintf(w, "\"%sKey\" : %q\n", pfx, string(kv.GetKey()))
	fmt.Fprintf(w, "\"%sCreateRevision\" : %d\n", pfx, kv.GetCreateRevision())
	fmt.Fprintf(w, "\"%sModRevision\" : %d\n", pfx, kv.GetModRevision())
	fmt.Fprintf(w, "\"%sVersion\" : %d\n", pfx, kv.GetVersion())
	fmt.Fprintf(w, "\"%sValue\" : %q\n", pfx, string(kv.GetValue()))
	if isHex {
		fmt.Fprintf(w, "\"%sLease\" : %016x\n", pfx, kv.GetLease())
	} else {
		fmt.Fprintf(w, "\"%sLease\" : %d\n", pfx, kv.GetLease())
	}
}

func fieldsHeader(w io.Writer, isHex bool, h *pb.ResponseHeader) {
	if isHex {
		fmt.Fprintf(w, "\"ClusterID\" : %x\n", h.GetClusterId())
		fmt.Fprintf(w, "\"MemberID\" : %x\n", h.GetMemberId())
	} else {
		fmt.Fprintf(w, "\"ClusterID\" : %d\n", h.GetClusterId())
		fmt.Fprintf(w, "\"MemberID\" : %d\n", h.GetMemberId())
	}
	if h.GetRevision() > 0 {
		fmt.Fprintf(w, "\"Revision\" : %d\n", h.GetRevision())
	}
	fmt.Fprintf(w, "\"RaftTerm\" : %d\n", h.GetRaftTerm())
}

// --- KV ---

func (p *printer) get(r *pb.RangeResponse) error {
	switch p.format {
	case "simple":
		for _, kv := range r.GetKvs() {
			p.kv(kv)
		}
	case "fields":
		p.fieldHdr(r.GetHeader())
		for _, kv := range r.GetKvs() {
			p.fieldKV("", kv)
		}
		p.printf("\"More\" : %v\n", r.GetMore())
		p.printf("\"Count\" : %d\n", r.GetCount())
	case "json":
		return p.json(r)
	case "protobuf":
		return p.pb(r)
	default:
		return p.unsupported()
	}
	return nil
}

func (p *printer) put(r *pb.PutResponse) error {
	switch p.format {
	case "simple":
		p.println("OK")
		if r.GetPrevKv() != nil {
			p.kv(r.GetPrevKv())
		}
	case "fields":
		p.fieldHdr(r.GetHeader())
		if r.GetPrevKv() != nil {
			p.fieldKV("Prev", r.GetPrevKv())
		}
	case "json":
		return p.json(r)
	case "protobuf":
		return p.pb(r)
	default:
		return p.unsupported()
	}
	return nil
}

func (p *printer) del(r *pb.DeleteRangeResponse) error {
	switch p.format {
	case "simple":
		p.println(r.GetDeleted())
		for _, kv := range r.GetPrevKvs() {
			p.kv(kv)
		}
	case "fields":
		p.fieldHdr(r.GetHeader())
		p.printf("\"Deleted\" : %d\n", r.GetDeleted())
		for _, kv := range r.GetPrevKvs() {
			p.fieldKV("Prev", kv)
		}
	case "json":
		return p.json(r)
	case "protobuf":
		return p.pb(r)
	default:
		return p.unsupported()
	}
	return nil
}

// txnJSON mirrors etcdctl's JSON shape of a transaction response.
type txnJSON struct {
	Header    *pb.ResponseHeader `json:"header,omitempty"`
	Succeeded bool               `json:"succeeded,omitempty"`
	Responses []respOpJSON       `json:"responses,omitempty"`
}

type respOpJSON struct {
	Response respOpInner `json:"Response"`
}

type respOpInner struct {
	ResponseRange       *pb.RangeResponse       `json:"response_range,omitempty"`
	ResponsePut         *pb.PutResponse         `json:"response_put,omitempty"`
	ResponseDeleteRange *pb.DeleteRangeResponse `json:"response_delete_range,omitempty"`
	ResponseTxn         *txnJSON                `json:"response_txn,omitempty"`
}

func toTxnJSON(r *pb.TxnResponse) *txnJSON {
	out := &txnJSON{Header: r.GetHeader(), Succeeded: r.GetSucceeded()}
	for _, op := range r.GetResponses() {
		var in respOpInner
		switch v := op.GetResponse().(type) {
		case *pb.ResponseOp_ResponseRange:
			in.ResponseRange = v.ResponseRange
		case *pb.ResponseOp_ResponsePut:
			in.ResponsePut = v.ResponsePut
		case *pb.ResponseOp_ResponseDeleteRange:
			in.ResponseDeleteRange = v.ResponseDeleteRange
		case *pb.ResponseOp_ResponseTxn:
			in.ResponseTxn = toTxnJSON(v.ResponseTxn)
		}
		out.Responses = append(out.Responses, respOpJSON{in})
	}
	return out
}

func (p *printer) txn(r *pb.TxnResponse) error {
	switch p.format {
	case "simple":
		if r.GetSucceeded() {
			p.println("SUCCESS")
		} else {
			p.println("FAILURE")
		}
		for _, op := range r.GetResponses() {
			p.println("")
			switch v := op.GetResponse().(type) {
			case *pb.ResponseOp_ResponseDeleteRange:
				_ = p.del(v.ResponseDeleteRange)
			case *pb.ResponseOp_ResponsePut:
				_ = p.put(v.ResponsePut)
			case *pb.ResponseOp_ResponseRange:
				_ = p.get(v.ResponseRange)
			default:
				p.printf("unexpected response %+v\n", op)
			}
		}
	case "fields":
		p.fieldHdr(r.GetHeader())
		p.printf("\"Succeeded\" : %v\n", r.GetSucceeded())
		for _, op := range r.GetResponses() {
			switch v := op.GetResponse().(type) {
			case *pb.ResponseOp_ResponseDeleteRange:
				_ = p.del(v.ResponseDeleteRange)
			case *pb.ResponseOp_ResponsePut:
				_ = p.put(v.ResponsePut)
			case *pb.ResponseOp_ResponseRange:
				_ = p.get(v.ResponseRange)
			default:
				p.printf("\"Unknown\" : %q\n", fmt.Sprintf("%+v", v))
			}
		}
	case "json":
		return p.json(toTxnJSON(r))
	case "protobuf":
		return p.pb(r)
	default:
		return p.unsupported()
	}
	return nil
}

// watchJSON mirrors the JSON of etcd's client WatchResponse.
type watchJSON struct {
	Header          *pb.ResponseHeader
	Events          []*mvccpb.Event
	CompactRevision int64
	Canceled        bool
	Created         bool
	CancelReason    string
}

func (p *printer) watch(r *client.WatchResponse) error {
	evs := make([]*mvccpb.Event, len(r.Events))
	for i, e := range r.Events {
		evs[i] = (*mvccpb.Event)(e)
	}
	switch p.format {
	case "simple":
		for _, e := range evs {
			p.println(e.GetType())
			if e.GetPrevKv() != nil {
				p.kv(e.GetPrevKv())
			}
			p.kv(e.GetKv())
		}
	case "fields":
		p.fieldHdr(r.Header)
		for _, e := range evs {
			p.printf("\"Type\" : %v\n", e.GetType())
			if e.GetPrevKv() != nil {
				p.fieldKV("Prev", e.GetPrevKv())
			}
			p.fieldKV("", e.GetKv())
		}
	case "json":
		return p.json(watchJSON{r.Header, evs, r.CompactRevision, r.Canceled, r.Created, cancelReason(r)})
	case "protobuf":
		return p.pb(&pb.WatchResponse{Header: r.Header, Events: evs, CompactRevision: r.CompactRevision, Canceled: r.Canceled, Created: r.Created})
	default:
		return p.unsupported()
	}
	return nil
}

// --- leases ---

func (p *printer) leaseIDField(id client.LeaseID) {
	if p.hex {
		p.printf("\"ID\" : %016x\n", int64(id))
	} else {
		p.printf("\"ID\" : %d\n", int64(id))
	}
}

func (p *printer) grant(r *client.LeaseGrantResponse) error {
	switch p.format {
	case "simple":
		p.printf("lease %016x granted with TTL(%ds)\n", int64(r.ID), r.TTL)
	case "fields":
		p.fieldHdr(r.ResponseHeader)
		p.leaseIDField(r.ID)
		p.printf("\"TTL\" : %d\n", r.TTL)
	case "json":
		return p.json(r)
	case "protobuf":
		return p.pbHeader(r.ResponseHeader)
	default:
		return p.unsupported()
	}
	return nil
}

func (p *printer) revoke(id client.LeaseID, r *pb.LeaseRevokeResponse) error {
	switch p.format {
	case "simple":
		p.printf("lease %016x revoked\n", int64(id))
	case "fields":
		p.fieldHdr(r.GetHeader())
	case "json":
		return p.json(r)
	case "protobuf":
		return p.pb(r)
	default:
		return p.unsupported()
	}
	return nil
}

func (p *printer) keepAlive(r *client.LeaseKeepAliveResponse) error {
	switch p.format {
	case "simple":
		p.printf("lease %016x keepalived with TTL(%d)\n", int64(r.ID), r.TTL)
	case "fields":
		p.fieldHdr(r.ResponseHeader)
		p.leaseIDField(r.ID)
		p.printf("\"TTL\" : %d\n", r.TTL)
	case "json":
		return p.json(r)
	case "protobuf":
		return p.pbHeader(r.ResponseHeader)
	default:
		return p.unsupported()
	}
	return nil
}

// ttlJSON mirrors the JSON of etcd's client LeaseTimeToLiveResponse.
type ttlJSON struct {
	*pb.ResponseHeader
	ID         int64    `json:"id"`
	TTL        int64    `json:"ttl"`
	GrantedTTL int64    `json:"granted-ttl"`
	Keys       [][]byte `json:"keys"`
}

func (p *printer) timeToLive(r *client.LeaseTimeToLiveResponse, keys bool) error {
	switch p.format {
	case "simple":
		if r.GrantedTTL == 0 && r.TTL == -1 {
			p.printf("lease %016x already expired\n", int64(r.ID))
			return nil
		}
		txt := fmt.Sprintf("lease %016x granted with TTL(%ds), remaining(%ds)", int64(r.ID), r.GrantedTTL, r.TTL)
		if keys {
			ks := make([]string, len(r.Keys))
			for i, k := range r.Keys {
				ks[i] = string(k)
			}
			txt += fmt.Sprintf(", attached keys(%v)", ks)
		}
		p.println(txt)
	case "fields":
		p.fieldHdr(r.ResponseHeader)
		p.leaseIDField(r.ID)
		p.printf("\"TTL\" : %d\n", r.TTL)
		p.printf("\"GrantedTTL\" : %d\n", r.GrantedTTL)
		for _, k := range r.Keys {
			p.printf("\"Key\" : %q\n", string(k))
		}
	case "json":
		return p.json(ttlJSON{r.ResponseHeader, int64(r.ID), r.TTL, r.GrantedTTL, r.Keys})
	case "protobuf":
		return p.pbHeader(r.ResponseHeader)
	default:
		return p.unsupported()
	}
	return nil
}

type leaseStatusJSON struct {
	ID int64 `json:"id"`
}

type leasesJSON struct {
	*pb.ResponseHeader
	Leases []leaseStatusJSON `json:"leases"`
}

func (p *printer) leases(r *client.LeaseLeasesResponse) error {
	switch p.format {
	case "simple":
		p.printf("found %d leases\n", len(r.Leases))
		for _, l := range r.Leases {
			p.printf("%016x\n", int64(l.ID))
		}
	case "fields":
		p.fieldHdr(r.ResponseHeader)
		for _, l := range r.Leases {
			p.leaseIDField(l.ID)
		}
	case "json":
		out := leasesJSON{ResponseHeader: r.ResponseHeader, Leases: []leaseStatusJSON{}}
		for _, l := range r.Leases {
			out.Leases = append(out.Leases, leaseStatusJSON{int64(l.ID)})
		}
		return p.json(out)
	case "protobuf":
		return p.pbHeader(r.ResponseHeader)
	default:
		return p.unsupported()
	}
	return nil
}

// --- cluster ---

// hexHeader and hexMember are the --hex JSON shapes of member responses.
type hexHeader struct {
	ClusterID string `json:"cluster_id"`
	MemberID  string `json:"member_id"`
	Revision  int64  `json:"revision,omitempty"`
	RaftTerm  uint64 `json:"raft_term,omitempty"`
}

type hexMember struct {
	ID         string   `json:"ID"`
	Name       string   `json:"name,omitempty"`
	PeerURLs   []string `json:"peerURLs,omitempty"`
	ClientURLs []string `json:"clientURLs,omitempty"`
	IsLearner  bool     `json:"isLearner,omitempty"`
}

func toHexHeader(h *pb.ResponseHeader) *hexHeader {
	if h == nil {
		return nil
	}
	return &hexHeader{fmt.Sprintf("%x", h.ClusterId), fmt.Sprintf("%x", h.MemberId), h.Revision, h.RaftTerm}
}

func toHexMember(m *pb.Member) *hexMember {
	if m == nil {
		return nil
	}
	return &hexMember{fmt.Sprintf("%x", m.ID), m.Name, m.PeerURLs, m.ClientURLs, m.IsLearner}
}

func toHexMembers(ms []*pb.Member) []*hexMember {
	out := make([]*hexMember, len(ms))
	for i, m := range ms {
		out[i] = toHexMember(m)
	}
	return out
}

type hexMembersJSON struct {
	Header  *hexHeader   `json:"header"`
	Members []*hexMember `json:"members"`
}

// memberJSON prints a member response, in hex form with --hex.
func (p *printer) memberJSON(m proto.Message, h *pb.ResponseHeader, ms []*pb.Member) error {
	if !p.hex {
		return p.json(m)
	}
	if a, ok := m.(*pb.MemberAddResponse); ok {
		return p.json(struct {
			Header  *hexHeader   `json:"header"`
			Member  *hexMember   `json:"member"`
			Members []*hexMember `json:"members"`
		}{toHexHeader(h), toHexMember(a.Member), toHexMembers(ms)})
	}
	return p.json(hexMembersJSON{toHexHeader(h), toHexMembers(ms)})
}

func memberRows(r *pb.MemberListResponse) (hdr []string, rows [][]string) {
	hdr = []string{"ID", "Status", "Name", "Peer Addrs", "Client Addrs", "Is Learner"}
	for _, m := range r.GetMembers() {
		status := "started"
		if m.Name == "" {
			status = "unstarted"
		}
		rows = append(rows, []string{
			fmt.Sprintf("%x", m.ID), status, m.Name,
			strings.Join(m.PeerURLs, ","), strings.Join(m.ClientURLs, ","),
			strconv.FormatBool(m.IsLearner),
		})
	}
	return hdr, rows
}

func (p *printer) memberList(r *pb.MemberListResponse) error {
	switch p.format {
	case "simple":
		_, rows := memberRows(r)
		for _, row := range rows {
			p.println(strings.Join(row, ", "))
		}
	case "fields":
		p.fieldHdr(r.GetHeader())
		for _, m := range r.GetMembers() {
			if p.hex {
				p.printf("\"ID\" : %x\n", m.GetID())
			} else {
				p.printf("\"ID\" : %d\n", m.GetID())
			}
			p.printf("\"Name\" : %q\n", m.GetName())
			for _, u := range m.GetPeerURLs() {
				p.printf("\"PeerURL\" : %q\n", u)
			}
			for _, u := range m.GetClientURLs() {
				p.printf("\"ClientURL\" : %q\n", u)
			}
			p.printf("\"IsLearner\" : %v\n", m.GetIsLearner())
			p.println()
		}
	case "table":
		hdr, rows := memberRows(r)
		renderTable(p.w, hdr, rows)
	case "json":
		return p.memberJSON(r, r.GetHeader(), r.GetMembers())
	case "protobuf":
		return p.pb(r)
	}
	return nil
}

// memberChange prints member add/remove/update/promote. simple is the
// line to print in the simple format.
func (p *printer) memberChange(m proto.Message, h *pb.ResponseHeader, ms []*pb.Member, simple string) error {
	switch p.format {
	case "simple":
		p.println(simple)
	case "json":
		return p.memberJSON(m, h, ms)
	case "protobuf":
		return p.pb(m)
	default:
		return p.unsupported()
	}
	return nil
}

// --- maintenance ---

func (p *printer) alarm(r *pb.AlarmResponse) error {
	switch p.format {
	case "simple":
		for _, a := range r.GetAlarms() {
			p.printf("%+v\n", a)
		}
	case "fields":
		p.fieldHdr(r.GetHeader())
		for _, a := range r.GetAlarms() {
			if p.hex {
				p.printf("\"MemberID\" : %x\n", a.GetMemberID())
			} else {
				p.printf("\"MemberID\" : %d\n", a.GetMemberID())
			}
			p.printf("\"AlarmType\" : %v\n", a.GetAlarm())
			p.println()
		}
	case "json":
		return p.json(r)
	case "protobuf":
		return p.pb(r)
	default:
		return p.unsupported()
	}
	return nil
}

type epHealth struct {
	Ep     string `json:"endpoint"`
	Health bool   `json:"health"`
	Took   string `json:"took"`
	Error  string `json:"error,omitempty"`
}

type epStatus struct {
	Ep   string             `json:"Endpoint"`
	Resp *pb.StatusResponse `json:"Status"`
}

type epHashKV struct {
	Ep   string             `json:"Endpoint"`
	Resp *pb.HashKVResponse `json:"HashKV"`
}

func (p *printer) epHealth(hs []epHealth, stderr io.Writer) error {
	switch p.format {
	case "simple":
		for _, h := range hs {
			if h.Error == "" {
				p.printf("%s is healthy: successfully committed proposal: took = %v\n", h.Ep, h.Took)
			} else {
				fmt.Fprintf(stderr, "%s is unhealthy: failed to commit proposal: %v\n", h.Ep, h.Error)
			}
		}
	case "fields":
		for _, h := range hs {
			p.printf("\"Endpoint\" : %q\n", h.Ep)
			p.printf("\"Health\" : %v\n", h.Health)
			p.printf("\"Took\" : %s\n", h.Took)
			p.printf("\"Error\" : %s\n", h.Error)
			p.println()
		}
	case "table":
		var rows [][]string
		for _, h := range hs {
			rows = append(rows, []string{h.Ep, strconv.FormatBool(h.Health), h.Took, h.Error})
		}
		renderTable(p.w, []string{"endpoint", "health", "took", "error"}, rows)
	case "json":
		return p.json(hs)
	default:
		return p.unsupported()
	}
	return nil
}

func statusRows(ss []epStatus) (hdr []string, rows [][]string) {
	hdr = []string{"endpoint", "ID", "version", "storage version", "db size", "in use", "percentage not in use", "quota",
		"is leader", "is learner", "raft term", "raft index", "raft applied index", "errors",
		"downgrade target version", "downgrade enabled"}
	for _, s := range ss {
		r := s.Resp
		notInUse := 0
		if r.GetDbSize() > 0 {
			notInUse = int(100 - r.GetDbSizeInUse()*100/r.GetDbSize())
		}
		rows = append(rows, []string{
			s.Ep,
			fmt.Sprintf("%x", r.GetHeader().GetMemberId()),
			r.GetVersion(),
			r.GetStorageVersion(),
			bytesize.SI(uint64(r.GetDbSize())),
			bytesize.SI(uint64(r.GetDbSizeInUse())),
			fmt.Sprintf("%d%%", notInUse),
			bytesize.SI(uint64(r.GetDbSizeQuota())),
			fmt.Sprint(r.GetLeader() == r.GetHeader().GetMemberId()),
			fmt.Sprint(r.GetIsLearner()),
			fmt.Sprint(r.GetRaftTerm()),
			fmt.Sprint(r.GetRaftIndex()),
			fmt.Sprint(r.GetRaftAppliedIndex()),
			strings.Join(r.GetErrors(), ", "),
			r.GetDowngradeInfo().GetTargetVersion(),
			strconv.FormatBool(r.GetDowngradeInfo().GetEnabled()),
		})
	}
	return hdr, rows
}

func (p *printer) epStatus(ss []epStatus) error {
	switch p.format {
	case "simple":
		_, rows := statusRows(ss)
		for _, row := range rows {
			p.println(strings.Join(row, ", "))
		}
	case "fields":
		for _, s := range ss {
			r := s.Resp
			p.fieldHdr(r.GetHeader())
			p.printf("\"Version\" : %q\n", r.GetVersion())
			p.printf("\"StorageVersion\" : %q\n", r.GetStorageVersion())
			p.printf("\"DBSize\" : %d\n", r.GetDbSize())
			p.printf("\"DBSizeInUse\" : %d\n", r.GetDbSizeInUse())
			p.printf("\"DBSizeQuota\" : %d\n", r.GetDbSizeQuota())
			p.printf("\"Leader\" : %d\n", r.GetLeader())
			p.printf("\"IsLearner\" : %v\n", r.GetIsLearner())
			p.printf("\"RaftIndex\" : %d\n", r.GetRaftIndex())
			p.printf("\"RaftAppliedIndex\" : %d\n", r.GetRaftAppliedIndex())
			p.printf("\"Errors\" : %v\n", r.GetErrors())
			p.printf("\"Endpoint\" : %q\n", s.Ep)
			p.printf("\"DowngradeTargetVersion\" : %q\n", r.GetDowngradeInfo().GetTargetVersion())
			p.printf("\"DowngradeEnabled\" : %v\n", r.GetDowngradeInfo().GetEnabled())
			p.println()
		}
	case "table":
		hdr, rows := statusRows(ss)
		renderTable(p.w, hdr, rows)
	case "json":
		return p.json(ss)
	default:
		return p.unsupported()
	}
	return nil
}

func (p *printer) epHashKV(hs []epHashKV) error {
	rows := make([][]string, 0, len(hs))
	for _, h := range hs {
		rows = append(rows, []string{h.Ep, fmt.Sprint(h.Resp.GetHash()), fmt.Sprint(h.Resp.GetHashRevision())})
	}
	switch p.format {
	case "simple":
		for _, row := range rows {
			p.println(strings.Join(row, ", "))
		}
	case "fields":
		for _, h := range hs {
			p.fieldHdr(h.Resp.GetHeader())
			p.printf("\"Endpoint\" : %q\n", h.Ep)
			p.printf("\"Hash\" : %d\n", h.Resp.GetHash())
			p.printf("\"HashRevision\" : %d\n", h.Resp.GetHashRevision())
			p.println()
		}
	case "table":
		renderTable(p.w, []string{"endpoint", "hash", "hash_revision"}, rows)
	case "json":
		return p.json(hs)
	default:
		return p.unsupported()
	}
	return nil
}

// renderTable draws hdr and rows as etcdctl's table format does: boxed,
// headers upper-cased and centred, cells right-aligned.
func renderTable(w io.Writer, hdr []string, rows [][]string) {
	width := make([]int, len(hdr))
	head := make([]string, len(hdr))
	for i, h := range hdr {
		head[i] = strings.ToUpper(strings.ReplaceAll(h, "_", " "))
		width[i] = utf8.RuneCountInString(head[i])
	}
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	line := func(l, m, r string) {
		b.WriteString(l)
		for i, n := range width {
			if i > 0 {
				b.WriteString(m)
			}
			b.WriteString(strings.Repeat("─", n+2))
		}
		b.WriteString(r + "\n")
	}
	line("┌", "┬", "┐")
	b.WriteString("│")
	for i, h := range head {
		pad := width[i] - utf8.RuneCountInString(h)
		left := pad / 2
		b.WriteString(" " + strings.Repeat(" ", left) + h + strings.Repeat(" ", pad-left) + " │")
	}
	b.WriteByte('\n')
	line("├", "┼", "┤")
	for _, r := range rows {
		b.WriteString("│")
		for i, c := range r {
			b.WriteString(" " + strings.Repeat(" ", width[i]-utf8.RuneCountInString(c)) + c + " │")
		}
		b.WriteByte('\n')
	}
	line("└", "┴", "┘")
	io.WriteString(w, b.String())
}
