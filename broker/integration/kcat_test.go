package integration

import (
	"bytes"
	"context"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/brokertest"
)

func kcat(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Fatal("kcat is not installed: apt-get install kcat (.ci/run does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %v: %v\n%s", args, err, errb.String())
	}
	return out.String()
}

func TestKcatProduceConsumeAndGroup(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("kcat-topic", 3, 3, nil)
	brokers := strings.Join(c.AllAddrs(), ",")
	var lines []string
	for i := 0; i < 100; i++ {
		lines = append(lines, "line-"+string(rune('a'+i%26))+"-"+strings.Repeat("x", i%7)+"-"+itoa(i))
	}
	kcat(t, strings.Join(lines, "\n")+"\n", "-P", "-b", brokers, "-t", "kcat-topic",
		"-X", "enable.idempotence=true", "-X", "acks=all")

	out := kcat(t, "", "-C", "-b", brokers, "-t", "kcat-topic", "-e", "-q", "-f", "%s\n")
	got := strings.Fields(out)
	sort.Strings(got)
	want := append([]string(nil), lines...)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("kcat read %d records, want %d", len(got), len(want))
	}

	group := kcat(t, "", "-G", "kcat-group", "-b", brokers, "-X", "auto.offset.reset=earliest", "-e", "-q", "-f", "%s\n", "kcat-topic")
	if n := len(strings.Fields(group)); n != len(lines) {
		t.Fatalf("kcat group consumer read %d records, want %d", n, len(lines))
	}
	// The group's offsets were committed: a second run reads nothing new.
	again := kcat(t, "", "-G", "kcat-group", "-b", brokers, "-X", "auto.offset.reset=earliest", "-e", "-q", "-f", "%s\n", "kcat-topic")
	if n := len(strings.Fields(again)); n != 0 {
		t.Fatalf("second group run read %d records, want 0", n)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
