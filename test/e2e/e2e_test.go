//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/broker/brokertest"
)

const (
	namespace     = "e2e"
	clusterName   = "events"
	brokerImage   = "raftka/broker:v0.1.0"
	rolledImage   = "raftka/broker:v0.1.0-rolled" // the same binary under a new tag (make test-e2e imports it)
	consumerImage = "raftka/consumer-example:v0.1.0"
)

// TestEndToEnd runs the product's user story in order; each step needs the
// ones before it, so the first failure stops the test.
func TestEndToEnd(t *testing.T) {
	e := newEnv(t)
	steps := []struct {
		name string
		run  func(*testing.T, *env)
	}{
		{"install", testInstall},
		{"brokers", testBrokersReady},
		{"topic", testTopicReady},
		{"no-loss-through-pod-kills", testNoLossThroughPodKills},
		{"autoscaling", testAutoscaling},
		{"rolling-restart", testRollingRestart},
		{"lost-volume", testLostVolume},
		{"scale-out-and-in", testScaleOutAndIn},
		{"move-to-tls", testMoveToTLS},
		{"security", testSecurity},
		{"uninstall", testUninstall},
	}
	for _, s := range steps {
		done := phase(t, s.name)
		ok := t.Run(s.name, func(t *testing.T) { s.run(t, e) })
		done()
		if !ok {
			e.dumpState(t)
			t.FailNow()
		}
	}
}

func testInstall(t *testing.T, e *env) {
	helm := filepath.Join(e.root, "bin", "helm")
	e.run(t, helm, "install", "raftka", "charts/raftka", "--namespace", "raftka-system", "--create-namespace",
		"--set", "lagPeriod=2s", "--set", "topicResync=10s", "--wait", "--timeout", "3m")
	if err := e.kube.Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	var operator appsv1.Deployment
	if err := e.kube.Get(ctx(t), client.ObjectKey{Namespace: "raftka-system", Name: "raftka-operator"}, &operator); err != nil {
		t.Fatal(err)
	}
	if operator.Status.ReadyReplicas < 1 {
		t.Fatalf("operator Deployment has %d ready replicas", operator.Status.ReadyReplicas)
	}
	policiesTypeCheck(t, e)
}

