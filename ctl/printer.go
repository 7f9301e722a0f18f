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

// shown is one answer as each output format shows it. The printer runs
// the part for its format; a format whose part is nil is refused with
// etcdctl's "not supported as output format" error.
type shown struct {
	simple func()
	fields func()
	table  func() (hdr []string, rows [][]string)
	json   any           // marshalled as it is
	pb     proto.Message // marshalled as it is
}

func (p *printer) show(s shown) error {
	switch {
	case p.format == "simple" && s.simple != nil:
		s.simple()
	case p.format == "fields" && s.fields != nil:
		s.fields()
	case p.format == "table" && s.table != nil:
		hdr, rows := s.table()
		renderTable(p.w, hdr, rows)
	case p.format == "json" && s.json != nil:
		return p.json(s.json)
	case p.format == "protobuf" && s.pb != nil:
		return p.pb(s.pb)
	default:
		return p.unsupported()
	}
	return nil
}

func (p *printer) println(a ...any)                        { fmt.Fprintln(p.w, a...) }
func (p *printer) printf(f string, a ...any)               { fmt.Fprintf(p.w, f, a...) }
func (p *printer) json(v any) error                        { return writeJSON(p.w, v) }
func (p *printer) pb(m proto.Message) error                { return writePB(p.w, m) }
func (p *printer) fieldHdr(h *pb.ResponseHeader)           { fieldsHeader(p.w, p.hex, h) }
func (p *printer) fieldKV(pfx string, kv *mvccpb.KeyValue) { fieldsKV(p.w, p.hex, pfx, kv) }

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
	return p.show(shown{
		simple: func() {
			for _, kv := range r.GetKvs() {
				p.kv(kv)
			}
		},
		fields: func() {
			p.fieldHdr(r.GetHeader())
			for _, kv := range r.GetKvs() {
				p.fieldKV("", kv)
			}
			p.printf("\"More\" : %v\n", r.GetMore())
			p.printf("\"Count\" : %d\n", r.GetCount())
		},
		json: r, pb: r,
	})
}

func (p *printer) put(r *pb.PutResponse) error {
	return p.show(shown{
		simple: func() {
			p.println("OK")
			if r.GetPrevKv() != nil {
				p.kv(r.GetPrevKv())
			}
		},
		fields: func() {
			p.fieldHdr(r.GetHeader())
			if r.GetPrevKv() != nil {
				p.fieldKV("Prev", r.GetPrevKv())
			}
		},
		json: r, pb: r,
	})
}

func (p *printer) del(r *pb.DeleteRangeResponse) error {
	return p.show(shown{
		simple: func() {
			p.println(r.GetDeleted())
			for _, kv := range r.GetPrevKvs() {
				p.kv(kv)
			}
		},
		fields: func() {
			p.fieldHdr(r.GetHeader())
			p.printf("\"Deleted\" : %d\n", r.GetDeleted())
			for _, kv := range r.GetPrevKvs() {
				p.fieldKV("Prev", kv)
			}
		},
		json: r, pb: r,
	})
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
	return p.show(shown{
		simple: func() {
			if r.GetSucceeded() {
				p.println("SUCCESS")
			} else {
				p.println("FAILURE")
			}
			for _, op := range r.GetResponses() {
				p.println("")
				if !p.txnOp(op) {
					p.printf("unexpected response %+v\n", op)
				}
			}
		},
		fields: func() {
			p.fieldHdr(r.GetHeader())
			p.printf("\"Succeeded\" : %v\n", r.GetSucceeded())
			for _, op := range r.GetResponses() {
				if !p.txnOp(op) {
					p.printf("\"Unknown\" : %q\n", fmt.Sprintf("%+v", op.GetResponse()))
				}
			}
		},
		json: toTxnJSON(r), pb: r,
	})
}

// txnOp prints one answer inside a txn in the printer's format; false for an
// answer of a kind etcdctl does not print there (a nested txn).
func (p *printer) txnOp(op *pb.ResponseOp) bool {
	switch v := op.GetResponse().(type) {
	case *pb.ResponseOp_ResponseDeleteRange:
		_ = p.del(v.ResponseDeleteRange)
	case *pb.ResponseOp_ResponsePut:
		_ = p.put(v.ResponsePut)
	case *pb.ResponseOp_ResponseRange:
		_ = p.get(v.ResponseRange)
	default:
		return false
	}
	return true
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
	return p.show(shown{
		simple: func() {
			for _, e := range evs {
				p.println(e.GetType())
				if e.GetPrevKv() != nil {
					p.kv(e.GetPrevKv())
				}
				p.kv(e.GetKv())
			}
		},
		fields: func() {
			p.fieldHdr(r.Header)
			for _, e := range evs {
				p.printf("\"Type\" : %v\n", e.GetType())
				if e.GetPrevKv() != nil {
					p.fieldKV("Prev", e.GetPrevKv())
				}
				p.fieldKV("", e.GetKv())
			}
		},
		json: watchJSON{r.Header, evs, r.CompactRevision, r.Canceled, r.Created, cancelReason(r)},
		pb:   &pb.WatchResponse{Header: r.Header, Events: evs, CompactRevision: r.CompactRevision, Canceled: r.Canceled, Created: r.Created},
	})
}

