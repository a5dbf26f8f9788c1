package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/specs"
)

// envtest has no StatefulSet controller and no kubelet, so this test plays
// them: it creates the broker pods, marks them ready, and sets the
// StatefulSet's revisions. The operator's decisions and the brokers'
// safe-restart answers are real.
func TestRollingUpdateRestartsOneSafeBrokerAtATime(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, brokerCluster(ns))
	mustCreate(t, topicObject(ns, "rolled", 3)) // every broker hosts a replica
	readyIs(t, ns, "rolled", metav1.ConditionTrue, raftkav1.ReasonCreated)
	ctx := context.Background()
	key := types.NamespacedName{Namespace: ns, Name: "events"}
	var sts appsv1.StatefulSet
	eventually(t, "the StatefulSet", func() (bool, string) { return k8s.Get(ctx, key, &sts) == nil, "" })
	for id := 0; id < 3; id++ {
		makeBrokerPod(t, ns, id, "rev-1")
	}
	setRevisions(t, &sts, "rev-1", "rev-2") // the spec changed: rev-2 is wanted

	eventually(t, "broker 2 to be restarted first", func() (bool, string) {
		return terminating(t, ns, 2), ""
	})
	time.Sleep(2 * time.Second)
	if terminating(t, ns, 0) || terminating(t, ns, 1) {
		t.Fatal("a second broker was restarted while broker 2 was")
	}

	// The real broker 2 is down, so restarting broker 1 would leave its
	// partitions without a quorum; broker 1 itself says so. Then pod 2
	// comes back at the new revision and looks ready.
	brokers.Kill(2)
	defer func() {
		brokers.Restart(2)
		brokers.WaitReady(2)
	}()
	eventually(t, "broker 1 to notice broker 2 is gone", func() (bool, string) {
		code, _ := brokers.Get(1, "/safe-to-restart")
		return code == 503, ""
	})
	replaceBrokerPod(t, ns, 2, "rev-2")
	eventually2(t, 60*time.Second, "the operator to wait and say why", func() (bool, string) {
		var c raftkav1.BrokerCluster
		_ = k8s.Get(ctx, key, &c)
		p := meta.FindStatusCondition(c.Status.Conditions, raftkav1.ConditionProgressing)
		if p == nil {
			return false, ""
		}
		return contains(p.Message, "would lose a quorum"), p.Message
	})
	if terminating(t, ns, 1) || terminating(t, ns, 0) {
		t.Fatal("a broker was restarted although the safe-restart check refused")
	}
	brokers.Restart(2)
	brokers.WaitReady(2)
	eventually(t, "broker 1 to be restarted once it is safe", func() (bool, string) { return terminating(t, ns, 1), "" })
}

func podName(id int) string { return fmt.Sprintf("events-%d", id) }

func makeBrokerPod(t *testing.T, ns string, id int, revision string) {
	t.Helper()
	c := brokerCluster(ns)
	labels := specs.Labels(c)
	labels[appsv1.ControllerRevisionHashLabelKey] = revision
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName(id), Namespace: ns, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "broker", Image: "raftka/broker:test"}}},
	}
	mustCreate(t, pod)
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if err := k8s.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

func replaceBrokerPod(t *testing.T, ns string, id int, revision string) {
	t.Helper()
	ctx := context.Background()
	var pod corev1.Pod
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: podName(id)}, &pod); err == nil {
		_ = k8s.Delete(ctx, &pod, client.GracePeriodSeconds(0))
	}
	eventually(t, "the old pod to go", func() (bool, string) {
		return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: podName(id)}, &pod) != nil, ""
	})
	makeBrokerPod(t, ns, id, revision)
}

func setRevisions(t *testing.T, sts *appsv1.StatefulSet, current, update string) {
	t.Helper()
	sts.Status.CurrentRevision, sts.Status.UpdateRevision = current, update
	sts.Status.Replicas, sts.Status.ReadyReplicas, sts.Status.ObservedGeneration = 3, 3, sts.Generation
	if err := k8s.Status().Update(context.Background(), sts); err != nil {
		t.Fatal(err)
	}
}

