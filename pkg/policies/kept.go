package policies

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/jsonmap"
)

// keptRequest is a request the canary ring keeps, its objects as JSON. Decoded,
// a queued JobSet is thousands of small maps and strings, which every cycle of
// the garbage collector marks while they are held: after make bench's streams
// the 64 requests the ring held were 39 % of a serving replica's live heap
// objects (a heap profile), and the collector's mark phases are where its
// open-loop tail is. JSON is one object the collector does not scan; kept so,
// the live heap in the open loop was 30–36 MB instead of 37–46 (gctrace).
type keptRequest struct {
	// req is the request without its objects (nor Raw and Undecoded, which
	// alias them or the review's buffer).
	req         admission.Request
	object, old keptObject
}

// keptObject is one object of a kept request: its JSON, and the managedFields
// the webhook left out of it (ManagedFieldsJSON), which the input splices in.
type keptObject struct {
	json, managedFields []byte
}

func keepRequest(req *admission.Request) (*keptRequest, error) {
	k := &keptRequest{req: *req}
	k.req.Object, k.req.OldObject, k.req.Raw, k.req.Undecoded = nil, nil, nil, nil
	var err error
	if k.object, err = keepObject(req, req.Object); err != nil {
		return nil, err
	}
	if k.old, err = keepObject(req, req.OldObject); err != nil {
		return nil, err
	}
	return k, nil
}

func keepObject(req *admission.Request, obj *unstructured.Unstructured) (keptObject, error) {
	if obj == nil {
		return keptObject{}, nil
	}
	b, err := obj.MarshalJSON()
	return keptObject{json: b, managedFields: req.ManagedFieldsJSON(obj)}, err
}

// request is the kept request with its objects decoded again.
func (k *keptRequest) request() (*admission.Request, error) {
	req := k.req
	var err error
	if req.Object, err = k.object.decode(&req); err != nil {
		return nil, err
	}
	if req.OldObject, err = k.old.decode(&req); err != nil {
		return nil, err
	}
	return &req, nil
}

// decode is the object, its undecoded managedFields bound to it in req (their
// JSON only: the shape check that reads the rest does not run on the canary).
func (o keptObject) decode(req *admission.Request) (*unstructured.Unstructured, error) {
	if o.json == nil {
		return nil, nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(o.json); err != nil {
		return nil, err
	}
	if o.managedFields != nil {
		req.Undecoded = append(req.Undecoded, admission.UndecodedManagedFields{Object: u, Deferred: jsonmap.Deferred{JSON: o.managedFields}})
	}
	return u, nil
}
