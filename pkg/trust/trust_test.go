package trust_test

import (
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/trust"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestTrust(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Trust Suite")
}

func owned(apiVersion, kind string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "o", UID: "u", Controller: new(true)}})
	return u
}

var _ = Describe("Matcher", func() {
	m := trust.New([]string{"system:kube-controller-manager", "system:serviceaccount:ops:*", "group:system:controllers"})

	DescribeTable("Trusted",
		func(u authenticationv1.UserInfo, want bool) { Expect(m.Trusted(u)).To(Equal(want)) },
		Entry("an exact username", authenticationv1.UserInfo{Username: "system:kube-controller-manager"}, true),
		Entry("a username prefix", authenticationv1.UserInfo{Username: "system:serviceaccount:ops:jobset"}, true),
		Entry("a group", authenticationv1.UserInfo{Username: "x", Groups: []string{"a", "system:controllers"}}, true),
		Entry("a lookalike username", authenticationv1.UserInfo{Username: "system:kube-controller-manager2"}, false),
		Entry("a prefix is not a suffix", authenticationv1.UserInfo{Username: "evil:system:serviceaccount:ops:x"}, false),
		Entry("a tenant", authenticationv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}}, false),
	)

	It("trusts nobody when nil or empty", func() {
		var none *trust.Matcher
		Expect(none.Trusted(authenticationv1.UserInfo{Username: "system:kube-controller-manager"})).To(BeFalse())
		Expect(trust.New(nil).CEL()).To(Equal("false"))
	})

	It("renders CEL over the same three lists", func() {
		Expect(m.CEL()).To(Equal("(request.userInfo.username in ['system:kube-controller-manager'] || " +
			"['system:serviceaccount:ops:'].exists(p, request.userInfo.username.startsWith(p)) || " +
			"(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in ['system:controllers'])))"))
	})

	It("believes an owner reference only from a trusted controller, and only for a Kueue-managed owner", func() {
		kcm := authenticationv1.UserInfo{Username: "system:kube-controller-manager"}
		Expect(m.PartOfAnother(kcm, owned("batch/v1", "Job"))).To(BeTrue())
		Expect(m.PartOfAnother(authenticationv1.UserInfo{Username: "alice"}, owned("batch/v1", "Job"))).To(BeFalse())
		Expect(m.PartOfAnother(kcm, owned("apps/v1", "ReplicaSet"))).To(BeFalse())
		Expect(m.PartOfAnother(kcm, owned("example.com/v1", "Job"))).To(BeFalse())
		Expect(m.PartOfAnother(kcm, &unstructured.Unstructured{Object: map[string]any{}})).To(BeFalse())
	})

	It("leaves to the server a child with a queue label of its own, and a child of a kind Kueue may ignore", func() {
		kcm := authenticationv1.UserInfo{Username: "system:kube-controller-manager"}
		labelled := owned("jobset.x-k8s.io/v1alpha2", "JobSet")
		labelled.SetLabels(map[string]string{integrations.QueueNameLabel: "lq"})
		Expect(m.PartOfAnother(kcm, labelled)).To(BeFalse(), "Kueue queues it by its own label when it does not manage the parent")
		labelled.SetLabels(map[string]string{integrations.QueueNameLabel: ""})
		Expect(m.PartOfAnother(kcm, labelled)).To(BeTrue(), "an empty queue label is no queue to Kueue")
		Expect(m.PartOfAnother(kcm, owned("ray.io/v1", "RayJob"))).To(BeFalse())
		Expect(trust.OwnerCEL()).To(ContainSubstring("'" + integrations.QueueNameLabel + "' in object.metadata.labels"))
		Expect(trust.OwnerCEL()).NotTo(ContainSubstring("ray.io/v1/RayJob"))
	})

	It("covers the documented default identities", func() {
		d := trust.New(config.DefaultTrustedControllers("kueue-system"))
		for _, u := range []string{"system:serviceaccount:kube-system:job-controller", "system:serviceaccount:kueue-system:kueue-controller-manager",
			"system:serviceaccount:jobset-system:jobset-controller-manager"} {
			Expect(d.Trusted(authenticationv1.UserInfo{Username: u})).To(BeTrue(), u)
		}
		Expect(d.Trusted(authenticationv1.UserInfo{Username: "system:serviceaccount:team-a:default"})).To(BeFalse())
	})
})
