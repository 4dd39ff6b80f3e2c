package server

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/kueuecontroller"
	kgmetrics "github.com/kueue-guard/kueue-guard/pkg/metrics"
)

// kueueInfoInterval is how often the running Kueue is read from the cache: a
// list of the cached Deployments and one parsed ConfigMap, no API call.
const kueueInfoInterval = 10 * time.Second

// kueueInfo publishes which Kueue the cluster runs (kueue_guard_kueue_info),
// warns, once per change, when its minor is not the one kueue-guard's
// arithmetic comes from, and makes that arithmetic follow the feature gates of
// Kueue's Configuration.
type kueueInfo struct {
	view *cluster.InformerView
	// synced waits for the caches: before they sync, no Kueue is known.
	synced func(context.Context) bool
	gauge  *prometheus.GaugeVec
	log    logr.Logger
	last   string
}

func newKueueInfo(view *cluster.InformerView, synced func(context.Context) bool, reg prometheus.Registerer, log logr.Logger) (*kueueInfo, error) {
	g, err := kgmetrics.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kueue_guard_kueue_info",
		Help: "1 for each Kueue controller manager found: the release it says it runs (version, \"\" when neither its image tag nor its chart labels name one), " +
			"whether that is the minor kueue-guard is tested against (tested), and the feature gates its Configuration sets.",
	}, []string{"namespace", "name", "version", "tested_version", "tested", "feature_gates"}))
	if err != nil {
		return nil, err
	}
	return &kueueInfo{view: view, synced: synced, gauge: g, log: log}, nil
}

// Start implements manager.Runnable.
func (k *kueueInfo) Start(ctx context.Context) error {
	if !k.synced(ctx) {
		return nil
	}
	t := time.NewTicker(kueueInfoInterval)
	defer t.Stop()
	for {
		k.update()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (k *kueueInfo) update() {
	var set map[string]bool // nil without a Configuration: Kueue's defaults
	if c, ok := k.view.KueueConfig(); ok {
		set = c.FeatureGates
	}
	gates := kueuecontroller.FormatFeatureGates(set)
	managers := k.view.KueueControllers()
	seen := make([]string, len(managers))
	for i, m := range managers {
		seen[i] = m.String() + "@" + m.Version
	}
	// Only a change is acted on: the series are not emptied between scrapes,
	// and a gate kueue-guard cannot follow is logged once.
	key := strings.Join(seen, ",") + "|" + gates
	if key == k.last {
		return
	}
	k.last = key
	// What kueue-guard charges follows the gates Kueue runs with.
	if err := cluster.FollowKueueFeatureGates(set); err != nil {
		k.log.Error(err, "Kueue's Configuration sets feature gates kueue-guard cannot follow")
	}
	k.gauge.Reset()
	for _, m := range managers {
		k.gauge.WithLabelValues(m.Namespace, m.Name, m.Version, kueuecontroller.TestedVersion,
			strconv.FormatBool(kueuecontroller.Assess(m.Version).Tested), gates).Set(1)
	}
	k.report(managers, gates)
}

// report logs the Kueue found, with a warning for a minor other than the
// tested one that names what is known to differ.
func (k *kueueInfo) report(managers []cluster.ControllerRef, gates string) {
	for _, m := range managers {
		s := kueuecontroller.Assess(m.Version)
		switch {
		case s.Tested:
			k.log.Info("Kueue found", "manager", m.String(), "version", m.Version, "featureGates", gates)
		case s.Version == "":
			k.log.Info("Kueue found; its release is unknown (no version in its image tag or chart labels)",
				"manager", m.String(), "testedVersion", kueuecontroller.TestedVersion)
		default:
			k.log.Info("WARNING: Kueue runs a minor kueue-guard is not tested against; what it charges may differ",
				"manager", m.String(), "version", m.Version, "testedVersion", kueuecontroller.TestedVersion,
				"knownDifferences", s.Differences)
		}
	}
}
