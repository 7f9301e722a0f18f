// Package protofield is the wire-format half of a hand-written protobuf
// codec: a codec lists its message's fields in a table and Unmarshal walks
// the encoding against it, while the Append and Size functions write one
// field at a time, so that the codec itself holds only which fields its
// message has and when each is written. It knows nothing of cairn.
//
// What it decodes is what proto.Unmarshal decodes, with one exception: a
// known field number sent with another wire type is an error here (the
// protobuf library would keep it as an unknown field), since for the
// records these codecs read it can only mean corruption.
package protofield

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field is one field of message M: its number, its wire type and how its
// value is stored in a message. Make one with Varint, Bytes or Message.
type Field[M any] struct {
	num protowire.Number
	typ protowire.Type
	// decode consumes the value from the front of b into m and returns its
	// length, negative (a protowire error code) when b is cut short.
	decode func(m *M, b []byte) (int, error)
}

// Varint is a varint field (any integer, bool or enum type); set stores its
// value, which it converts to the field's type as protobuf does.
func Varint[M any](num protowire.Number, set func(m *M, v uint64)) Field[M] {
	return Field[M]{num: num, typ: protowire.VarintType, decode: func(m *M, b []byte) (int, error) {
		v, n := protowire.ConsumeVarint(b)
		if n >= 0 {
			set(m, v)
		}
		return n, nil
	}}
}

// Bytes is a bytes or string field; set gets its value aliasing the
// encoding, its capacity cut to its length so that appending to it cannot
// overwrite the next field.
func Bytes[M any](num protowire.Number, set func(m *M, v []byte)) Field[M] {
	return Message(num, func(m *M, v []byte) error {
		set(m, v)
		return nil
	})
}

// Message is an embedded message field: decode parses its encoding (as
// Bytes hands it over) into m, and its error fails the whole decoding.
func Message[M any](num protowire.Number, decode func(m *M, v []byte) error) Field[M] {
	return Field[M]{num: num, typ: protowire.BytesType, decode: func(m *M, b []byte) (int, error) {
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return n, nil
		}
		return n, decode(m, v[:len(v):len(v)])
	}}
}

// Unmarshal decodes b into m, field by field in the order they come (so of
// a field sent twice the last value wins, as for protobuf scalars),
// skipping the fields not in fields. m is not reset first.
func Unmarshal[M any](b []byte, m *M, fields []Field[M]) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		if num > protowire.MaxValidNumber {
			return fmt.Errorf("field number %d out of range", num)
		}
		b = b[n:]
		f := lookup(fields, num)
		if f == nil {
			n = protowire.ConsumeFieldValue(num, typ, b)
		} else if typ != f.typ {
			return fmt.Errorf("field %d has wire type %d", num, typ)
		} else {
			var err error
			if n, err = f.decode(m, b); err != nil {
				return fmt.Errorf("field %d: %w", num, err)
			}
		}
		if n < 0 {
			return fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return nil
}

func lookup[M any](fields []Field[M], num protowire.Number) *Field[M] {
	for i := range fields {
		if fields[i].num == num {
			return &fields[i]
		}
	}
	return nil
}

// AppendVarint appends field num with varint value v.
func AppendVarint(b []byte, num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

// AppendBytes appends field num with length-delimited value v.
func AppendBytes(b []byte, num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
}

// SizeVarint is the length of AppendVarint's output for num and v.
func SizeVarint(num protowire.Number, v uint64) int {
	return protowire.SizeTag(num) + protowire.SizeVarint(v)
}

// SizeBytes is the length of AppendBytes's output for num and a value of
// n bytes.
func SizeBytes(num protowire.Number, n int) int {
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}
