package main

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

func TestKeyEncode(t *testing.T) {
	tests := []struct {
		size  int
		index int64
		want  []byte
	}{
		{8, 0, []byte{0, 0, 0, 0, 0, 0, 0, 0}},
		{8, 1, []byte{0, 0, 0, 0, 0, 0, 0, 1}},
		{4, 0x01020304, []byte{1, 2, 3, 4}},
		{2, 255, []byte{0, 255}},
		{2, 256, []byte{1, 0}},
		{10, 0x0102, []byte{0, 0, 0, 0, 0, 0, 0, 0, 1, 2}},
	}
	for _, tt := range tests {
		if got := (keySpec{size: tt.size}).encode(tt.index); !bytes.Equal(got, tt.want) {
			t.Errorf("encode(size %d, %d) = %v, want %v", tt.size, tt.index, got, tt.want)
		}
	}
}

func TestKeyValidate(t *testing.T) {
	tests := []struct {
		spec keySpec
		ok   bool
	}{
		{keySpec{size: 8, space: 1}, true},
		{keySpec{size: 1, space: 256}, true},
		{keySpec{size: 1, space: 257}, false},
		{keySpec{size: 2, space: 65536}, true},
		{keySpec{size: 0, space: 1}, false},
		{keySpec{size: 8, space: 0}, false},
	}
	for _, tt := range tests {
		err := tt.spec.validate()
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, errUsage)) {
			t.Errorf("%+v.validate() = %v, want ok=%v", tt.spec, err, tt.ok)
		}
	}
}

func TestKeyPicker(t *testing.T) {
	seq := keySpec{size: 8, space: 3, sequential: true}.picker(0)
	var got []int64
	for i := range int64(7) {
		got = append(got, seq(i))
	}
	if want := []int64{0, 1, 2, 0, 1, 2, 0}; !slices.Equal(got, want) {
		t.Errorf("sequential picks %v, want %v", got, want)
	}

	random := keySpec{size: 8, space: 5}.picker(1)
	again := keySpec{size: 8, space: 5}.picker(1)
	for i := range int64(100) {
		a, b := random(i), again(i)
		if a != b || a < 0 || a >= 5 {
			t.Fatalf("pick %d: %d and %d, want equal and within [0,5)", i, a, b)
		}
	}
}

func TestFixedValue(t *testing.T) {
	if len(fixedValue(0)) != 0 || len(fixedValue(256)) != 256 {
		t.Error("wrong value size")
	}
	if !bytes.Equal(fixedValue(64), fixedValue(64)) {
		t.Error("value is not reproducible")
	}
}
