package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"

	"github.com/kueue-guard/kueue-guard/pkg/jsonmap"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// review is an AdmissionReview v1 body around request, a JSON object's members.
func review(request string) []byte {
	return []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{` + request + `}}`)
}

const (
	envelope = `"uid":"u","kind":{"group":"batch","version":"v1","kind":"Job"},"resource":{"group":"batch","version":"v1","resource":"jobs"},` +
		`"namespace":"ml","name":"j","userInfo":{"username":"alice","groups":["team"]},"dryRun":true`
	job = `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","labels":{"a":"1"}},` +
		`"spec":{"parallelism":4,"activeDeadlineSeconds":1.5,"template":{"spec":{"containers":[{"name":"m","resources":{"requests":{"cpu":"1"}}}]}}}}`
)

// stored is job with managedFields, as the API server sends every object.
const stored = `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","managedFields":[{"manager":"kubectl","operation":"Update",` +
	`"apiVersion":"batch/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:parallelism":{},"f:template":{"f:spec":{"f:containers":` +
	`{"k:{\"name\":\"m\"}":{".":{},"f:name":{}}}}}}}}]},"spec":{"parallelism":4}}`

// withManagedFields puts the managedFields decodeWithObjects left undecoded
// back into its objects, each decoded on its own.
func withManagedFields(objs *objects) {
	for _, u := range objs.undecoded {
		putBack(u.Object, u.JSON)
	}
}

// putBack decodes an object's undecoded managedFields into it.
func putBack(obj *unstructured.Unstructured, managedFields []byte) {
	if managedFields == nil {
		return
	}
	v, ok := jsonmap.Value(managedFields)
	Expect(ok).To(BeTrue())
	Expect(obj.Object["metadata"]).NotTo(HaveKey("managedFields"))
	obj.Object["metadata"].(map[string]any)["managedFields"] = v
}

// twoStep decodes body as the review's own decode and decode do: the reference
// decodeWithObjects must agree with.
func twoStep(body []byte) (req runtime.RawExtension, old runtime.RawExtension, object, oldObject *unstructured.Unstructured, envelope any) {
	ar, _, err := decodeReview(body)
	Expect(err).NotTo(HaveOccurred())
	var managedFields jsonmap.Deferred
	if len(ar.Object.Raw) > 0 {
		object, managedFields, err = decode(ar.Object.Raw, "object")
		Expect(err).NotTo(HaveOccurred())
		putBack(object, managedFields.JSON)
	}
	if len(ar.OldObject.Raw) > 0 {
		oldObject, managedFields, err = decode(ar.OldObject.Raw, "oldObject")
		Expect(err).NotTo(HaveOccurred())
		putBack(oldObject, managedFields.JSON)
	}
	req, old = ar.Object, ar.OldObject
	ar.Object, ar.OldObject = runtime.RawExtension{}, runtime.RawExtension{}
	return req, old, object, oldObject, ar
}

var _ = DescribeTable("decoding a review with its objects reads what the two-step decode reads, or leaves the review to it",
	func(body []byte, fast bool) {
		ar, objs, ok := decodeWithObjects(body)
		Expect(ok).To(Equal(fast))
		if !fast {
			return
		}
		_, _, object, oldObject, env := twoStep(body)
		Expect(objs.size).To(Equal(len(body)))
		Expect(objs.undecoded).To(HaveLen(bytes.Count(body, []byte(`"managedFields"`))), "managedFields left undecoded")
		withManagedFields(objs)
		Expect(cmp.Diff(object, objs.object)).To(BeEmpty(), "object")
		Expect(cmp.Diff(oldObject, objs.oldObject)).To(BeEmpty(), "oldObject")
		ar.Object, ar.OldObject = runtime.RawExtension{}, runtime.RawExtension{}
		Expect(cmp.Diff(env, ar)).To(BeEmpty(), "the envelope")
	},
	Entry("a CREATE: integers stay int64, other numbers float64", review(envelope+`,"operation":"CREATE","object":`+job), true),
	Entry("an UPDATE", review(envelope+`,"operation":"UPDATE","object":`+job+`,"oldObject":`+job), true),
	Entry("managed fields, left undecoded", review(envelope+`,"operation":"UPDATE","object":`+stored+`,"oldObject":`+stored), true),
	Entry("managed fields of null", review(envelope+`,"operation":"CREATE","object":{"kind":"Job","metadata":{"managedFields":null}}`), true),
	Entry("managed fields that are not JSON", review(envelope+`,"operation":"CREATE","object":{"kind":"Job","metadata":{"managedFields":[{"a":tru}]}}`), false),
	Entry("managed fields repeated", review(envelope+`,"operation":"CREATE","object":{"kind":"Job","metadata":{"managedFields":[],"managedFields":[]}}`), false),
	Entry("a DELETE with the old object only", review(envelope+`,"operation":"DELETE","oldObject":`+job), true),
	Entry("a null object", review(envelope+`,"operation":"CREATE","object":null`), true),
	Entry("an object repeated", review(envelope+`,"operation":"CREATE","object":{"kind":"A","x":1},"object":`+job), false),
	Entry("a field of the envelope repeated", review(envelope+`,"operation":"CREATE","dryRun":"x","dryRun":false,"object":`+job), false),
	Entry("a key deep in the object repeated: the last is read", review(envelope+`,"operation":"CREATE","object":{"kind":"Job","spec":{"template":{"a":1,"a":2}}}`), true),
	Entry("an object without a kind", review(envelope+`,"operation":"CREATE","object":{"apiVersion":"batch/v1"}`), false),
	Entry("an old object without a kind", review(envelope+`,"operation":"UPDATE","object":`+job+`,"oldObject":{}`), false),
	Entry("an object that is an array", review(envelope+`,"operation":"CREATE","object":[1]`), false),
	Entry("an object that is a string", review(envelope+`,"operation":"CREATE","object":"x"`), false),
	Entry("an object that is not JSON", review(envelope+`,"operation":"CREATE","object":{"kind":}`), false),
	Entry("a field of the envelope of the wrong type", review(`"uid":7,"operation":"CREATE","object":`+job), false),
	Entry("a v1beta1 review", []byte(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"object":`+job+`}}`), false),
	Entry("no request", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), false),
	Entry("a response", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":5,"request":{"object":`+job+`}}`), false),
)

