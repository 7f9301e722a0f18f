package client

import (
	"testing"
)

func TestStrToPermissionType(t *testing.T) {
	for in, want := range map[string]PermissionType{"read": PermRead, "WRITE": PermWrite, "readWrite": PermReadWrite} {
		if got, err := StrToPermissionType(in); err != nil || got != want {
			t.Errorf("%q: %v, %v", in, got, err)
		}
	}
	if _, err := StrToPermissionType("all"); err == nil || err.Error() != "invalid permission type: all" {
		t.Errorf("bad type: %v", err)
	}
}
