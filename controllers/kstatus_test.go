package controllers

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
)

// GitOps tools judge health with kstatus: a reconciled Topic is Current, a
// refused one Failed, one waiting for its cluster InProgress.
func TestTopicHealthAsGitOpsToolsSeeIt(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, brokerCluster(ns))
	mustCreate(t, topicObject(ns, "healthy", 1))
	bad := topicObject(ns, "refused", 1)
	bad.Spec.Config = map[string]string{"unclean.leader.election.enable": "true"}
	mustCreate(t, bad)
	waiting := topicObject(ns, "waiting", 1)
	waiting.Spec.ClusterRef.Name = "not-yet"
	mustCreate(t, waiting)
	readyIs(t, ns, "healthy", metav1.ConditionTrue, raftkav1.ReasonCreated)
	readyIs(t, ns, "refused", metav1.ConditionFalse, raftkav1.ReasonNotSupported)
	readyIs(t, ns, "waiting", metav1.ConditionFalse, raftkav1.ReasonClusterNotReady)

	for name, want := range map[string]status.Status{"healthy": status.CurrentStatus, "refused": status.FailedStatus, "waiting": status.InProgressStatus} {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(raftkav1.GroupVersion.WithKind("Topic"))
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
			t.Fatal(err)
		}
		res, err := status.Compute(u)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != want {
			t.Errorf("topic %s: kstatus %s (%s), want %s", name, res.Status, res.Message, want)
		}
	}
	// Fixing the refused Topic clears Stalled and makes it Current.
	if err := updateTopic(t, ns, "refused", func(t *raftkav1.Topic) { t.Spec.Config = nil }); err != nil {
		t.Fatal(err)
	}
	got := readyIs(t, ns, "refused", metav1.ConditionTrue, raftkav1.ReasonCreated)
	if meta.FindStatusCondition(got.Status.Conditions, raftkav1.ConditionStalled) != nil {
		t.Fatal("Stalled condition left on a Ready topic")
	}
}
