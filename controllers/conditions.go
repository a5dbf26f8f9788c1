package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// setCondition sets a condition for the object's current generation.
func setCondition(conds *[]metav1.Condition, generation int64, typ string, status bool, reason, message string) {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: message, ObservedGeneration: generation})
}

// patchStatus writes obj's status when it differs from before's, which
// is obj as read: each controller derives the status from the world on
// every reconcile and writes it only when it changed. An object deleted
// meanwhile is no error.
func patchStatus(ctx context.Context, c client.Client, obj, before client.Object, status, beforeStatus any) error {
	if equality.Semantic.DeepEqual(status, beforeStatus) {
		return nil
	}
	if err := c.Status().Patch(ctx, obj, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