// policiesTypeCheck: the chart's tenant admission policies compile
// against the CRDs' schemas without a warning, as the controller manager's
// type checking (which envtest does not run) reports it.
func policiesTypeCheck(t *testing.T, e *env) {
	for _, kind := range []string{"topics", "users", "consumergroups"} {
		name := "raftka-tenant-" + kind
		deadline := time.Now().Add(time.Minute)
		for {
			var p admissionv1.ValidatingAdmissionPolicy
			if err := e.kube.Get(ctx(t), client.ObjectKey{Name: name}, &p); err != nil {
				t.Fatal(err)
			}
			if tc := p.Status.TypeChecking; tc != nil && p.Status.ObservedGeneration == p.Generation {
				if len(tc.ExpressionWarnings) > 0 {
					t.Fatalf("policy %s: %+v", name, tc.ExpressionWarnings)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("policy %s not type-checked in a minute: %+v", name, p.Status)
			}
			time.Sleep(time.Second)
		}
	}
}

func testBrokersReady(t *testing.T, e *env) {
	bc := &raftkav1.BrokerCluster{
		ObjectMeta: metav1.ObjectMeta{Name: clusterName, Namespace: namespace},
		// No image: the chart's operator runs the broker of its own
		// version, brokerImage.
		Spec: raftkav1.BrokerClusterSpec{
			Replicas: 3,
			Storage:  raftkav1.StorageSpec{Size: resource.MustParse("1Gi")},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
			},
		},
	}
	if err := e.kube.Create(ctx(t), bc); err != nil {
		t.Fatal(err)
	}
	e.waitBrokerCluster(t, brokerImage, 5*time.Minute)
	// Each broker's rack is its node's zone (hack/e2e-cluster.sh labels
	// the node), copied onto its pod by Kubernetes.
	md, err := kadm.NewClient(e.kafka(t, e.bootstrap(t))).Metadata(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range md.Brokers {
		if b.Rack == nil || *b.Rack != "e2e-zone-a" {
			t.Fatalf("broker %d's rack is %v, want its node's zone e2e-zone-a", b.NodeID, b.Rack)
		}
	}
	// The broker image carries the raftka tool, for kubectl exec.
	var info struct{ Brokers []struct{ ID int32 } }
	out := e.run(t, e.kubectl(), "exec", "-n", namespace, clusterName+"-0", "--", "raftka", "-b", "localhost:9092", "-o", "json", "cluster", "info")
	if err := json.Unmarshal([]byte(out), &info); err != nil || len(info.Brokers) != 3 {
		t.Fatalf("raftka cluster info in a broker pod: %v\n%s", err, out)
	}
	// cluster health finds each broker's HTTP endpoint through the Kafka
	// protocol (its advertised pod DNS name) and asks its checks.
	eventually(t, time.Minute, "raftka cluster health in a broker pod says healthy", func() (bool, string) {
		cmd := exec.Command(e.kubectl(), "exec", "-n", namespace, clusterName+"-0", "--", "raftka", "-b", "localhost:9092", "-o", "json", "cluster", "health")
		cmd.Dir = e.root
		out, err := cmd.CombinedOutput()
		var health struct {
			Healthy bool
			Brokers []struct {
				Ready, SafeToRestart *bool
			}
		}
		if err != nil || json.Unmarshal(out, &health) != nil || !health.Healthy || len(health.Brokers) != 3 {
			return false, fmt.Sprintf("%v: %s", err, out)
		}
		for _, b := range health.Brokers {
			if b.Ready == nil || !*b.Ready || b.SafeToRestart == nil || !*b.SafeToRestart {
				return false, string(out)
			}
		}
		return true, ""
	})
}

// kubectl is the e2e cluster's kubectl.
func (e *env) kubectl() string {
	return filepath.Join(e.root, "bin", "k8s", "1.37.2-linux-amd64", "kubectl")
}

// waitBrokerCluster waits for 3 Ready broker pods running image and a Ready
// BrokerCluster with bootstrap servers, and returns the latter.
func (e *env) waitBrokerCluster(t *testing.T, image string, timeout time.Duration) *raftkav1.BrokerCluster {
	t.Helper()
	bc := &raftkav1.BrokerCluster{}
	eventually(t, timeout, "3 Ready broker pods and a Ready BrokerCluster", func() (bool, string) {
		pods := e.brokerPods(t, namespace, clusterName)
		ready := 0
		for _, p := range pods {
			if podReady(p) && p.Spec.Containers[0].Image == image {
				ready++
			}
		}
		if err := e.kube.Get(ctx(t), client.ObjectKey{Namespace: namespace, Name: clusterName}, bc); err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(bc.Status.Conditions, raftkav1.ConditionReady)
		state := fmt.Sprintf("pods: %s; BrokerCluster readyReplicas=%d conditions=%s", describePods(pods), bc.Status.ReadyReplicas, conditions(bc.Status.Conditions))
		return ready == 3 && cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == bc.Generation &&
			bc.Status.BootstrapServers != "", state
	})
	t.Logf("BrokerCluster Ready, bootstrap servers %s", bc.Status.BootstrapServers)
	return bc
}

func (e *env) bootstrap(t *testing.T) string {
	t.Helper()
	var bc raftkav1.BrokerCluster
	if err := e.kube.Get(ctx(t), client.ObjectKey{Namespace: namespace, Name: clusterName}, &bc); err != nil {
		t.Fatal(err)
	}
	return bc.Status.BootstrapServers
}

func conditions(cs []metav1.Condition) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s=%s(%s)", c.Type, c.Status, c.Reason))
	}
	return strings.Join(parts, ",")
}