// --- leases ---

func (p *printer) leaseIDField(id client.LeaseID) {
	if p.hex {
		p.printf("\"ID\" : %016x\n", int64(id))
	} else {
		p.printf("\"ID\" : %d\n", int64(id))
	}
}

// leaseTTLFields prints the fields of a grant or keepalive answer.
func (p *printer) leaseTTLFields(h *pb.ResponseHeader, id client.LeaseID, ttl int64) {
	p.fieldHdr(h)
	p.leaseIDField(id)
	p.printf("\"TTL\" : %d\n", ttl)
}

// headerPB is etcdctl's protobuf output of its client-side lease answers:
// they embed the response header, so only the header is marshalled.
func headerPB(h *pb.ResponseHeader) proto.Message {
	if h == nil {
		return &pb.ResponseHeader{}
	}
	return h
}

func (p *printer) grant(r *client.LeaseGrantResponse) error {
	return p.show(shown{
		simple: func() { p.printf("lease %016x granted with TTL(%ds)\n", int64(r.ID), r.TTL) },
		fields: func() { p.leaseTTLFields(r.ResponseHeader, r.ID, r.TTL) },
		json:   r, pb: headerPB(r.ResponseHeader),
	})
}

func (p *printer) revoke(id client.LeaseID, r *pb.LeaseRevokeResponse) error {
	return p.show(shown{
		simple: func() { p.printf("lease %016x revoked\n", int64(id)) },
		fields: func() { p.fieldHdr(r.GetHeader()) },
		json:   r, pb: r,
	})
}

func (p *printer) keepAlive(r *client.LeaseKeepAliveResponse) error {
	return p.show(shown{
		simple: func() { p.printf("lease %016x keepalived with TTL(%d)\n", int64(r.ID), r.TTL) },
		fields: func() { p.leaseTTLFields(r.ResponseHeader, r.ID, r.TTL) },
		json:   r, pb: headerPB(r.ResponseHeader),
	})
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
	return p.show(shown{
		simple: func() { p.println(ttlLine(r, keys)) },
		fields: func() {
			p.leaseTTLFields(r.ResponseHeader, r.ID, r.TTL)
			p.printf("\"GrantedTTL\" : %d\n", r.GrantedTTL)
			for _, k := range r.Keys {
				p.printf("\"Key\" : %q\n", string(k))
			}
		},
		json: ttlJSON{r.ResponseHeader, int64(r.ID), r.TTL, r.GrantedTTL, r.Keys},
		pb:   headerPB(r.ResponseHeader),
	})
}

// ttlLine is etcdctl's simple line for a lease's time to live.
func ttlLine(r *client.LeaseTimeToLiveResponse, keys bool) string {
	if r.GrantedTTL == 0 && r.TTL == -1 {
		return fmt.Sprintf("lease %016x already expired", int64(r.ID))
	}
	txt := fmt.Sprintf("lease %016x granted with TTL(%ds), remaining(%ds)", int64(r.ID), r.GrantedTTL, r.TTL)
	if keys {
		ks := make([]string, len(r.Keys))
		for i, k := range r.Keys {
			ks[i] = string(k)
		}
		txt += fmt.Sprintf(", attached keys(%v)", ks)
	}
	return txt
}

type leaseStatusJSON struct {
	ID int64 `json:"id"`
}

type leasesJSON struct {
	*pb.ResponseHeader
	Leases []leaseStatusJSON `json:"leases"`
}

