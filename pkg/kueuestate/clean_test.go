package kueuestate_test

import (
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/kueuestate"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// liveClusterQueue is a ClusterQueue as the API server returns it: the admin
// set cohort, namespaceSelector and resourceGroups (an atomic list); the CRD's
// defaults filled in queueingStrategy and flavorFungibility; Kueue wrote its
// finalizer and status.
const liveClusterQueue = `
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-a
  uid: 0b5f7a52-3f5e-4b1e-9f6a-7d0c7d0c7d0c
  resourceVersion: "4242"
  generation: 3
  creationTimestamp: "2026-12-01T10:00:00Z"
  finalizers: [kueue.x-k8s.io/resource-in-use]
  labels: {team: a}
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"big":"json"}'
    owner: platform
  managedFields:
  - manager: kubectl
    operation: Apply
    apiVersion: kueue.x-k8s.io/v1beta2
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata: {f:labels: {f:team: {}}, f:annotations: {f:owner: {}}}
      f:spec: {f:cohortName: {}, f:namespaceSelector: {}, f:resourceGroups: {}}
  - manager: kueue
    operation: Update
    apiVersion: kueue.x-k8s.io/v1beta2
    fieldsType: FieldsV1
    fieldsV1: {f:metadata: {f:finalizers: {}}}
  - manager: kueue
    operation: Update
    subresource: status
    apiVersion: kueue.x-k8s.io/v1beta2
    fieldsType: FieldsV1
    fieldsV1: {f:status: {f:conditions: {}}}
spec:
  cohortName: research
  namespaceSelector: {}
  queueingStrategy: BestEffortFIFO
  flavorFungibility: {whenCanBorrow: MayStopSearch, whenCanPreempt: TryNextFlavor}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources:
      - {name: cpu, nominalQuota: "10"}
status:
  conditions: [{type: Active, status: "True"}]
`

func decode(doc string) *unstructured.Unstructured {
	GinkgoHelper()
	u := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
	return u
}

var _ = Describe("Clean", func() {
	It("keeps what the admin set and nothing the API server or Kueue wrote", func() {
		got := kueuestate.Clean(decode(liveClusterQueue))
		Expect(got.Object).To(Equal(decode(`
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-a
  labels: {team: a}
  annotations: {owner: platform}
spec:
  cohortName: research
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources:
      - {name: cpu, nominalQuota: "10"}
`).Object))
	})

	It("keeps every field of an object without managedFields (a file), and is idempotent", func() {
		file := decode(`
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: team-a}
spec: {clusterQueue: team-a, stopPolicy: None}
`)
		once := kueuestate.Clean(file)
		Expect(once.Object).To(Equal(file.Object))
		Expect(kueuestate.Clean(once).Object).To(Equal(once.Object))
	})
})

var _ = Describe("PruneDefaults", func() {
	schema := map[string]any{"properties": map[string]any{"spec": map[string]any{"properties": map[string]any{
		"queueingStrategy":  map[string]any{"default": "BestEffortFIFO"},
		"stopPolicy":        map[string]any{"default": "None"},
		"cohortName":        map[string]any{"type": "string"},
		"namespaceSelector": map[string]any{"type": "object"},
		"preemption": map[string]any{"properties": map[string]any{
			"withinClusterQueue": map[string]any{"default": "Never"},
		}},
	}}}}

	It("drops what equals its schema's default, and the maps that leaves empty, as kubectl create leaves them", func() {
		created := decode(`
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: made-by-create
  managedFields:
  - {manager: kubectl-create, operation: Update, apiVersion: kueue.x-k8s.io/v1beta2, fieldsType: FieldsV1,
     fieldsV1: {f:spec: {f:cohortName: {}, f:queueingStrategy: {}, f:stopPolicy: {}, f:preemption: {}}}}
spec:
  cohortName: research
  namespaceSelector: {}
  queueingStrategy: BestEffortFIFO
  stopPolicy: Hold
  preemption: {withinClusterQueue: Never}
`)
		got := kueuestate.Clean(created)
		Expect(got.Object["spec"]).To(HaveKey("queueingStrategy"), "an update's managedFields cannot tell a default")
		kueuestate.PruneDefaults(got.Object, schema)
		Expect(got.Object["spec"]).To(Equal(map[string]any{"cohortName": "research", "namespaceSelector": map[string]any{},
			"stopPolicy": "Hold"}), "defaults gone, a chosen value and an empty map the admin set kept")
	})
})

var _ = Describe("Write and Read", func() {
	It("write one file per kind, named in apply order, and read them back in that order", func() {
		lq := decode("apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: lq, namespace: a}\nspec: {clusterQueue: cq}\n")
		cq := decode("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\nspec: {cohortName: c}\n")
		rf := decode("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: default}\n")
		dir := GinkgoT().TempDir()
		files, err := kueuestate.Write([]*unstructured.Unstructured{lq, cq, rf}, dir, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(files).To(Equal([]string{"02-resourceflavors.yaml", "09-clusterqueues.yaml", "10-localqueues.yaml"}))
		Expect(os.WriteFile(filepath.Join(dir, "README.md"), []byte("not an object"), 0o644)).To(Succeed())
		back, err := kueuestate.Read(dir)
		Expect(err).NotTo(HaveOccurred())
		var kinds []string
		for _, o := range back {
			kinds = append(kinds, o.GetKind())
		}
		Expect(kinds).To(Equal([]string{"ResourceFlavor", "ClusterQueue", "LocalQueue"}))
	})

	It("refuses a file that is not Kubernetes objects, naming it", func() {
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("just: [a, list\n"), 0o644)).To(Succeed())
		_, err := kueuestate.Read(dir)
		Expect(err).To(MatchError(ContainSubstring("bad.yaml")))
	})
})