// createTopic applies a Topic and waits until it is Ready and the brokers
// describe it with the partitions and replicas asked for.
func (e *env) createTopic(t *testing.T, name string, partitions int32) {
	t.Helper()
	topic := &raftkav1.Topic{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: raftkav1.TopicSpec{
			ClusterRef:        raftkav1.ClusterReference{Name: clusterName},
			Partitions:        partitions,
			ReplicationFactor: 3,
			MinInSyncReplicas: ptr.To[int32](2),
		},
	}
	if err := e.kube.Create(ctx(t), topic); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "Topic "+name+" Ready", func() (bool, string) {
		if err := e.kube.Get(ctx(t), client.ObjectKeyFromObject(topic), topic); err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(topic.Status.Conditions, raftkav1.ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == topic.Generation, conditions(topic.Status.Conditions)
	})
	admin := kadm.NewClient(e.kafka(t, e.bootstrap(t)))
	details, err := admin.ListTopics(ctx(t), name)
	if err != nil {
		t.Fatal(err)
	}
	d := details[name]
	if d.Err != nil || len(d.Partitions) != int(partitions) {
		t.Fatalf("brokers describe %s with %d partitions (error %v), want %d", name, len(d.Partitions), d.Err, partitions)
	}
	for _, p := range d.Partitions {
		if len(p.Replicas) != 3 {
			t.Fatalf("%s/%d has replicas %v, want 3", name, p.Partition, p.Replicas)
		}
	}
	configs, err := admin.DescribeTopicConfigs(ctx(t), name)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := configs.On(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	minISR := ""
	for _, c := range rc.Configs {
		if c.Key == "min.insync.replicas" {
			minISR = c.MaybeValue()
		}
	}
	if minISR != "2" {
		t.Fatalf("%s has min.insync.replicas %q on the brokers, want 2", name, minISR)
	}
}

func testTopicReady(t *testing.T, e *env) {
	e.createTopic(t, "ledger", 6)
}

// producer starts an idempotent acks=all producer on topic that runs until
// the returned stop function is called; stop returns how many records it sent.
func (e *env) producer(t *testing.T, topic string, partitions int32, ledger *brokertest.Ledger) (stop func() int) {
	cl := e.kafka(t, e.bootstrap(t), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProduceRequestTimeout(5*time.Second), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	stopCh := make(chan struct{})
	done := make(chan int)
	go func() {
		sent, err := ledger.ProduceUntil(cl, topic, partitions, stopCh)
		if err != nil {
			t.Errorf("producer flush: %v", err)
		}
		done <- sent
	}()
	return func() int { close(stopCh); return <-done }
}

func testNoLossThroughPodKills(t *testing.T, e *env) {
	ledger := brokertest.NewLedger()
	stop := e.producer(t, "ledger", 6, ledger)
	time.Sleep(5 * time.Second)

	// A graceful delete: the StatefulSet recreates the pod on the same volume.
	deleted := e.brokerPods(t, namespace, clusterName)[clusterName+"-1"]
	t.Logf("deleting pod %s (%d records acknowledged so far)", deleted.Name, ledger.Acked())
	if err := e.kube.Delete(ctx(t), &deleted); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "pod "+deleted.Name+" recreated and Ready", func() (bool, string) {
		p, ok := e.brokerPods(t, namespace, clusterName)[deleted.Name]
		return ok && p.UID != deleted.UID && podReady(p), describePods(e.brokerPods(t, namespace, clusterName))
	})
	time.Sleep(3 * time.Second)

	// A crash: SIGKILL of the broker process inside its container; the kubelet restarts it.
	victim := e.brokerPods(t, namespace, clusterName)[clusterName+"-2"]
	restarts := victim.Status.ContainerStatuses[0].RestartCount
	containerID := strings.TrimPrefix(victim.Status.ContainerStatuses[0].ContainerID, "containerd://")
	t.Logf("SIGKILL of the broker in pod %s (%d records acknowledged so far)", victim.Name, ledger.Acked())
	e.run(t, "ctr", "--address", e.containerd, "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", containerID)
	eventually(t, 3*time.Minute, "pod "+victim.Name+" restarted and Ready", func() (bool, string) {
		p := e.brokerPods(t, namespace, clusterName)[victim.Name]
		return len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].RestartCount > restarts && podReady(p),
			describePods(e.brokerPods(t, namespace, clusterName))
	})
	time.Sleep(3 * time.Second)

	e.verifyLedger(t, "ledger", ledger, stop)
}

// producing creates a topic of 6 partitions and starts a producer on it
// into a new ledger, running 3 s before the step acts; verifyLedger ends
// it.
func (e *env) producing(t *testing.T, topic string) (*brokertest.Ledger, func() int) {
	e.createTopic(t, topic, 6)
	ledger := brokertest.NewLedger()
	stop := e.producer(t, topic, 6, ledger)
	time.Sleep(3 * time.Second)
	return ledger, stop
}

