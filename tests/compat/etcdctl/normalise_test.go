package etcdctl

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// What may legitimately differ between etcd and cairn, and only that:
//   - raft term and raft index (how many entries each wrote to bring a
//     member up is an implementation detail),
//   - database sizes and the percentage not in use derived from them (bbolt
//     page layout),
//   - durations,
//   - the spacing inside an alarm rendered by the server (see alarmMemberRE),
//   - the client address,
//   - the server's patch version (the etcd under test is v3.7.3; cairn
//     reports the 3.7 release it implements).
const (
	masked      = "<masked>"
	endpointTag = "<endpoint>"
)

var (
	// took = 1.2ms (endpoint health), took 3ms (defrag).
	tookRE = regexp.MustCompile(`took( =)? [0-9.]+[a-zµ]+`)
	// "RaftTerm" : 2 and friends in -w fields output.
	fieldsRE        = regexp.MustCompile(`^"(RaftTerm|RaftIndex|RaftAppliedIndex|DBSize|DBSizeInUse|Took)" : .*$`)
	fieldsVersionRE = regexp.MustCompile(`^"Version" : "3\.7\.\d+"$`)
	serverVersionRE = regexp.MustCompile(`^3\.7\.\d+$`)
	// The server renders an alarm in Status.errors with protobuf-go's text
	// format, which on purpose varies the spacing from build to build: a
	// given etcd binary prints "memberID:1 alarm:NOSPACE" or
	// "memberID:1  alarm:NOSPACE". Only that spacing is forgiven.
	alarmMemberRE = regexp.MustCompile(`(memberID:\d+)\s+alarm:`)
	// JSON object keys whose values are masked.
	jsonMasked = map[string]bool{
		"raft_term": true, "raftTerm": true, "raftIndex": true, "raftAppliedIndex": true,
		"dbSize": true, "dbSizeInUse": true, "took": true,
	}
	// Columns of endpoint status (-w simple and -w table) that are masked;
	// the -w simple row has exactly these 16 columns.
	statusColumns = []string{
		"endpoint", "ID", "version", "storage version", "db size", "in use", "percentage not in use",
		"quota", "is leader", "is learner", "raft term", "raft index", "raft applied index", "errors",
		"downgrade target version", "downgrade enabled",
	}
	maskedColumns = map[string]bool{
		"version": true, "db size": true, "in use": true, "percentage not in use": true,
		"raft term": true, "raft index": true, "raft applied index": true, "took": true,
	}
)

// normalise renders r for comparison: exit status, stdout and stderr with
// the legitimately differing values masked. args are the etcdctl arguments
// (command first) and hostPort the server's client address.
func normalise(r result, args []string, hostPort string) string {
	out := strings.ReplaceAll(r.stdout, hostPort, endpointTag)
	switch {
	case outputFormat(args) == "protobuf":
		out = normaliseProto(args[0], []byte(r.stdout))
	case looksJSON(out):
		out = normaliseJSON(out)
	default:
		out = normaliseText(out)
	}
	var errLines []string
	for _, l := range strings.Split(strings.ReplaceAll(r.stderr, hostPort, endpointTag), "\n") {
		// The client library's own zap log lines carry timestamps and
		// retry details; etcdctl's verdict is on the "Error:" line.
		if strings.HasPrefix(l, `{"level":`) {
			continue
		}
		errLines = append(errLines, tookRE.ReplaceAllString(l, "took "+masked))
	}
	return fmt.Sprintf("exit status %d\n--- stdout\n%s\n--- stderr\n%s", r.exit, out, strings.Join(errLines, "\n"))
}

func outputFormat(args []string) string {
	for i, a := range args {
		switch {
		case (a == "-w" || a == "--write-out") && i+1 < len(args):
			return args[i+1]
		case strings.HasPrefix(a, "-w="), strings.HasPrefix(a, "--write-out="):
			return a[strings.IndexByte(a, '=')+1:]
		}
	}
	return "simple"
}

