package benchreport

import (
	"testing"
	"time"
)

func TestThousands(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 16384: "16,384", 1234567.6: "1,234,568", -1500: "-1,500", -999: "-999"} {
		if got := Thousands(in); got != want {
			t.Errorf("Thousands(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestSeconds(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  time.Duration
	}{{"", 6 * time.Second}, {"3", 3 * time.Second}, {"0", 6 * time.Second}, {"-2", 6 * time.Second}, {"x", 6 * time.Second}} {
		t.Setenv("RAFTKA_BENCH_TEST_SECONDS", tc.value)
		if got := Seconds("RAFTKA_BENCH_TEST_SECONDS", 6*time.Second); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.value, got, tc.want)
		}
	}
}
