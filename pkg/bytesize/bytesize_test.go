package bytesize

import "testing"

func TestSI(t *testing.T) {
	for n, want := range map[uint64]string{
		0: "0 B", 9: "9 B", 10: "10 B", 999: "999 B", 1000: "1.0 kB", 1049: "1.0 kB", 1050: "1.1 kB",
		9949: "9.9 kB", 20480: "20 kB", 1_200_000: "1.2 MB", 2_147_483_648: "2.1 GB", 1 << 62: "4.6 EB",
	} {
		if got := SI(n); got != want {
			t.Errorf("SI(%d) = %q, want %q", n, got, want)
		}
	}
}
