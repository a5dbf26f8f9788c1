package integration

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/raftka/raftka/broker/brokertest"
)

// debianPython is Debian's interpreter, which python3-kafka installs into
// (a python3 earlier on PATH may be another one).
const debianPython = "/usr/bin/python3"

// TestKafkaPython runs kafka-python 2.0 (Debian's python3-kafka), a pure
// Python client with its own protocol code and its own way of probing the
// broker's version (ApiVersions v0, then Metadata v0), against the brokers:
// topic creation through its admin client, an acks=all producer, and a
// consumer group committing by hand.
func TestKafkaPython(t *testing.T) {
	if err := exec.Command(debianPython, "-c", "import kafka").Run(); err != nil {
		t.Fatal("kafka-python is not installed: apt-get install python3-kafka (.ci/run does)")
	}
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	runClient(t, c, "kafka-python", filepath.Join("testdata", "kafka-python"), debianPython, "client.py").check(t, clientRecords)
}
