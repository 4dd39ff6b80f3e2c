package parity

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/gomega"
)

// owedNS is a namespace whose workloads must be queued (its default-queue
// annotation). It is annotated once the updates' objects are stored, so that
// they can start without a queue.
const owedNS = "parity-owed"

// coveredIn are objects of the kinds the queue twins cover
// (admission.TwinCovers) that Kueue holds by a suspend field or a gate.
func coveredIn(namespace, name string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range kindsIn(namespace, name) {
		in, ok := integrations.Lookup(o.GroupVersionKind().GroupKind())
		if ok && admission.TwinCovers(in) && (in.Suspension.Field != nil || in.Suspension.SchedulingGate != "") {
			out = append(out, o)
		}
	}
	return out
}

func setQueue(q string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) { fixtures.Object{Unstructured: u}.Queue(q) }
}

func removeQueue(u *unstructured.Unstructured) {
	l := u.GetLabels()
	delete(l, integrations.QueueNameLabel)
	u.SetLabels(l)
}

func release(u *unstructured.Unstructured) { fixtures.Object{Unstructured: u}.Released() }

// queueUpdates are updates of workloads' queues and holds, in a namespace
// that owes its workloads no queue and in one that does: queueing a running
// workload, moving and removing a held one's queue, resuming an unqueued one.
func queueUpdates() []request {
	Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: owedNS}})).To(Succeed())
	var out []request
	for _, namespace := range []string{ns, owedNS} {
		where := " (no queue owed)"
		if namespace == owedNS {
			where = " (queue owed)"
		}
		running, held, unqueued := coveredIn(namespace, "running"), coveredIn(namespace, "qheld"), coveredIn(namespace, "uheld")
		for i := range running {
			k := running[i].GetKind()
			h := fixtures.Object{Unstructured: held[i]}.Queue("lq").Held().Obj()
			u := fixtures.Object{Unstructured: unqueued[i]}.Held().Obj()
			for _, o := range []*unstructured.Unstructured{running[i], h, u} {
				store(trusted, o)
			}
			out = append(out,
				request{name: "a tenant queues a running " + k + where, as: tenant, obj: running[i], edit: setQueue("lq")},
				request{name: "a trusted controller queues a running " + k + where, as: trusted, obj: running[i], edit: setQueue("lq")},
				request{name: "a tenant moves a held " + k + " to another queue" + where, as: tenant, obj: h, edit: setQueue("other")},
				request{name: "a tenant removes a held " + k + "'s queue" + where, as: tenant, obj: h, edit: removeQueue},
				request{name: "a trusted controller removes a held " + k + "'s queue" + where, as: trusted, obj: h, edit: removeQueue},
				request{name: "a tenant resumes an unqueued " + k + where, as: tenant, obj: u, edit: release},
				request{name: "a trusted controller resumes an unqueued " + k + where, as: trusted, obj: u, edit: release},
				request{name: "a tenant queues and resumes an unqueued " + k + where, as: tenant, obj: u,
					edit: func(o *unstructured.Unstructured) { setQueue("lq")(o); release(o) }},
			)
		}
	}
	onCluster := onExistingCluster(fixtures.RayJob(owedNS, "uheld-on-cluster").Held().Obj())
	store(trusted, onCluster)
	out = append(out, request{name: "a tenant resumes an unqueued RayJob on an existing cluster (queue owed)", as: tenant,
		obj: onCluster, edit: release})

	ns := &corev1.Namespace{}
	Expect(admin.Get(ctx, client.ObjectKey{Name: owedNS}, ns)).To(Succeed())
	ns.Annotations = map[string]string{admission.DefaultQueueAnnotation: "team-queue"}
	Expect(admin.Update(ctx, ns)).To(Succeed())
	// The webhook reads the namespace from its cache: wait until it owes.
	i := slices.IndexFunc(out, func(r request) bool { return r.name == "a tenant removes a held Job's queue (queue owed)" })
	Expect(i).NotTo(Equal(-1))
	probe := out[i]
	Eventually(func() map[string]bool { return decide(probe).rules }, 30*time.Second).
		Should(HaveKey(admission.RuleQueueLabelRemoved), "the webhook sees %s's annotation", owedNS)
	return out
}

// onExistingCluster makes a RayJob run on an existing cluster: Kueue ignores
// it whatever its queue.
func onExistingCluster(rj *unstructured.Unstructured) *unstructured.Unstructured {
	unstructured.RemoveNestedField(rj.Object, "spec", "rayClusterSpec")
	Expect(unstructured.SetNestedStringMap(rj.Object, map[string]string{"ray.io/cluster": "shared"}, "spec", "clusterSelector")).To(Succeed())
	return rj
}

// backstopCreates are creates in the annotated defaultingNS that the
// defaulting backstop judges once nothing has labelled them: sent with
// kueue-guard's validating webhook alone (its mutating webhook removed), and
// with the validating twins alone (no mutating twin).
func backstopCreates() []request {
	var out []request
	for _, o := range coveredIn(defaultingNS, "backstop") {
		k := o.GetKind()
		queued := fixtures.Object{Unstructured: o.DeepCopy()}.Queue("own-queue").Obj()
		out = append(out,
			request{name: "a tenant's unqueued " + k + ", not defaulted", as: tenant, obj: o},
			request{name: "a trusted controller's unqueued " + k + ", not defaulted", as: trusted, obj: o.DeepCopy()},
			request{name: "a tenant's queued " + k + ", not defaulted", as: tenant, obj: queued},
		)
	}
	return append(out, request{name: "a tenant's unqueued RayJob on an existing cluster, not defaulted", as: tenant,
		obj: onExistingCluster(fixtures.RayJob(defaultingNS, "backstop-on-cluster").Obj())})
}
