package client

import (
	"testing"
)

func TestReadOnlyTxnIsRepeatable(t *testing.T) {
	ro := OpTxn(nil, []Op{OpGet("a")}, []Op{OpTxn(nil, []Op{OpGet("b")}, nil)})
	rw := OpTxn(nil, []Op{OpGet("a")}, []Op{OpTxn(nil, []Op{OpPut("b", "")}, nil)})
	if !ro.readOnly() || rw.readOnly() {
		t.Errorf("readOnly: read-only txn %v, writing txn %v", ro.readOnly(), rw.readOnly())
	}
}

// TestTxnPartOrder checks the builder's order rule without a server: each
// part at most once, If before Then before Else, any of them may be left out.
func TestTxnPartOrder(t *testing.T) {
	tests := []struct {
		calls string // i, t, e for If, Then, Else
		panic string // "" for a legal order
	}{
		{"ite", ""}, {"ie", ""}, {"te", ""}, {"e", ""}, {"", ""},
		{"ii", "client: Txn.If called twice"},
		{"tt", "client: Txn.Then called twice"},
		{"ee", "client: Txn.Else called twice"},
		{"ti", "client: Txn.If called after Then"},
		{"ei", "client: Txn.If called after Else"},
		{"iet", "client: Txn.Then called after Else"},
	}
	for _, tt := range tests {
		got := func() (msg string) {
			defer func() {
				if r := recover(); r != nil {
					msg = r.(string)
				}
			}()
			var b Txn = &txn{}
			for _, c := range tt.calls {
				switch c {
				case 'i':
					b = b.If()
				case 't':
					b = b.Then()
				case 'e':
					b = b.Else()
				}
			}
			return ""
		}()
		if got != tt.panic {
			t.Errorf("%q: panic %q, want %q", tt.calls, got, tt.panic)
		}
	}
}