var _ = DescribeTable("decoding a review around its objects' bytes reads what the typed decode reads, or leaves the review to it",
	func(body []byte, fast bool) {
		ar, ok := decodeEnvelope(body)
		Expect(ok).To(Equal(fast))
		if !fast {
			return
		}
		want, _, err := decodeReview(body)
		Expect(err).NotTo(HaveOccurred())
		Expect(cmp.Diff(want, ar)).To(BeEmpty())
	},
	Entry("a CREATE", review(envelope+`,"operation":"CREATE","object":`+job), true),
	Entry("an UPDATE, managed fields and all", review(envelope+`,"operation":"UPDATE","object":`+stored+`,"oldObject":`+job), true),
	Entry("a DELETE with the old object only", review(envelope+`,"operation":"DELETE","oldObject":`+job), true),
	Entry("a null object: no bytes", review(envelope+`,"operation":"CREATE","object":null`), true),
	Entry("an object as written, whitespace inside kept", review(envelope+`,"operation":"CREATE","object": { "kind" : "Job" , "a":[ 1 ] } `), true),
	Entry("keys repeated inside an object: its bytes", review(envelope+`,"operation":"CREATE","object":{"kind":"A","kind":"Job"}`), true),
	Entry("an object that is an array: its bytes, refused later", review(envelope+`,"operation":"CREATE","object":[1]`), true),
	Entry("an object repeated", review(envelope+`,"operation":"CREATE","object":{"kind":"A"},"object":`+job), false),
	Entry("a field of the envelope repeated", review(envelope+`,"operation":"CREATE","dryRun":"x","dryRun":false,"object":`+job), false),
	Entry("an object that is not JSON", review(envelope+`,"operation":"CREATE","object":{"kind":}`), false),
	Entry("a field of the envelope of the wrong type", review(`"uid":7,"operation":"CREATE","object":`+job), false),
	Entry("a v1beta1 review", []byte(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"object":`+job+`}}`), false),
	Entry("a response", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":5,"request":{"object":`+job+`}}`), false),
)

// typedEnvelope is the request of a review body as admissionv1's typed decoder
// reads it, its objects and options aside, and whether it can.
func typedEnvelope(body []byte) (admissionv1.AdmissionRequest, bool) {
	var r admissionv1.AdmissionReview
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(body, &r); err != nil || r.Request == nil {
		return admissionv1.AdmissionRequest{}, false
	}
	return *r.Request, true
}

// envelopesAgree fails unless readEnvelope reads request as the typed decoder
// does, or reports false where it refuses. options is compared as JSON.
func envelopesAgree(request string) error {
	body := review(request)
	want, wantOK := typedEnvelope(body)
	m, ok := jsonmap.ObjectUniqueTo(body, envelopeDepth)
	if !ok {
		return nil
	}
	reqMap, isMap := m["request"].(map[string]any)
	if !isMap {
		return nil
	}
	var got admissionv1.AdmissionRequest
	ok = readEnvelope(reqMap, &got)
	switch {
	case ok && !wantOK:
		return fmt.Errorf("read an envelope the typed decoder refuses: %s", request)
	case !ok:
		return nil
	}
	opts := func(r admissionv1.AdmissionRequest) any {
		var v any
		if len(r.Options.Raw) > 0 {
			_ = json.Unmarshal(r.Options.Raw, &v)
		}
		return v
	}
	if diff := cmp.Diff(opts(want), opts(got)); diff != "" {
		return fmt.Errorf("options of %s read otherwise:\n%s", request, diff)
	}
	for _, r := range []*admissionv1.AdmissionRequest{&want, &got} {
		r.Object, r.OldObject, r.Options = runtime.RawExtension{}, runtime.RawExtension{}, runtime.RawExtension{}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		return fmt.Errorf("%s read otherwise (-typed +read):\n%s", request, diff)
	}
	return nil
}

