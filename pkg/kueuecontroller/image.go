package kueuecontroller

import (
	"slices"
	"strings"
)

const (
	// managerImageName is the last path element of the image AKS's managed Kueue and
	// some mirrors publish the manager under.
	managerImageName = "kueue-controller-manager"
	// upstreamImageName is the last path element of upstream's manager image
	// (registry.k8s.io/kueue/kueue). It counts below a path element that
	// mentions kueue, or as the whole path: a mirror that copies the image flat
	// into a private registry (myregistry.azurecr.io/kueue:v0.19.2). Under any
	// other path (ghcr.io/someone/kueue) it is too plain a name.
	upstreamImageName = "kueue"
)

// isKueueManagerImage reports whether an image reference names a Kueue controller
// manager image. It looks only at the repository path: the registry host is dropped so
// that a host such as kueue.example.com proves nothing, and tag and digest are dropped
// so that any version matches.
func isKueueManagerImage(image string) bool {
	elems := repositoryPath(image)
	if len(elems) == 0 {
		return false
	}
	switch elems[len(elems)-1] {
	case managerImageName:
		return true
	case upstreamImageName:
		if len(elems) == 1 {
			return true
		}
		for _, e := range elems[:len(elems)-1] {
			if strings.Contains(e, upstreamImageName) {
				return true
			}
		}
	}
	return false
}

// repositoryPath splits an image reference into the elements of its repository path,
// lower-cased, without registry host, tag or digest: "registry.k8s.io/kueue/kueue:v1"
// → [kueue kueue]. A reference it cannot make sense of yields nil.
//
// It is deliberately lenient, and so not distribution/reference's strict parser:
// the API server does not validate image references, and a guard that judged only
// references the grammar accepts would let an object with an odd tag, digest or
// case (Kueue:DEV, sha256:abc) through unjudged. Only the repository path is read,
// and no input makes it fail (it is fuzzed).
func repositoryPath(image string) []string {
	ref := strings.ToLower(strings.TrimSpace(image))
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref = ref[:i]
	}
	// A colon after the last slash starts the tag; one before it belongs to the
	// registry host's port (localhost:5000/kueue/kueue).
	if i := strings.LastIndexByte(ref, ':'); i >= 0 && i > strings.LastIndexByte(ref, '/') {
		ref = ref[:i]
	}
	if ref == "" {
		return nil
	}
	elems := strings.Split(ref, "/")
	// Docker's rule: the first element is a registry host when it has a dot or a
	// port, or is localhost; otherwise the reference is a Docker Hub path.
	if len(elems) > 1 && (strings.ContainsAny(elems[0], ".:") || elems[0] == "localhost") {
		elems = elems[1:]
	}
	if slices.Contains(elems, "") {
		return nil
	}
	return elems
}
