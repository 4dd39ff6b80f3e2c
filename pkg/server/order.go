package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kueue-guard/kueue-guard/pkg/kueueorder"
	kgmetrics "github.com/kueue-guard/kueue-guard/pkg/metrics"
)

// webhookOrderMetric is the number of Kueue mutating webhook configurations the
// API server calls before kueue-guard's; anything but 0 needs fixing.
const webhookOrderMetric = "kueue_guard_webhook_order_problems"

// webhookOrder watches the cluster's mutating webhook configurations and says
// so, at start and on every change, when Kueue's run before ours (see package
// kueueorder): a log line naming the configurations and the fixes, and a gauge.
type webhookOrder struct {
	cache  cache.Cache
	ours   string
	gauge  prometheus.Gauge
	logger logr.Logger
	last   string
}

func newWebhookOrder(c cache.Cache, ours string, reg prometheus.Registerer, logger logr.Logger) (*webhookOrder, error) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: webhookOrderMetric,
		Help: "Kueue mutating webhook configurations the API server calls before kueue-guard's (0 is right)."})
	g, err := kgmetrics.Register(reg, g)
	if err != nil {
		return nil, err
	}
	return &webhookOrder{cache: c, ours: ours, gauge: g, logger: logger}, nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica reports.
func (*webhookOrder) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable.
func (w *webhookOrder) Start(ctx context.Context) error {
	inf, err := w.cache.GetInformer(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{})
	if err != nil {
		return fmt.Errorf("watching mutating webhook configurations: %w", err)
	}
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}); err != nil {
		return err
	}
	if !w.cache.WaitForCacheSync(ctx) {
		return nil
	}
	w.check(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
			w.check(ctx)
		}
	}
}

func (w *webhookOrder) check(ctx context.Context) {
	list := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	if err := w.cache.List(ctx, list); err != nil {
		w.logger.Error(err, "cannot check the mutating webhook order")
		return
	}
	problems := kueueorder.Check(w.ours, list.Items)
	w.gauge.Set(float64(len(problems)))
	var names []string
	for _, p := range problems {
		names = append(names, p.Configuration)
	}
	state := strings.Join(names, ",")
	if state == w.last {
		return
	}
	w.last = state
	if len(problems) == 0 {
		w.logger.Info("mutating webhook order is right: kueue-guard's runs before Kueue's", "configuration", w.ours)
		return
	}
	w.logger.Error(nil, "Kueue's mutating webhooks run before kueue-guard's: the API server calls configurations in name order, "+
		"so Kueue sees a job before kueue-guard labels it and does not suspend it, and the job runs outside quota. "+
		"Rename kueue-guard's configuration (chart value webhooks.mutatingName) to sort before these, "+
		"or set Kueue's mutatingWebhook.reinvocationPolicy to IfNeeded",
		"ours", w.ours, "kueueConfigurations", names, "kueueWebhooks", problems[0].Webhooks)
}
