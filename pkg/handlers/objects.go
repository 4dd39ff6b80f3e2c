package handlers

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	guard "github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/jsonmap"
)

// envelopeDepth is how deep the review's fields that readEnvelope reads as the
// typed decoder does are nested: the review, the request, its kinds and user,
// the user's extra.
const envelopeDepth = 4

// undecodedPaths are the parts of a review's objects decodeWithObjects leaves
// undecoded: their managedFields (see guard.UndecodedManagedFields).
var undecodedPaths = [][]string{
	append([]string{"request", "object"}, guard.ManagedFieldsPath...),
	append([]string{"request", "oldObject"}, guard.ManagedFieldsPath...),
}

// objects are a request's objects decoded with its review.
type objects struct {
	object, oldObject *unstructured.Unstructured
	// undecoded are what decodeWithObjects left undecoded of them.
	undecoded []guard.UndecodedManagedFields
	// size is the review's length: the objects' own lengths are not known
	// apart, and the review's bounds them.
	size int
}

// decodeWithObjects decodes body with its objects in one pass (jsonmap): kept
// as RawExtensions (admissionv1's types), each object's bytes are scanned to
// validate the review, scanned again to skip them, copied, then validated and
// decoded on their own, about a third of what a large JobSet's update costs
// (BenchmarkHandler). The request's other fields are read from the decoded
// map as the typed decoder reads them (readEnvelope). The objects'
// managedFields are checked but left undecoded (undecodedPaths).
//
// It reports false for anything the review's own decode and decode would
// refuse or might read otherwise (a body jsonmap declines, a review of another
// version, an envelope field of the wrong type, an object that is not a JSON
// object or has no kind), which is then left to them: such a request gets the
// same answer either way.
func decodeWithObjects(body []byte) (admission.Request, *objects, bool) {
	review, undecodedFields, ok := jsonmap.ObjectDeferring(body, envelopeDepth, undecodedPaths)
	request, ok := requestOf(review, ok)
	if !ok {
		return admission.Request{}, nil, false
	}
	objs := &objects{size: len(body)}
	if objs.object, ok = kubernetesObject(request["object"]); !ok {
		return admission.Request{}, nil, false
	}
	if objs.oldObject, ok = kubernetesObject(request["oldObject"]); !ok {
		return admission.Request{}, nil, false
	}
	objs.undecoded = undecoded(objs.undecoded, objs.object, undecodedFields[0])
	objs.undecoded = undecoded(objs.undecoded, objs.oldObject, undecodedFields[1])
	var ar admission.Request
	if !readEnvelope(request, &ar.AdmissionRequest) {
		return admission.Request{}, nil, false
	}
	// An observer (tests) sees the objects as decoded, without their
	// managedFields; Raw stays empty.
	if objs.object != nil {
		ar.Object.Object = objs.object
	}
	if objs.oldObject != nil {
		ar.OldObject.Object = objs.oldObject
	}
	return ar, objs, true
}

// requestOf is a decoded review's request, when the review is one readEnvelope
// may read: false for a review of another version, or one with a response,
// which the API server never sends and which is left to the typed decoder to
// refuse or not.
func requestOf(review map[string]any, decoded bool) (map[string]any, bool) {
	if !decoded || review["apiVersion"] != reviewAPIVersion || review["kind"] != reviewKind {
		return nil, false
	}
	request, ok := review["request"].(map[string]any)
	if _, response := review["response"]; !ok || response {
		return nil, false
	}
	return request, true
}

// objectPaths are a review's objects, which decodeEnvelope leaves as bytes.
var objectPaths = [][]string{{"request", "object"}, {"request", "oldObject"}}

// decodeEnvelope is decodeReview for the mutating path, which reads its objects
// only after peeking at their labels: the review is decoded with jsonmap, its
// objects skipped and kept as bytes, as RawExtensions keep them. The typed
// decoder scans a review twice (checkValid, then the decode) and allocates
// through reflection: this took a third of what a Job CREATE that gets a
// patch costs (BenchmarkHandler mutate). It reports false for what
// decodeWithObjects leaves to the typed decoder, which then decides.
func decodeEnvelope(body []byte) (admission.Request, bool) {
	review, raw, ok := jsonmap.ObjectDeferring(body, envelopeDepth, objectPaths)
	request, ok := requestOf(review, ok)
	var ar admission.Request
	if !ok || !readEnvelope(request, &ar.AdmissionRequest) {
		return admission.Request{}, false
	}
	ar.Object.Raw, ar.OldObject.Raw = rawObject(raw[0].JSON), rawObject(raw[1].JSON)
	return ar, true
}

// rawObject is an object's bytes as a RawExtension decodes them: none for null.
func rawObject(b []byte) []byte {
	if string(b) == "null" {
		return nil
	}
	return b
}

// undecoded is list with obj's undecoded managedFields, when it has any.
func undecoded(list []guard.UndecodedManagedFields, obj *unstructured.Unstructured, managedFields jsonmap.Deferred) []guard.UndecodedManagedFields {
	if obj == nil || managedFields.JSON == nil {
		return list
	}
	return append(list, guard.UndecodedManagedFields{Object: obj, Deferred: managedFields})
}

// kubernetesObject is v as an object, nil for none (absent or null); false
// when v is not a JSON object or has no kind, which unstructured's decoder
// refuses.
func kubernetesObject(v any) (*unstructured.Unstructured, bool) {
	if v == nil {
		return nil, true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	u := &unstructured.Unstructured{Object: m}
	return u, u.GetKind() != ""
}