func looksJSON(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[")
}

// normaliseJSON re-renders each JSON value in s with masked fields and
// sorted keys; non-JSON input is returned as it is.
func normaliseJSON(s string) string {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var parts []string
	for {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			break
		}
		if err != nil {
			return normaliseText(s)
		}
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(maskJSON(v, "")); err != nil {
			return normaliseText(s)
		}
		parts = append(parts, strings.TrimSuffix(b.String(), "\n"))
	}
	return strings.Join(parts, "\n")
}

func maskJSON(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = maskJSON(e, k)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = maskJSON(e, key)
		}
		return x
	case string:
		x = alarmMemberRE.ReplaceAllString(x, "$1 alarm:")
		if key == "version" && serverVersionRE.MatchString(x) {
			return masked
		}
		if key == "took" {
			return masked
		}
		return x
	default:
		if jsonMasked[key] {
			return masked
		}
		return x
	}
}

// normaliseText masks -w simple, -w fields and -w table output.
func normaliseText(s string) string {
	var out []string
	var header []string // column names of the current table
	inTable := false
	for _, l := range strings.Split(s, "\n") {
		l = tookRE.ReplaceAllString(l, "took "+masked)
		l = alarmMemberRE.ReplaceAllString(l, "$1 alarm:")
		wasTable := inTable
		inTable = false
		switch {
		case fieldsRE.MatchString(l):
			l = l[:strings.Index(l, " : ")] + " : " + masked
		case fieldsVersionRE.MatchString(l):
			l = `"Version" : ` + masked
		case strings.HasPrefix(l, endpointTag+", "):
			if cols := strings.Split(l, ", "); len(cols) == len(statusColumns) {
				for i, name := range statusColumns {
					if maskedColumns[name] {
						cols[i] = masked
					}
				}
				l = strings.Join(cols, ", ")
			}
		case strings.HasPrefix(l, "+-"), strings.HasPrefix(l, "┌"), strings.HasPrefix(l, "├"), strings.HasPrefix(l, "└"):
			// A border; one that does not follow a table line starts a new table.
			if !wasTable {
				header = nil
			}
			inTable = true
			continue
		case strings.HasPrefix(l, "|"), strings.HasPrefix(l, "│"):
			inTable = true
			sep := l[:len(string([]rune(l)[0]))]
			cells := strings.Split(strings.Trim(l, sep), sep)
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			if header == nil {
				header = cells
			} else {
				for i, c := range cells {
					if i < len(header) && maskedColumns[strings.ToLower(header[i])] {
						if strings.ToLower(header[i]) != "version" || serverVersionRE.MatchString(c) {
							cells[i] = masked
						}
					}
				}
			}
			l = "| " + strings.Join(cells, " | ") + " |"
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// normaliseProto decodes -w protobuf output of command into its response
// message, clears the raft term of every response header, and renders it
// as text.
func normaliseProto(command string, raw []byte) string {
	var m proto.Message
	switch command {
	case "get":
		m = &pb.RangeResponse{}
	case "put":
		m = &pb.PutResponse{}
	case "del":
		m = &pb.DeleteRangeResponse{}
	case "txn":
		m = &pb.TxnResponse{}
	case "alarm":
		m = &pb.AlarmResponse{}
	default:
		return fmt.Sprintf("raw protobuf %q", raw)
	}
	if len(raw) == 0 {
		return "<no output>"
	}
	if err := proto.Unmarshal(raw, m); err != nil {
		return fmt.Sprintf("undecodable protobuf (%v) %q", err, raw)
	}
	clearRaftTerms(m.ProtoReflect())
	b, err := prototext.MarshalOptions{Multiline: true}.Marshal(m)
	if err != nil {
		return fmt.Sprintf("unprintable protobuf (%v) %q", err, raw)
	}
	// prototext's spacing is deliberately unstable across builds, never
	// within one; keep it tidy for diffs anyway.
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(slices.DeleteFunc(lines, func(l string) bool { return l == "" }), "\n")
}

func clearRaftTerms(m protoreflect.Message) {
	if m.Descriptor().FullName() == "etcdserverpb.ResponseHeader" {
		if fd := m.Descriptor().Fields().ByName("raft_term"); fd != nil {
			m.Clear(fd)
		}
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				clearRaftTerms(l.Get(i).Message())
			}
		case fd.IsMap():
		case fd.Message() != nil:
			clearRaftTerms(v.Message())
		}
		return true
	})
}