// verifyLedger stops a producer: every record it sent was acknowledged
// (it retries without limit), and every acknowledged one is in topic,
// once and in order.
func (e *env) verifyLedger(t *testing.T, topic string, ledger *brokertest.Ledger, stop func() int) {
	t.Helper()
	sent := stop()
	if ledger.Acked() != sent {
		t.Fatalf("%d of %d records acknowledged: with unlimited retries every one should be", ledger.Acked(), sent)
	}
	t.Logf("longest time without an acknowledgement: %s", ledger.LongestAckGap().Round(10*time.Millisecond))
	ledger.VerifyExactlyOnce(t, topic, func(opts ...kgo.Opt) *kgo.Client { return e.kafka(t, e.bootstrap(t), opts...) })
}

func (e *env) groupState(t *testing.T, group string) string {
	var cg raftkav1.ConsumerGroup
	if err := e.kube.Get(ctx(t), client.ObjectKey{Namespace: namespace, Name: group}, &cg); err != nil {
		return err.Error()
	}
	s := cg.Status
	return fmt.Sprintf("ConsumerGroup lag=%d members=%d replicas=%d/%d partitions=%d state=%s reason=%q %s",
		s.TotalLag, s.Members, s.CurrentReplicas, s.DesiredReplicas, s.Partitions, s.State, s.LastScaleReason, conditions(s.Conditions))
}

// testRollingRestart changes the brokers' image: the operator restarts one
// pod at a time, each when the safe-restart check allows it, while a producer
// keeps producing.
func testRollingRestart(t *testing.T, e *env) {
	ledger, stop := e.producing(t, "rolling")

	var bc raftkav1.BrokerCluster
	if err := e.kube.Get(ctx(t), client.ObjectKey{Namespace: namespace, Name: clusterName}, &bc); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(bc.DeepCopy())
	bc.Spec.Image = rolledImage
	if err := e.kube.Patch(ctx(t), &bc, patch); err != nil {
		t.Fatal(err)
	}

	// Watch the pods while the operator rolls them, and every write of a
	// Topic: the cluster serves the topics throughout, so no Topic should
	// stop being Ready, not even for a moment.
	notReady := e.watchTopicsNotReady(t)
	var order []string
	mostDown := 0
	seenRolled := map[string]bool{}
	eventually(t, 8*time.Minute, "every broker pod restarted with "+rolledImage, func() (bool, string) {
		pods := e.brokerPods(t, namespace, clusterName)
		down, rolled := 3-len(pods), 0
		for name, p := range pods {
			if !podReady(p) {
				down++
			}
			if p.Spec.Containers[0].Image == rolledImage {
				rolled++
				if !seenRolled[name] {
					seenRolled[name] = true
					order = append(order, name)
				}
			}
		}
		mostDown = max(mostDown, down)
		return rolled == 3 && down == 0, describePods(pods)
	})
	e.waitBrokerCluster(t, rolledImage, 2*time.Minute)
	time.Sleep(3 * time.Second)
	sent := stop()
	t.Logf("restart order %v; at most %d broker pods not Ready at once; longest time without an acknowledgement %s",
		order, mostDown, ledger.LongestAckGap().Round(10*time.Millisecond))
	if mostDown > 1 {
		t.Fatalf("%d broker pods were down at once during the rolling restart", mostDown)
	}
	if seen := notReady(); len(seen) > 0 {
		t.Fatalf("Topics not Ready during the rolling restart: %v", seen)
	}
	// A restart costs at most a leader election (and the client's metadata
	// refresh); anything longer means the roll took a quorum away.
	if gap := ledger.LongestAckGap(); gap > 10*time.Second {
		t.Fatalf("production stalled for %s during the rolling restart", gap)
	}
	if ledger.Acked() != sent {
		t.Fatalf("%d of %d records acknowledged", ledger.Acked(), sent)
	}
	ledger.VerifyExactlyOnce(t, "rolling", func(opts ...kgo.Opt) *kgo.Client { return e.kafka(t, e.bootstrap(t), opts...) })
}

// watchTopicsNotReady records every Topic version written with Ready not
// True from now on; the returned function stops the watch and returns them.
func (e *env) watchTopicsNotReady(t *testing.T) func() []string {
	t.Helper()
	w, err := e.kube.Watch(context.Background(), &raftkav1.TopicList{}, client.InNamespace(namespace))
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			tp, ok := ev.Object.(*raftkav1.Topic)
			if !ok || !tp.DeletionTimestamp.IsZero() {
				continue
			}
			if !meta.IsStatusConditionTrue(tp.Status.Conditions, raftkav1.ConditionReady) {
				seen = append(seen, tp.Name+": "+conditions(tp.Status.Conditions))
			}
		}
	}()
	return func() []string {
		w.Stop()
		<-done
		return seen
	}
}

