//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/specs"
)

func (e *env) brokerCluster(t *testing.T) *raftkav1.BrokerCluster {
	t.Helper()
	var bc raftkav1.BrokerCluster
	if err := e.kube.Get(ctx(t), client.ObjectKey{Namespace: namespace, Name: clusterName}, &bc); err != nil {
		t.Fatal(err)
	}
	return &bc
}

func brokerStatus(bc *raftkav1.BrokerCluster, id int32) (raftkav1.BrokerStatus, bool) {
	for _, b := range bc.Status.Brokers {
		if b.ID == id {
			return b, true
		}
	}
	return raftkav1.BrokerStatus{}, false
}

// healed reports whether the BrokerCluster sees n brokers up, every
// replica in sync and its replicas spread.
func healed(bc *raftkav1.BrokerCluster, n int) (bool, string) {
	state := fmt.Sprintf("readyReplicas=%d conditions=%s brokers=%+v", bc.Status.ReadyReplicas, conditions(bc.Status.Conditions), bc.Status.Brokers)
	if int(bc.Status.ReadyReplicas) != n || len(bc.Status.Brokers) != n {
		return false, state
	}
	for _, b := range bc.Status.Brokers {
		if !b.Ready || b.CatchingUp != 0 || b.Replicas == 0 {
			return false, state
		}
	}
	c := meta.FindStatusCondition(bc.Status.Conditions, raftkav1.ConditionRebalancing)
	return c != nil && c.Reason == "Balanced" && c.ObservedGeneration == bc.Generation, state
}

// testLostVolume deletes a broker's PersistentVolumeClaim and pod while
// producing: the broker comes back on a new, empty volume as a new
// incarnation, a Warning Event says so, its replicas are copied again, and
// nothing acknowledged is lost.
func testLostVolume(t *testing.T, e *env) {
	ledger, stop := e.producing(t, "volumes")
	before, ok := brokerStatus(e.brokerCluster(t), 1)
	if !ok || before.Incarnation == "" || before.Replicas == 0 {
		t.Fatalf("broker 1 in the status before: %+v", before)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := e.kube.Get(ctx(t), client.ObjectKey{Namespace: namespace, Name: "data-" + clusterName + "-1"}, pvc); err != nil {
		t.Fatal(err)
	}
	pod := e.brokerPods(t, namespace, clusterName)[clusterName+"-1"]
	t.Logf("deleting claim %s and pod %s (%d records acknowledged so far)", pvc.Name, pod.Name, ledger.Acked())
	if err := e.kube.Delete(ctx(t), pvc); err != nil {
		t.Fatal(err)
	}
	if err := e.kube.Delete(ctx(t), &pod); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Minute, "broker 1 back as a new incarnation, every replica in sync", func() (bool, string) {
		// A pod the StatefulSet made while the old claim was still going
		// waits for a claim that will not come: it goes again.
		if p, ok := e.brokerPods(t, namespace, clusterName)[clusterName+"-1"]; ok && p.UID != pod.UID && p.Status.Phase == corev1.PodPending &&
			time.Since(p.CreationTimestamp.Time) > 30*time.Second {
			var claim corev1.PersistentVolumeClaim
			if err := e.kube.Get(ctx(t), client.ObjectKey{Namespace: namespace, Name: "data-" + clusterName + "-1"}, &claim); apierrors.IsNotFound(err) {
				_ = e.kube.Delete(ctx(t), &p)
			}
		}
		bc := e.brokerCluster(t)
		now, _ := brokerStatus(bc, 1)
		if now.Generation <= before.Generation || now.Incarnation == before.Incarnation {
			return false, fmt.Sprintf("broker 1: %+v", now)
		}
		return healed(bc, 3)
	})
	var events eventsv1.EventList
	if err := e.kube.List(ctx(t), &events, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range events.Items {
		found = found || (ev.Reason == "BrokerReplaced" && ev.Type == corev1.EventTypeWarning)
	}
	if !found {
		t.Error("no BrokerReplaced Warning Event")
	}
	time.Sleep(3 * time.Second)
	e.verifyLedger(t, "volumes", ledger, stop)
}

// testScaleOutAndIn grows the BrokerCluster from 3 to 4 while producing:
// the fourth broker takes an even share of replicas and preferred
// leaders. Back to 3, the fourth is drained before its pod goes, then
// unregistered, and its claim deleted. Nothing acknowledged is lost.
func testScaleOutAndIn(t *testing.T, e *env) {
	ledger, stop := e.producing(t, "scaling")
	scale := func(n int32) {
		t.Helper()
		bc := e.brokerCluster(t)
		patch := client.MergeFrom(bc.DeepCopy())
		bc.Spec.Replicas = n
		if err := e.kube.Patch(ctx(t), bc, patch); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	scale(4)
	eventually(t, 6*time.Minute, "4 brokers, replicas spread", func() (bool, string) { return healed(e.brokerCluster(t), 4) })
	t.Logf("3 to 4 brokers, replicas spread: %s (%d records acknowledged so far)", time.Since(start).Round(time.Second), ledger.Acked())
	start = time.Now()
	scale(3)
	eventually(t, 6*time.Minute, "3 brokers, the fourth drained, gone and unregistered", func() (bool, string) {
		var sts appsv1.StatefulSet
		if err := e.kube.Get(ctx(t), client.ObjectKey{Namespace: namespace, Name: clusterName}, &sts); err != nil {
			return false, err.Error()
		}
		var claim corev1.PersistentVolumeClaim
		err := e.kube.Get(ctx(t), client.ObjectKey{Namespace: namespace, Name: "data-" + clusterName + "-3"}, &claim)
		if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 3 || !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("StatefulSet replicas %v, claim of broker 3: %v", sts.Spec.Replicas, err)
		}
		return healed(e.brokerCluster(t), 3)
	})
	t.Logf("4 to 3 brokers, the fourth drained and gone: %s", time.Since(start).Round(time.Second))
	time.Sleep(3 * time.Second)
	e.verifyLedger(t, "scaling", ledger, stop)
}

// testMoveToTLS moves the cluster, created without TLS between its
// brokers, onto it (spec.interBrokerTLS) while producing: every broker
// pod restarts at once with the Raft TLS flags and the certificate the
// operator issued for the headless Service's names, the brokers form the
// cluster again on their volumes, and every acknowledged record is there
// once.
func testMoveToTLS(t *testing.T, e *env) {
	ledger, stop := e.producing(t, "moving")
	bc := e.brokerCluster(t)
	image := bc.Spec.Image
	if image == "" {
		image = brokerImage
	}
	patch := client.MergeFrom(bc.DeepCopy())
	bc.Spec.InterBrokerTLS = raftkav1.InterBrokerTLSEnabled
	if err := e.kube.Patch(ctx(t), bc, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Minute, "every broker pod ready on the Raft transport's TLS", func() (bool, string) {
		pods := e.brokerPods(t, namespace, clusterName)
		moved := 0
		for _, p := range pods {
			if podReady(p) && specs.PodTransport(&p).RaftTLS {
				moved++
			}
		}
		return moved == 3, describePods(pods)
	})
	e.waitBrokerCluster(t, image, 2*time.Minute)
	time.Sleep(3 * time.Second)
	e.verifyLedger(t, "moving", ledger, stop)
}
