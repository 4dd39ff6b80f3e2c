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
	object, old []byte
}

func keepRequest(req *admission.Request) (*keptRequest, error) {
	k := &keptRequest{req: *req}
	k.req.Object, k.req.OldObject, k.req.Raw, k.req.Undecoded = nil, nil, nil, nil
	var err error
	if req.Object != nil {
		if k.object, err = req.Object.MarshalJSON(); err != nil {
			return nil, err
		}
	}
	if req.OldObject != nil {
		if k.old, err = req.OldObject.MarshalJSON(); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// request is the kept request with its objects decoded again, as the webhook
// decodes them.
func (k *keptRequest) request() (*admission.Request, error) {
	req := k.req
	var err error
	if req.Object, err = decodeKept(k.object); err != nil {
		return nil, err
	}
	if req.OldObject, err = decodeKept(k.old); err != nil {
		return nil, err
	}
	return &req, nil
}

func decodeKept(data []byte) (*unstructured.Unstructured, error) {
	if data == nil {
		return nil, nil
	}
	if m, ok := jsonmap.Object(data); ok {
		return &unstructured.Unstructured{Object: m}, nil
	}
	u := &unstructured.Unstructured{}
	return u, u.UnmarshalJSON(data)
}