// testUninstall deletes what users created: Topics by their deletion policy,
// the BrokerCluster's objects by the garbage collector, the brokers' volume
// claims kept (the data outlives a mistaken delete), then the chart.
func testUninstall(t *testing.T, e *env) {
	admin := kadm.NewClient(e.kafka(t, e.bootstrap(t)))
	var rolling raftkav1.Topic
	if err := e.kube.Get(ctx(t), client.ObjectKey{Namespace: namespace, Name: "rolling"}, &rolling); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(rolling.DeepCopy())
	rolling.Spec.DeletionPolicy = raftkav1.DeletionPolicyDelete
	if err := e.kube.Patch(ctx(t), &rolling, patch); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"rolling", "ledger"} {
		if err := e.kube.Delete(ctx(t), &raftkav1.Topic{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, time.Minute, "Topic objects gone, the Delete one from the brokers too", func() (bool, string) {
		var topics raftkav1.TopicList
		if err := e.kube.List(ctx(t), &topics, client.InNamespace(namespace)); err != nil {
			return false, err.Error()
		}
		names := map[string]bool{}
		for _, tp := range topics.Items {
			names[tp.Name] = true
		}
		onBrokers, err := admin.ListTopics(ctx(t))
		if err != nil {
			return false, err.Error()
		}
		return !names["rolling"] && !names["ledger"] && !onBrokers.Has("rolling") && onBrokers.Has("ledger"),
			fmt.Sprintf("Topic objects %v, on the brokers %v", names, onBrokers.Names())
	})

	if err := e.kube.Delete(ctx(t), &raftkav1.BrokerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: clusterName}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the BrokerCluster's objects garbage-collected", func() (bool, string) {
		var sets appsv1.StatefulSetList
		var services corev1.ServiceList
		var configs corev1.ConfigMapList
		selector := client.MatchingLabels{"raftka.io/cluster": clusterName}
		for _, list := range []client.ObjectList{&sets, &services, &configs} {
			if err := e.kube.List(ctx(t), list, client.InNamespace(namespace), selector); err != nil {
				return false, err.Error()
			}
		}
		pods := e.brokerPods(t, namespace, clusterName)
		return len(sets.Items)+len(services.Items)+len(configs.Items)+len(pods) == 0,
			fmt.Sprintf("%d StatefulSets, %d Services, %d ConfigMaps, pods: %s", len(sets.Items), len(services.Items), len(configs.Items), describePods(pods))
	})
	var claims corev1.PersistentVolumeClaimList
	if err := e.kube.List(ctx(t), &claims, client.InNamespace(namespace), client.MatchingLabels{"raftka.io/cluster": clusterName}); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 3 {
		t.Fatalf("%d broker volume claims left after the BrokerCluster's deletion, want the 3 kept", len(claims.Items))
	}

	e.run(t, filepath.Join(e.root, "bin", "helm"), "uninstall", "raftka", "--namespace", "raftka-system", "--wait", "--timeout", "2m")
	var operators appsv1.DeploymentList
	if err := e.kube.List(ctx(t), &operators, client.InNamespace("raftka-system")); err != nil {
		t.Fatal(err)
	}
	if len(operators.Items) != 0 {
		t.Fatalf("%d Deployments left in raftka-system after helm uninstall", len(operators.Items))
	}
}

// dumpState logs what a failed step leaves behind: pods, events, operator logs.
func (e *env) dumpState(t *testing.T) {
	kubectl := e.kubectl()
	for _, args := range [][]string{
		{"get", "pods,statefulsets,deployments,pvc,brokerclusters,topics,consumergroups,users", "-A", "-o", "wide"},
		{"get", "events", "-A", "--sort-by=.lastTimestamp"},
		{"logs", "-n", "raftka-system", "deployment/raftka-operator", "--tail=100"},
	} {
		out, _ := exec.Command(kubectl, args...).CombinedOutput()
		t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
	}
	pods := e.brokerPods(t, namespace, clusterName)
	names := make([]string, 0, len(pods))
	for n := range pods {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out, _ := exec.Command(kubectl, "logs", "-n", namespace, n, "--tail=40").CombinedOutput()
		t.Logf("logs of %s:\n%s", n, out)
	}
	_ = os.Stderr.Sync()
}
