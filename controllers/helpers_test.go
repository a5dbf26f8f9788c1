package controllers

import (
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raftka/raftka/internal/brokerclient"
)

type zapLevelT = zapcore.Level

func namespaceObject(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func clientInNamespace(ns string) client.InNamespace { return client.InNamespace(ns) }

func ctrlRequest(ns, name string) ctrl.Request {
	return ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

func benchClients() *brokerclient.Clients {
	return &brokerclient.Clients{Override: overrideAll(brokers.AllAddrs())}
}
