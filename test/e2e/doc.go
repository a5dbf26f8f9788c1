// Package e2e is the end-to-end test of the whole product on a real
// single-node Kubernetes (hack/e2e-cluster.sh): helm install, brokers in pods,
// a Topic, produce through a deleted and a SIGKILLed broker pod with nothing
// lost, consumers autoscaled with their lag, and a rolling restart of the
// brokers. It runs with `make test-e2e` (build tag e2e); the test process sits
// on the node and reaches pods over the cluster's bridge, resolving names
// through the cluster's DNS.
package e2e
