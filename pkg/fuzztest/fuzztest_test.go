package fuzztest

import "testing"

func TestEncode(t *testing.T) {
	tests := []struct {
		name string
		args []any
		want string
	}{
		{"bytes", []any{[]byte("a\x00\xff")}, "go test fuzz v1\n[]byte(\"a\\x00\\xff\")\n"},
		{"mixed", []any{"k", true, int64(-3), uint64(7), uint32(9), 2},
			"go test fuzz v1\nstring(\"k\")\nbool(true)\nint64(-3)\nuint64(7)\nuint32(9)\nint(2)\n"},
		{"byte", []any{byte(3), byte('a')}, "go test fuzz v1\nbyte('\\x03')\nbyte('a')\n"},
		{"none", nil, "go test fuzz v1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Encode(tt.args...)
			if err != nil || string(got) != tt.want {
				t.Fatalf("Encode = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := Encode(1.5); err == nil {
		t.Fatal("Encode(float64) succeeded")
	}
}

func TestIsFuzzerName(t *testing.T) {
	for name, want := range map[string]bool{"0123456789abcdef": true, "segment-torn": false, "0123456789abcdeg": false} {
		if got := isFuzzerName(name); got != want {
			t.Errorf("isFuzzerName(%q) = %v", name, got)
		}
	}
}

func TestKeysSplitsAndMaps(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want []string
	}{
		{nil, []string{""}},
		{[]byte{0, 1, 2, 3}, []string{"\x00ab\xff"}},
		{[]byte{1, 0xf0, 5, 0xff}, []string{"a", "a", ""}},
	} {
		got := Keys(tc.in)
		if len(got) != len(tc.want) {
			t.Fatalf("Keys(%v) = %q, want %q", tc.in, got, tc.want)
		}
		for i := range got {
			if string(got[i]) != tc.want[i] {
				t.Fatalf("Keys(%v) = %q, want %q", tc.in, got, tc.want)
			}
		}
	}
}

func TestKeysSeedIsKeysInverse(t *testing.T) {
	got := Keys(KeysSeed("1 03 "))
	want := []string{"a", "\x00\xff", ""}
	if len(got) != len(want) {
		t.Fatalf("Keys(KeysSeed) = %q, want %q", got, want)
	}
	for i := range got {
		if string(got[i]) != want[i] {
			t.Fatalf("Keys(KeysSeed) = %q, want %q", got, want)
		}
	}
}
