package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"
)

// MaxRequestBytes bounds an AdmissionReview body, as controller-runtime's
// webhook does: the API server's own limit on an object is 3 MiB, and a review
// carries the object and the old object.
const MaxRequestBytes = 7 << 20

// reviewKind and reviewAPIVersion are the only AdmissionReview version the
// webhook configurations ask for (admissionReviewVersions: [v1]).
const (
	reviewKind       = "AdmissionReview"
	reviewAPIVersion = "admission.k8s.io/v1"
)

// Serve is the HTTP side of one webhook path: an AdmissionReview v1 in, the
// handler's answer out as an AdmissionReview v1. It does what
// controller-runtime's admission.Webhook does, with less work per request —
// one case-sensitive pass over the review (with its objects decoded, for a path
// that reads them; their bytes kept for the mutating path, which peeks at their
// labels first), no per-request logger unless
// something is logged, pooled buffers — because an admission webhook sits on
// the write path of every job submission. A handler panic fails that request
// with a 500 and never the server. logger is put into each request's context
// for the handler.
func Serve(h admission.Handler, logger logr.Logger) http.Handler {
	s := &reviewServer{handler: h, logger: logger}
	// A path that reads every request's objects (no peek at the labels
	// first) gets them decoded with the review, in one pass.
	if wh, ok := h.(*Handler); ok && wh.settled == nil {
		s.objects = wh
	}
	return s
}

// InFlight bounds the requests a server works on at once, over all its paths,
// by count and by the bytes of their bodies: beyond either a request is
// answered 429 Too Many Requests with a Retry-After before its body is read,
// which the API server's webhook client retries, so that a burst queues in
// the API server instead of piling up decoded objects here. The count alone
// let a tenant's burst of a few dozen large objects take hundreds of MiB; what
// decoding and judging a request costs grows with its body. A nil *InFlight
// does not bound.
type InFlight struct {
	count, bytes *semaphore.Weighted
	maxBytes     int64
	throttled    prometheus.Counter
}

// NewInFlight bounds to max requests and maxBytes of request bodies; a bound
// ≤ 0 is not applied. m, when not nil, counts the refused requests.
func NewInFlight(max int, maxBytes int64, m *Metrics) *InFlight {
	if max <= 0 && maxBytes <= 0 {
		return nil
	}
	l := &InFlight{}
	if max > 0 {
		l.count = semaphore.NewWeighted(int64(max))
	}
	if maxBytes > 0 {
		l.bytes, l.maxBytes = semaphore.NewWeighted(maxBytes), maxBytes
	}
	if m != nil {
		l.throttled = m.Throttled
	}
	return l
}

// SmallRequestBytes is the largest body the byte budget does not count: the
// count bound alone keeps what small requests hold small (256 × 64 KiB), and a
// burst of large objects from one namespace must not keep every other
// namespace's ordinary requests waiting for bytes.
const SmallRequestBytes = 64 << 10

// weight is what a request counts against the byte budget: 0 for a small body,
// else its declared length, or the most a body may be when it declares none;
// never more than the whole budget, so that one request of any allowed size
// can be served.
func (l *InFlight) weight(r *http.Request) int64 {
	if l.bytes == nil {
		return 0
	}
	n := r.ContentLength
	if n >= 0 && n <= SmallRequestBytes {
		return 0
	}
	if n < 0 || n > MaxRequestBytes {
		n = MaxRequestBytes
	}
	return min(n, l.maxBytes)
}

// retryAfter is what a refused request is told to wait.
const retryAfter = "1"

// Limit wraps h with the bound.
func (l *InFlight) Limit(h http.Handler) http.Handler {
	if l == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.count != nil {
			if !l.count.TryAcquire(1) {
				l.refuse(w, "kueue-guard is at its in-flight limit; retry")
				return
			}
			defer l.count.Release(1)
		}
		if n := l.weight(r); n > 0 {
			if !l.bytes.TryAcquire(n) {
				l.refuse(w, "kueue-guard is at its in-flight byte limit; retry")
				return
			}
			defer l.bytes.Release(n)
		}
		h.ServeHTTP(w, r)
	})
}

// refuse answers 429 with a Retry-After, counted.
func (l *InFlight) refuse(w http.ResponseWriter, msg string) {
	if l.throttled != nil {
		l.throttled.Inc()
	}
	w.Header().Set("Retry-After", retryAfter)
	http.Error(w, msg, http.StatusTooManyRequests)
}

type reviewServer struct {
	handler admission.Handler
	// objects, when not nil, is handler, given the objects decoded with the
	// review.
	objects *Handler
	logger  logr.Logger
}

// buffers are reused for request bodies and responses; a buffer grown by an
// unusually large review is not kept.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBuffer = 256 << 10

func getBuffer() *bytes.Buffer { return buffers.Get().(*bytes.Buffer) }

func putBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBuffer {
		b.Reset()
		buffers.Put(b)
	}
}

func (s *reviewServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := getBuffer()
	defer putBuffer(body)
	req, objs, status, err := s.readReview(r, body)
	if err != nil {
		s.logger.V(1).Info("refusing an unreadable admission review", "status", status, "error", err.Error())
		writeReview(w, admission.Errored(int32(status), err).AdmissionResponse)
		return
	}
	ctx := logr.NewContext(r.Context(), s.logger)
	resp := s.handle(ctx, req, objs)
	if err := complete(&resp, req); err != nil {
		// The patch did not marshal: refuse rather than admit unmutated.
		resp = admission.Errored(http.StatusInternalServerError, fmt.Errorf("internal error: encoding the patch: %w", err))
		_ = resp.Complete(req)
	}
	writeReview(w, resp.AdmissionResponse)
}

