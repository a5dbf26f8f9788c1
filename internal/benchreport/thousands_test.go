package benchreport

import "testing"

func TestThousands(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 16384: "16,384", 1234567.6: "1,234,568", -1500: "-1,500", -999: "-999"} {
		if got := Thousands(in); got != want {
			t.Errorf("Thousands(%v) = %q, want %q", in, got, want)
		}
	}
}
