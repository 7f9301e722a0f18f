package wal

import (
	"fmt"
	"strconv"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/versionpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Version is an etcd version as far as storage cares: major.minor.
type Version struct{ Major, Minor int }

func (v Version) String() string { return fmt.Sprintf("%d.%d.0", v.Major, v.Minor) }

// Less reports whether v is older than o.
func (v Version) Less(o Version) bool {
	return v.Major < o.Major || (v.Major == o.Major && v.Minor < o.Minor)
}

// ParseVersion reads "X.Y" or "X.Y.Z..." (patch and suffixes ignored).
func ParseVersion(s string) (Version, error) {
	parts := strings.SplitN(s, ".", 3)
	if len(parts) < 2 {
		return Version{}, fmt.Errorf("invalid version %q", s)
	}
	major, err := strconv.Atoi(parts[0])
	if err != nil {
		return Version{}, fmt.Errorf("invalid version %q: %w", s, err)
	}
	minor, err := strconv.Atoi(parts[1])
	if err != nil {
		return Version{}, fmt.Errorf("invalid version %q: %w", s, err)
	}
	return Version{major, minor}, nil
}

// MinimalEtcdVersion returns the oldest etcd version able to interpret
// ents, as etcd determines it for storage downgrades: the highest etcd
// version annotation (versionpb options in etcd's protos) of every message,
// field, enum and enum value the entries use; conf changes count as 3.0
// (v1) and 3.4 (v2). found is false when nothing is annotated.
func MinimalEtcdVersion(ents []*raftpb.Entry) (v Version, found bool, err error) {
	var vis versionVisitor
	for _, e := range ents {
		if err := vis.entry(e); err != nil {
			return Version{}, false, fmt.Errorf("entry %d: %w", e.GetIndex(), err)
		}
	}
	return vis.max, vis.found, nil
}

// versionVisitor keeps the highest version seen.
type versionVisitor struct {
	max   Version
	found bool
}

func (vv *versionVisitor) see(v Version) {
	if !vv.found || vv.max.Less(v) {
		vv.max, vv.found = v, true
	}
}

// annotation records the version in a descriptor's options, if any.
func (vv *versionVisitor) annotation(opts proto.Message, ext protoreflect.ExtensionType) error {
	if opts == nil || !proto.HasExtension(opts, ext) {
		return nil
	}
	s, _ := proto.GetExtension(opts, ext).(string)
	if s == "" {
		return nil
	}
	v, err := ParseVersion(s)
	if err != nil {
		return err
	}
	vv.see(v)
	return nil
}

func (vv *versionVisitor) entry(e *raftpb.Entry) error {
	switch e.GetType() {
	case raftpb.EntryConfChange:
		vv.see(Version{3, 0})
		return nil
	case raftpb.EntryConfChangeV2:
		vv.see(Version{3, 4})
		return nil
	}
	var req pb.InternalRaftRequest
	if err := proto.Unmarshal(e.GetData(), &req); err != nil {
		return err
	}
	if t := req.GetDowngradeVersionTest(); t != nil {
		v, err := ParseVersion(t.GetVer())
		if err != nil {
			return err
		}
		vv.see(v)
	}
	return vv.message(req.ProtoReflect())
}

func (vv *versionVisitor) message(m protoreflect.Message) error {
	if err := vv.annotation(m.Descriptor().Options().(proto.Message), versionpb.E_EtcdVersionMsg); err != nil {
		return err
	}
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
		err = vv.field(fd, val)
		return err == nil
	})
	return err
}

func (vv *versionVisitor) field(fd protoreflect.FieldDescriptor, val protoreflect.Value) error {
	if err := vv.annotation(fd.Options().(proto.Message), versionpb.E_EtcdVersionField); err != nil {
		return err
	}
	switch {
	case fd.IsList():
		l := val.List()
		for i := 0; i < l.Len(); i++ {
			if err := vv.value(fd, l.Get(i)); err != nil {
				return err
			}
		}
		return nil
	case fd.IsMap():
		var err error
		val.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
			err = vv.value(fd.MapValue(), mv)
			return err == nil
		})
		return err
	}
	return vv.value(fd, val)
}

// value visits one (element) value of field fd.
func (vv *versionVisitor) value(fd protoreflect.FieldDescriptor, val protoreflect.Value) error {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return vv.message(val.Message())
	case protoreflect.EnumKind:
		ed := fd.Enum()
		if err := vv.annotation(ed.Options().(proto.Message), versionpb.E_EtcdVersionEnum); err != nil {
			return err
		}
		evd := ed.Values().ByNumber(val.Enum())
		if evd == nil {
			return fmt.Errorf("%s: unknown enum value %d", ed.FullName(), val.Enum())
		}
		return vv.annotation(evd.Options().(proto.Message), versionpb.E_EtcdVersionEnumValue)
	}
	return nil
}