// complete is admission.Response.Complete with the patch encoded by patchJSON.
func complete(resp *admission.Response, req admission.Request) error {
	if len(resp.Patches) > 0 {
		patch, err := patchJSON(resp.Patches)
		if err != nil {
			return err
		}
		patchType := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType, resp.Patches = patch, &patchType, nil
	}
	return resp.Complete(req)
}

// wireOperation is a JSON patch operation as jsonpatch.Operation.MarshalJSON
// writes it: the value of an add or a replace even when null, of the others
// only when set.
type wireOperation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value *any   `json:"value,omitempty"`
}

// patchJSON is json.Marshal(ops), byte for byte, in one encoding: through each
// operation's MarshalJSON encoding/json validates and compacts every
// operation's output again, a tenth of what a Job CREATE that gets a patch
// cost (BenchmarkHandler mutate).
func patchJSON(ops []jsonpatch.Operation) ([]byte, error) {
	wire := make([]wireOperation, len(ops))
	for i := range ops {
		wire[i] = wireOperation{Op: ops[i].Operation, Path: ops[i].Path}
		if ops[i].Value != nil || ops[i].Operation == "add" || ops[i].Operation == "replace" {
			wire[i].Value = &ops[i].Value
		}
	}
	return json.Marshal(wire)
}

// handle runs the handler with a panic contained to this request.
func (s *reviewServer) handle(ctx context.Context, req admission.Request, objs *objects) (resp admission.Response) {
	defer func() {
		if v := recover(); v != nil {
			s.logger.Error(fmt.Errorf("panic: %v", v), "admission handler panicked", "uid", req.UID, "stack", string(debug.Stack()))
			resp = admission.Errored(http.StatusInternalServerError, errors.New("internal error while handling the request"))
		}
	}()
	if objs != nil {
		return s.objects.handle(ctx, req, objs)
	}
	return s.handler.Handle(ctx, req)
}

// readReview reads and decodes the review, with its objects when the path
// reads them (objs is then not nil); on error it returns the HTTP status the
// error deserves.
func (s *reviewServer) readReview(r *http.Request, body *bytes.Buffer) (admission.Request, *objects, int, error) {
	status, err := readBody(r, body)
	if err != nil {
		return admission.Request{}, nil, status, err
	}
	if s.objects != nil {
		if req, objs, ok := decodeWithObjects(body.Bytes()); ok {
			return req, objs, http.StatusOK, nil
		}
	} else if req, ok := decodeEnvelope(body.Bytes()); ok {
		return req, nil, http.StatusOK, nil
	}
	req, status, err := decodeReview(body.Bytes())
	return req, nil, status, err
}

// readBody reads the request's body into body.
func readBody(r *http.Request, body *bytes.Buffer) (int, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return http.StatusBadRequest, errors.New("request body is empty")
	}
	defer r.Body.Close()
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		return http.StatusBadRequest, fmt.Errorf("contentType=%s, expected application/json", ct)
	}
	if r.ContentLength > MaxRequestBytes {
		return http.StatusRequestEntityTooLarge, fmt.Errorf("request entity is too large; limit is %d bytes", MaxRequestBytes)
	}
	if r.ContentLength > 0 {
		body.Grow(int(r.ContentLength))
	}
	n, err := body.ReadFrom(io.LimitReader(r.Body, MaxRequestBytes+1))
	if err != nil {
		return http.StatusBadRequest, fmt.Errorf("reading the request body: %w", err)
	}
	if n > MaxRequestBytes {
		return http.StatusRequestEntityTooLarge, fmt.Errorf("request entity is too large; limit is %d bytes", MaxRequestBytes)
	}
	if n == 0 {
		return http.StatusBadRequest, errors.New("request body is empty")
	}
	return http.StatusOK, nil
}

// decodeReview decodes the review, its objects left as raw bytes.
func decodeReview(body []byte) (admission.Request, int, error) {
	var review admissionv1.AdmissionReview
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(body, &review); err != nil {
		return admission.Request{}, http.StatusBadRequest, fmt.Errorf("decoding the admission review: %w", err)
	}
	if review.Kind != reviewKind || review.APIVersion != reviewAPIVersion {
		return admission.Request{}, http.StatusBadRequest, fmt.Errorf("expected a %s %s, got kind %q apiVersion %q",
			reviewAPIVersion, reviewKind, review.Kind, review.APIVersion)
	}
	if review.Request == nil {
		return admission.Request{}, http.StatusBadRequest, errors.New("the admission review has no request")
	}
	// The objects' bytes are copies (RawExtension copies what it decodes), so
	// the pooled body can be reused.
	return admission.Request{AdmissionRequest: *review.Request}, http.StatusOK, nil
}

// writeReview writes the response as an AdmissionReview v1.
func writeReview(w http.ResponseWriter, resp admissionv1.AdmissionResponse) {
	out := getBuffer()
	defer putBuffer(out)
	review := admissionv1.AdmissionReview{Response: &resp}
	review.Kind, review.APIVersion = reviewKind, reviewAPIVersion
	if err := json.NewEncoder(out).Encode(review); err != nil {
		// Only a handler bug can make a response unencodable.
		out.Reset()
		failed := admission.Errored(http.StatusInternalServerError, fmt.Errorf("encoding the response: %w", err)).AdmissionResponse
		failed.UID = resp.UID
		_ = json.NewEncoder(out).Encode(admissionv1.AdmissionReview{Response: &failed})
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out.Bytes())
}
