package brokertest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// network puts each broker of a cluster in a network namespace of its own,
// attached to a bridge that the test creates, so that a test can cut
// brokers apart (Partition) while the test process, on the bridge's side,
// still reaches every one of them. The subnet is 10.213.N.0/24 and nothing
// is routed off the machine: the namespaces have no default route and the
// bridge forwards only between its own ports. It needs root and iproute2;
// RerunInUserNamespace gives a test that is not root a namespace where it
// is.
type network struct {
	t      testing.TB
	prefix string // of every interface and namespace name: at most 15 bytes in all
	subnet string // "10.213.N."
	// cut holds the broker pairs that cannot reach each other.
	cut map[[2]int]bool
}

func newNetwork(t testing.TB, brokers int) *network {
	if os.Geteuid() != 0 {
		t.Fatal("brokers in network namespaces need root: call RerunInUserNamespace first, which gives the test a user namespace where it is")
	}
	tag := rand.IntN(1 << 16)
	n := &network{t: t, prefix: fmt.Sprintf("rk%04x", tag), subnet: fmt.Sprintf("10.213.%d.", 1+tag%250), cut: map[[2]int]bool{}}
	t.Cleanup(n.remove)
	n.ip("link", "add", n.bridge(), "type", "bridge")
	n.ip("addr", "add", n.subnet+"1/24", "dev", n.bridge())
	n.ip("link", "set", n.bridge(), "up")
	for i := 0; i < brokers; i++ {
		ns, host, inside := n.namespace(i), n.prefix+"h"+fmt.Sprint(i), n.prefix+"n"+fmt.Sprint(i)
		n.ip("netns", "add", ns)
		n.ip("link", "add", host, "type", "veth", "peer", "name", inside, "netns", ns)
		n.ip("link", "set", host, "master", n.bridge(), "up")
		n.ip("-n", ns, "addr", "add", n.addr(i)+"/24", "dev", inside)
		n.ip("-n", ns, "link", "set", inside, "up")
		n.ip("-n", ns, "link", "set", "lo", "up")
	}
	return n
}

// inUserNamespace marks a test process that RerunInUserNamespace started.
const inUserNamespace = "RAFTKA_TEST_IN_USER_NAMESPACE"

// RerunInUserNamespace lets a test that runs brokers in network namespaces
// (Options.Namespaces) run without root: for a process that is not root
// it runs the same test again in a user namespace of its own, where it is
// root over a network and mounts of its own (unshare --user
// --map-root-user --net --mount), reports that run's output and outcome,
// and returns true: the caller returns at once. As root, or inside that
// run, it returns false and the test goes on here.
func RerunInUserNamespace(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() == 0 || os.Getenv(inUserNamespace) != "" {
		return false
	}
	SkipIfShort(t)
	// /run is a tmpfs of the namespace's own, for ip netns's mounts; lo of
	// the new network is down until raised.
	setup := `mount -t tmpfs tmpfs /run && mkdir /run/netns && ip link set lo up && exec "$@"`
	args := []string{"--user", "--map-root-user", "--net", "--mount", "--", "sh", "-c", setup, "sh",
		os.Args[0], "-test.run", "^" + regexp.QuoteMeta(t.Name()) + "$", "-test.count", "1", "-test.v"}
	if deadline, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout", time.Until(deadline).Round(time.Second).String())
	}
	cmd := exec.Command("unshare", args...)
	cmd.Env = append(os.Environ(), inUserNamespace+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("%s, run again in a user namespace of its own:\n%s", t.Name(), out)
	if err != nil {
		t.Fatalf("the run in a user namespace failed: %v (it needs unshare from util-linux and unprivileged user namespaces, or root)", err)
	}
	return true
}

func (n *network) bridge() string         { return n.prefix + "br" }
func (n *network) namespace(i int) string { return fmt.Sprintf("%s-%d", n.prefix, i) }
func (n *network) addr(i int) string      { return fmt.Sprintf("%s%d", n.subnet, 10+i) }

// command runs name with args inside broker i's namespace.
func (n *network) command(i int, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.namespace(i), name}, args...)...)
}

// setCut cuts or mends the link between brokers i and j, both ways: each
// drops what it would send to the other (a blackhole route), so packets
// are lost as on a broken network, not refused.
func (n *network) setCut(i, j int, cut bool) {
	key := [2]int{min(i, j), max(i, j)}
	if n.cut[key] == cut {
		return
	}
	verb := "add"
	if !cut {
		verb = "del"
	}
	n.ip("-n", n.namespace(i), "route", verb, "blackhole", n.addr(j)+"/32")
	n.ip("-n", n.namespace(j), "route", verb, "blackhole", n.addr(i)+"/32")
	n.cut[key] = cut
}

func (n *network) ip(args ...string) {
	n.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		n.t.Fatalf("ip %s: %v: %s (network namespaces need root and iproute2)", strings.Join(args, " "), err, out)
	}
}

// remove deletes the namespaces (and with them the veth pairs) and the
// bridge; it runs after the brokers have stopped.
func (n *network) remove() {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		if name, _, _ := strings.Cut(line, " "); strings.HasPrefix(name, n.prefix+"-") {
			_ = exec.Command("ip", "netns", "del", name).Run()
		}
	}
	_ = exec.Command("ip", "link", "del", n.bridge()).Run()
}
