package handlers

import (
	"encoding/json"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// readEnvelope reads a decoded request's fields other than its objects into ar
// as admissionv1's typed decoder reads them: a null leaves a field as it is,
// an unknown key is ignored. It reports false for a value of another JSON type
// than its field's, which the typed decoder refuses; the caller then decodes
// the envelope with it. Reading the map costs a few allocations where encoding
// it again for the typed decoder cost about ninety (BenchmarkHandler, Job
// CREATE). options, which nothing reads, is kept as its JSON encoded again.
func readEnvelope(request map[string]any, ar *admissionv1.AdmissionRequest) bool {
	for k, v := range request {
		ok := true
		switch k {
		case "uid":
			var s string
			s, ok = str(v)
			ar.UID = types.UID(s)
		case "kind":
			ok = readGVK(v, &ar.Kind)
		case "resource":
			ok = readGVR(v, &ar.Resource)
		case "subResource":
			ar.SubResource, ok = str(v)
		case "requestKind":
			if v != nil {
				ar.RequestKind = &metav1.GroupVersionKind{}
				ok = readGVK(v, ar.RequestKind)
			}
		case "requestResource":
			if v != nil {
				ar.RequestResource = &metav1.GroupVersionResource{}
				ok = readGVR(v, ar.RequestResource)
			}
		case "requestSubResource":
			ar.RequestSubResource, ok = str(v)
		case "name":
			ar.Name, ok = str(v)
		case "namespace":
			ar.Namespace, ok = str(v)
		case "operation":
			var s string
			s, ok = str(v)
			ar.Operation = admissionv1.Operation(s)
		case "userInfo":
			ok = readUserInfo(v, &ar.UserInfo)
		case "dryRun":
			if v != nil {
				b, isBool := v.(bool)
				ar.DryRun, ok = &b, isBool
			}
		case "options":
			ok = readRaw(v, &ar.Options)
		}
		if !ok {
			return false
		}
	}
	return true
}

// str is a string field's value: "" for null.
func str(v any) (string, bool) {
	if v == nil {
		return "", true
	}
	s, ok := v.(string)
	return s, ok
}

// fieldsOf calls set with each key and value of an object; null is no object.
func fieldsOf(v any, set func(k string, v any) bool) bool {
	if v == nil {
		return true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range m {
		if !set(k, v) {
			return false
		}
	}
	return true
}

// readGroupVersion reads an object of a group, a version and a name (a kind
// or a resource, under nameKey), all strings, into their targets.
func readGroupVersion(v any, group, version *string, nameKey string, name *string) bool {
	return fieldsOf(v, func(k string, v any) (ok bool) {
		switch k {
		case "group":
			*group, ok = str(v)
		case "version":
			*version, ok = str(v)
		case nameKey:
			*name, ok = str(v)
		default:
			ok = true
		}
		return ok
	})
}

func readGVK(v any, gvk *metav1.GroupVersionKind) bool {
	return readGroupVersion(v, &gvk.Group, &gvk.Version, "kind", &gvk.Kind)
}

func readGVR(v any, gvr *metav1.GroupVersionResource) bool {
	return readGroupVersion(v, &gvr.Group, &gvr.Version, "resource", &gvr.Resource)
}

func readUserInfo(v any, u *authenticationv1.UserInfo) bool {
	return fieldsOf(v, func(k string, v any) (ok bool) {
		switch k {
		case "username":
			u.Username, ok = str(v)
		case "uid":
			u.UID, ok = str(v)
		case "groups":
			u.Groups, ok = strs(v)
		case "extra":
			// An object, even empty, is a map: the typed decoder makes one.
			if _, isMap := v.(map[string]any); isMap && u.Extra == nil {
				u.Extra = map[string]authenticationv1.ExtraValue{}
			}
			ok = fieldsOf(v, func(k string, v any) bool {
				values, ok := strs(v)
				u.Extra[k] = values
				return ok
			})
		default:
			ok = true
		}
		return ok
	})
}

// strs is a list of strings: nil for null, "" for a null element.
func strs(v any) ([]string, bool) {
	if v == nil {
		return nil, true
	}
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, len(list))
	for i, e := range list {
		if out[i], ok = str(e); !ok {
			return nil, false
		}
	}
	return out, true
}

// readRaw keeps v, any JSON value but null, encoded.
func readRaw(v any, raw *runtime.RawExtension) bool {
	if v == nil {
		return true
	}
	b, err := json.Marshal(v)
	raw.Raw = b
	return err == nil
}
