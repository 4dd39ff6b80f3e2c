package chart

import (
	"encoding/json"
	"errors"
	"fmt"

	certmanagerv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	kjson "sigs.k8s.io/json"
)

// Scheme holds the Go types of every kind the chart renders that has one in the
// module graph: the built-in kinds, CRDs and cert-manager's. (The optional
// ServiceMonitor has none here; its tests check it as unstructured.)
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(certmanagerv1.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}

var scheme = Scheme()

// ErrNoGoType is returned by DecodeStrict for a kind without a registered Go
// type, so callers can tell "unchecked" from "wrong".
var ErrNoGoType = errors.New("no Go type registered")

// DecodeStrict decodes a rendered object into its typed struct and fails on any
// field the type does not have, on a value of the wrong type, and on a key that
// differs only in case: the checks the API server applies with
// fieldValidation=Strict, which a chart typo would otherwise slip past (the
// server drops unknown fields silently by default).
func DecodeStrict(u *unstructured.Unstructured) (runtime.Object, error) {
	gvk := u.GroupVersionKind()
	obj, err := scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", gvk, u.GetName(), ErrNoGoType)
	}
	data, err := json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	strictErrs, err := kjson.UnmarshalStrict(data, obj)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", gvk.Kind, u.GetName(), err)
	}
	if len(strictErrs) > 0 {
		return nil, fmt.Errorf("%s %s: %w", gvk.Kind, u.GetName(), utilerrors.NewAggregate(strictErrs))
	}
	return obj, nil
}
