package policies

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"

	_ "embed"
)

// canarySamplesYAML are the sample workloads every new set is tried on besides
// the recent real inputs: one of every catalog kind, queued.
//
//go:embed canary_samples.yaml
var canarySamplesYAML []byte

// canarySamples are the samples' inputs, built once: a CREATE of each sample
// by a user, in a cluster holding nothing but the objects the samples need (a
// TrainJob's runtime), so no queue is found.
var canarySamples = sync.OnceValues(func() ([]*canaryInput, error) {
	return buildCanarySamples(canarySamplesYAML)
})

func buildCanarySamples(doc []byte) ([]*canaryInput, error) {
	var workloads []*unstructured.Unstructured
	var others []client.Object
	dec := k8syaml.NewYAMLOrJSONDecoder(bytes.NewReader(doc), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("canary samples: %w", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if _, ok := integrations.Lookup(u.GroupVersionKind().GroupKind()); ok {
			workloads = append(workloads, u)
		} else {
			others = append(others, u)
		}
	}
	view, err := cluster.NewSnapshot(others...)
	if err != nil {
		return nil, fmt.Errorf("canary samples: %w", err)
	}
	out := make([]*canaryInput, 0, len(workloads))
	for _, u := range workloads {
		in, _ := integrations.Lookup(u.GroupVersionKind().GroupKind())
		raw, err := u.MarshalJSON()
		if err != nil {
			return nil, err
		}
		req := &admission.Request{
			Raw: raw, Size: len(raw), UID: "kueue-guard-canary", Operation: admissionv1.Create, Kind: in.GVK,
			Namespace: u.GetNamespace(), Name: u.GetName(), Object: u,
			UserInfo: authenticationv1.UserInfo{Username: "kueue-guard:canary-sample", Groups: []string{"system:authenticated"}},
		}
		t := admission.Target{Integration: in}
		input, err := BuildInput(context.Background(), req, t, view)
		if err != nil {
			return nil, fmt.Errorf("canary sample %s: %w", in.GVK.Kind, err)
		}
		out = append(out, &canaryInput{sub: *subject(req, t, lookupNamespace(req, view)), input: input})
	}
	return out, nil
}