func (p *printer) leases(r *client.LeaseLeasesResponse) error {
	asJSON := leasesJSON{ResponseHeader: r.ResponseHeader, Leases: []leaseStatusJSON{}}
	for _, l := range r.Leases {
		asJSON.Leases = append(asJSON.Leases, leaseStatusJSON{int64(l.ID)})
	}
	return p.show(shown{
		simple: func() {
			p.printf("found %d leases\n", len(r.Leases))
			for _, l := range r.Leases {
				p.printf("%016x\n", int64(l.ID))
			}
		},
		fields: func() {
			p.fieldHdr(r.ResponseHeader)
			for _, l := range r.Leases {
				p.leaseIDField(l.ID)
			}
		},
		json: asJSON, pb: headerPB(r.ResponseHeader),
	})
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

// memberJSON is the JSON of a member response, in hex form with --hex.
func (p *printer) memberJSON(m proto.Message, h *pb.ResponseHeader, ms []*pb.Member) any {
	if !p.hex {
		return m
	}
	if a, ok := m.(*pb.MemberAddResponse); ok {
		return struct {
			Header  *hexHeader   `json:"header"`
			Member  *hexMember   `json:"member"`
			Members []*hexMember `json:"members"`
		}{toHexHeader(h), toHexMember(a.Member), toHexMembers(ms)}
	}
	return hexMembersJSON{toHexHeader(h), toHexMembers(ms)}
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
	return p.show(shown{
		simple: func() { p.joinedRows(memberRows(r)) },
		fields: func() {
			p.fieldHdr(r.GetHeader())
			for _, m := range r.GetMembers() {
				p.idField("ID", m.GetID())
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
		},
		table: func() ([]string, [][]string) { return memberRows(r) },
		json:  p.memberJSON(r, r.GetHeader(), r.GetMembers()),
		pb:    r,
	})
}

// idField prints a member ID field, in hex with --hex.
func (p *printer) idField(name string, id uint64) {
	if p.hex {
		p.printf("\"%s\" : %x\n", name, id)
	} else {
		p.printf("\"%s\" : %d\n", name, id)
	}
}

// joinedRows is the simple format of tabular answers: each row's cells
// joined by ", ".
func (p *printer) joinedRows(_ []string, rows [][]string) {
	for _, row := range rows {
		p.println(strings.Join(row, ", "))
	}
}

// memberChange prints member add/remove/update/promote. simple is the
// line to print in the simple format.
func (p *printer) memberChange(m proto.Message, h *pb.ResponseHeader, ms []*pb.Member, simple string) error {
	return p.show(shown{
		simple: func() { p.println(simple) },
		json:   p.memberJSON(m, h, ms),
		pb:     m,
	})
}

// --- maintenance ---

func (p *printer) alarm(r *pb.AlarmResponse) error {
	return p.show(shown{
		simple: func() {
			for _, a := range r.GetAlarms() {
				p.printf("%+v\n", a)
			}
		},
		fields: func() {
			p.fieldHdr(r.GetHeader())
			for _, a := range r.GetAlarms() {
				p.idField("MemberID", a.GetMemberID())
				p.printf("\"AlarmType\" : %v\n", a.GetAlarm())
				p.println()
			}
		},
		json: r, pb: r,
	})
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
	return p.show(shown{
		simple: func() {
			for _, h := range hs {
				if h.Error == "" {
					p.printf("%s is healthy: successfully committed proposal: took = %v\n", h.Ep, h.Took)
				} else {
					fmt.Fprintf(stderr, "%s is unhealthy: failed to commit proposal: %v\n", h.Ep, h.Error)
				}
			}
		},
		fields: func() {
			for _, h := range hs {
				p.printf("\"Endpoint\" : %q\n", h.Ep)
				p.printf("\"Health\" : %v\n", h.Health)
				p.printf("\"Took\" : %s\n", h.Took)
				p.printf("\"Error\" : %s\n", h.Error)
				p.println()
			}
		},
		table: func() ([]string, [][]string) {
			var rows [][]string
			for _, h := range hs {
				rows = append(rows, []string{h.Ep, strconv.FormatBool(h.Health), h.Took, h.Error})
			}
			return []string{"endpoint", "health", "took", "error"}, rows
		},
		json: hs,
	})
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
	return p.show(shown{
		simple: func() { p.joinedRows(statusRows(ss)) },
		fields: func() {
			for _, s := range ss {
				p.statusFields(s)
			}
		},
		table: func() ([]string, [][]string) { return statusRows(ss) },
		json:  ss,
	})
}

func (p *printer) statusFields(s epStatus) {
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

func (p *printer) epHashKV(hs []epHashKV) error {
	rows := make([][]string, 0, len(hs))
	for _, h := range hs {
		rows = append(rows, []string{h.Ep, fmt.Sprint(h.Resp.GetHash()), fmt.Sprint(h.Resp.GetHashRevision())})
	}
	hdr := []string{"endpoint", "hash", "hash_revision"}
	return p.show(shown{
		simple: func() { p.joinedRows(hdr, rows) },
		fields: func() {
			for _, h := range hs {
				p.fieldHdr(h.Resp.GetHeader())
				p.printf("\"Endpoint\" : %q\n", h.Ep)
				p.printf("\"Hash\" : %d\n", h.Resp.GetHash())
				p.printf("\"HashRevision\" : %d\n", h.Resp.GetHashRevision())
				p.println()
			}
		},
		table: func() ([]string, [][]string) { return hdr, rows },
		json:  hs,
	})
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
