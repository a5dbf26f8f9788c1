package controllers

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/raftka/raftka/internal/brokerclient"
)

// Options tune the controllers.
type Options struct {
	TopicResync time.Duration
	LagPeriod   time.Duration
}

// Setup registers every controller with the manager.
func Setup(mgr ctrl.Manager, brokers *brokerclient.Clients, opts Options) error {
	if opts.TopicResync <= 0 {
		opts.TopicResync = time.Minute
	}
	if opts.LagPeriod <= 0 {
		opts.LagPeriod = 15 * time.Second
	}
	if err := (&BrokerClusterReconciler{Client: mgr.GetClient(), Brokers: brokers}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&TopicReconciler{Client: mgr.GetClient(), Brokers: brokers, Resync: opts.TopicResync}).SetupWithManager(mgr); err != nil {
		return err
	}
	return (&ConsumerGroupReconciler{Client: mgr.GetClient(), Brokers: brokers, SyncPeriod: opts.LagPeriod}).SetupWithManager(mgr)
}