var _ = DescribeTable("reading a request's envelope as the typed decoder does, or declining",
	func(request string, reads bool) {
		Expect(envelopesAgree(request)).To(Succeed())
		m, ok := jsonmap.ObjectUniqueTo(review(request), envelopeDepth)
		Expect(ok).To(BeTrue())
		var ar admissionv1.AdmissionRequest
		Expect(readEnvelope(m["request"].(map[string]any), &ar)).To(Equal(reads))
	},
	Entry("every field", envelope+`,"operation":"UPDATE","subResource":"scale","requestKind":{"group":"autoscaling","version":"v1","kind":"Scale"},`+
		`"requestResource":{"group":"batch","version":"v1","resource":"jobs"},"requestSubResource":"scale",`+
		`"options":{"apiVersion":"meta.k8s.io/v1","kind":"UpdateOptions","fieldManager":"m"},"object":`+job, true),
	Entry("a user with extra and a uid", `"userInfo":{"username":"u","uid":"1","groups":["a",null],"extra":{"scopes":["x","y"],"none":null}}`, true),
	Entry("nulls everywhere", `"uid":null,"kind":null,"resource":{"group":null},"requestKind":null,"userInfo":{"groups":null,"extra":null},"dryRun":null,"options":null`, true),
	Entry("unknown fields, and fields in another case", `"uid":"u","Name":"x","kind":{"Kind":"Job","extra":1},"surprise":[1]`, true),
	Entry("dry run false", `"dryRun":false`, true),
	Entry("empty lists and objects", `"userInfo":{"groups":[],"extra":{}},"kind":{},"options":{}`, true),
	Entry("a uid that is a number", `"uid":7`, false),
	Entry("a kind that is a string", `"kind":"Job"`, false),
	Entry("a group that is a number", `"resource":{"group":1}`, false),
	Entry("groups that are not strings", `"userInfo":{"groups":[1]}`, false),
	Entry("extra that is a list", `"userInfo":{"extra":["a"]}`, false),
	Entry("extra values that are not a list", `"userInfo":{"extra":{"a":"b"}}`, false),
	Entry("dry run that is a string", `"dryRun":"true"`, false),
	Entry("a user that is a list", `"userInfo":[]`, false),
)

// FuzzEnvelope holds readEnvelope to the typed decoder on any request object.
func FuzzEnvelope(f *testing.F) {
	f.Add(envelope + `,"operation":"CREATE","dryRun":false,"options":{"a":[1.5,null]}`)
	f.Add(`"userInfo":{"username":"u","groups":["a",null],"extra":{"s":["x"],"n":null}},"requestKind":{"kind":"Scale"}`)
	f.Fuzz(func(t *testing.T, request string) {
		if err := envelopesAgree(request); err != nil {
			t.Fatal(err)
		}
	})
}

var _ = DescribeTable("a patch is encoded as json.Marshal encodes its operations, byte for byte",
	func(ops ...jsonpatch.Operation) {
		want, err := json.Marshal(ops)
		Expect(err).NotTo(HaveOccurred())
		got, err := patchJSON(ops)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(got)).To(Equal(string(want)))
	},
	Entry("a label added, a map, a flag", jsonpatch.NewOperation("add", "/metadata/labels/kueue.x-k8s.io~1queue-name", "q"),
		jsonpatch.NewOperation("add", "/metadata/labels", map[string]any{"a": "<b>&", "z": int64(1)}),
		jsonpatch.NewOperation("replace", "/spec/suspend", true), jsonpatch.NewOperation("replace", "/spec/suspend", false)),
	Entry("null values of an add and a replace", jsonpatch.NewOperation("add", "/a", nil), jsonpatch.NewOperation("replace", "/b", nil)),
	Entry("a remove, with no value", jsonpatch.NewOperation("remove", "/metadata/labels/a", nil)),
	Entry("a test and a move with values", jsonpatch.NewOperation("test", "/a", "x"), jsonpatch.Operation{Operation: "move", Path: "/b"}),
	Entry("empty values", jsonpatch.NewOperation("add", "/a", map[string]any{}), jsonpatch.NewOperation("add", "/b", []any{}),
		jsonpatch.NewOperation("add", "/c", "")),
)

var _ = It("refuses a patch value JSON cannot hold", func() {
	_, err := patchJSON([]jsonpatch.Operation{jsonpatch.NewOperation("add", "/a", make(chan int))})
	Expect(err).To(HaveOccurred())
})