func terminating(t *testing.T, ns string, id int) bool {
	var pod corev1.Pod
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: podName(id)}, &pod); err != nil {
		return true
	}
	return !pod.DeletionTimestamp.IsZero()
}

// TestInterBrokerTLSMovesTheBrokersAtOnce: a secured cluster created
// before the brokers spoke TLS to each other keeps its transport until
// spec.interBrokerTLS asks for the move; then the operator records it,
// gives the brokers the TLS flags, and restarts every broker at once
// (a rolling update would leave one broker on TLS unable to reach the
// others). Brokers already on the new transport are left alone. The test
// plays the StatefulSet controller's part, making pods of its template.
func TestInterBrokerTLSMovesTheBrokersAtOnce(t *testing.T) {
	ns := newNamespace(t)
	c := brokerCluster(ns)
	c.Spec.Listeners = []raftkav1.ListenerSpec{{Name: "internal", Port: 9092, Authentication: &raftkav1.ListenerAuthentication{Type: raftkav1.AuthenticationSCRAMSHA512}}}
	// What an older operator recorded: no TLS between the brokers.
	mustCreate(t, specs.BuildConfigMap(c, specs.Founding{Voters: 3}))
	mustCreate(t, specs.BuildInternalCredentials(c, "b", "o"))
	mustCreate(t, c)
	ctx := context.Background()
	// The template's pod, its claim's volume an emptyDir.
	template := func(want bool) corev1.PodSpec {
		var spec corev1.PodSpec
		eventually(t, fmt.Sprintf("the brokers' Raft TLS flags %t", want), func() (bool, string) {
			var sts appsv1.StatefulSet
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "events"}, &sts); err != nil {
				return false, err.Error()
			}
			spec = *sts.Spec.Template.Spec.DeepCopy()
			for _, claim := range sts.Spec.VolumeClaimTemplates {
				spec.Volumes = append(spec.Volumes, corev1.Volume{Name: claim.Name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			}
			got := specs.PodTransport(&corev1.Pod{Spec: spec})
			return got == specs.Transport{RaftTLS: want, ReplicationTLS: want}, got.String()
		})
		return spec
	}
	makePods := func(spec corev1.PodSpec) {
		for id := 0; id < 3; id++ {
			labels := specs.Labels(c)
			labels[appsv1.ControllerRevisionHashLabelKey] = "rev"
			mustCreate(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName(id), Namespace: ns, Labels: labels},
				Spec: spec})
		}
	}
	untouched := func(what string) {
		time.Sleep(3 * time.Second)
		for id := 0; id < 3; id++ {
			if terminating(t, ns, id) {
				t.Fatalf("%s: broker %d restarted", what, id)
			}
		}
	}
	makePods(template(false))
	untouched("an older cluster without interBrokerTLS")

	getObject(t, ns, "events", c)
	c.Spec.InterBrokerTLS = raftkav1.InterBrokerTLSEnabled
	if err := k8s.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	moved := template(true)
	eventually(t, "every broker restarted at once", func() (bool, string) {
		return terminating(t, ns, 0) && terminating(t, ns, 1) && terminating(t, ns, 2), ""
	})
	var cm corev1.ConfigMap
	getObject(t, ns, specs.ConfigMapName(c), &cm)
	if f := specs.FoundingOf(&raftkav1.BrokerCluster{ObjectMeta: c.ObjectMeta}, &cm); !f.RaftTLS || !f.ReplicationTLS {
		t.Errorf("the ConfigMap records %v without the field", cm.Annotations)
	}
	for id := 0; id < 3; id++ {
		replacePod(t, ns, id)
	}
	makePods(moved)
	untouched("brokers on TLS")
}

// replacePod waits for a deleted pod to go, as the StatefulSet
// controller would before making it again.
func replacePod(t *testing.T, ns string, id int) {
	t.Helper()
	var pod corev1.Pod
	key := types.NamespacedName{Namespace: ns, Name: podName(id)}
	if err := k8s.Get(context.Background(), key, &pod); err == nil {
		_ = k8s.Delete(context.Background(), &pod, client.GracePeriodSeconds(0))
	}
	eventually(t, "pod "+podName(id)+" to go", func() (bool, string) {
		return k8s.Get(context.Background(), key, &pod) != nil, ""
	})
}
