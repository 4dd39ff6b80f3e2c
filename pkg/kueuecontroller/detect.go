package kueuecontroller

import (
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Match is the evidence that an object runs a Kueue controller manager. The singleton
// guard puts Reasons into its denial so that whoever applied the object can see what
// gave it away, and Container into the field path.
type Match struct {
	// Reasons lists every distinct signal found, in a stable order (images, labels,
	// arguments), e.g. `image "registry.k8s.io/kueue/kueue:v0.19.2"`,
	// `labels app.kubernetes.io/name=kueue,control-plane=controller-manager`,
	// `argument --config=/controller_manager_config.yaml`. Values taken from the object
	// are shortened and quoted when needed, so a hostile object cannot flood or forge
	// the message.
	Reasons []string
	// Container is the container that runs the manager: the first whose image matched,
	// else the first whose arguments added a reason; "" when only labels matched.
	Container string
	// Version is the Kueue release the object says it runs (VersionOf): ""
	// when neither its image tag nor the chart's labels name one.
	Version string
}

// Label keys and values that Kueue's Helm chart and kustomize config put on the
// manager's pods (its selector labels).
const (
	labelName         = "app.kubernetes.io/name"
	labelNameValue    = "kueue"
	labelControlPlane = "control-plane"
	labelControlValue = "controller-manager"

	// configFileName is the manager configuration file Kueue's chart and kustomize
	// config mount and pass with --config.
	configFileName = "controller_manager_config.yaml"

	// Kueue's Helm chart marks its manager's pod template with this
	// annotation and control-plane=controller-manager, and the Deployment
	// with helm.sh/chart=kueue-<version> and
	// app.kubernetes.io/component=controller: neither pair changes with the
	// chart's nameOverride or fullnameOverride. (KueueViz, from the same
	// chart, carries the annotation and the chart label but neither
	// controller label.)
	chartChecksumAnnotation = "charts.kueue.x-k8s.io/config-checksum"
	labelHelmChart          = "helm.sh/chart"
	labelComponent          = "app.kubernetes.io/component"
	labelComponentValue     = "controller"

	// visibilityPort is the name of the container port of Kueue's visibility
	// API server, which only Kueue's manager serves.
	visibilityPort = "visibility"
)

const (
	// maxReasons bounds Match.Reasons: one distinct image or flag per container is
	// plenty to explain a denial, and an object with thousands of containers must not
	// produce a message of the same size.
	maxReasons = 16
	// maxShown bounds how much of an image or argument a reason quotes.
	maxShown = 200
)

// labelsReason is the reason recorded when the selector labels match.
var labelsReason = "labels " + labelName + "=" + labelNameValue + "," + labelControlPlane + "=" + labelControlValue

// podTemplatePaths says, per kind the controller guard admits, where the pod template
// lives. nil means the object is itself the Pod. Versions are exact: the API server
// serves these kinds at no other version, and an object without its apiVersion is
// malformed.
var podTemplatePaths = map[schema.GroupVersionKind][]string{
	{Group: "apps", Version: "v1", Kind: "Deployment"}:  {"spec", "template"},
	{Group: "apps", Version: "v1", Kind: "StatefulSet"}: {"spec", "template"},
	{Group: "apps", Version: "v1", Kind: "DaemonSet"}:   {"spec", "template"},
	{Group: "apps", Version: "v1", Kind: "ReplicaSet"}:  {"spec", "template"},
	{Group: "", Version: "v1", Kind: "Pod"}:             nil,
}

// containerLists are the pod spec fields scanned for containers, main containers first
// so that Match.Container names the manager rather than a helper.
var containerLists = []string{"containers", "initContainers", "ephemeralContainers"}

// Detect reports whether obj — an apps/v1 Deployment, StatefulSet, DaemonSet or
// ReplicaSet, or a v1 Pod, as received at admission — runs a Kueue controller manager,
// and why. It is what lets the singleton guard catch a second Kueue whatever it is
// called and wherever it is installed. Other kinds, nil and malformed objects never
// match; a Kueue manager run by any other controller is still caught at its Pods.
func Detect(obj *unstructured.Unstructured) (*Match, bool) {
	if obj == nil || obj.Object == nil {
		return nil, false
	}
	templatePath, known := podTemplatePaths[obj.GroupVersionKind()]
	if !known {
		return nil, false
	}
	template := obj.Object
	if templatePath != nil {
		template, _ = nestedMap(obj.Object, templatePath...) // nil when malformed
	}

	var d detection
	for _, list := range containerLists {
		containers, _ := nested(template, "spec", list).([]any)
		for _, c := range containers {
			d.container(c)
		}
	}
	templateLabels, _ := nestedMap(template, "metadata", "labels")
	templateAnnotations, _ := nestedMap(template, "metadata", "annotations")
	ownLabels, _ := nestedMap(obj.Object, "metadata", "labels")
	d.labels = hasSelectorLabels(templateLabels) || hasSelectorLabels(ownLabels)
	d.chart = chartReasons(ownLabels, templateLabels, templateAnnotations)

	if len(d.images) == 0 && !d.labels && len(d.chart) == 0 && len(d.managerArgs) == 0 {
		// The Configuration argument alone is not enough: see the package
		// documentation.
		return nil, false
	}
	m := &Match{Container: d.imageContainer, Version: versionOf(d.image, ownLabels, templateLabels)}
	if m.Container == "" && len(d.images) == 0 {
		m.Container = d.argContainer
	}
	m.Reasons = appendReasons(m.Reasons, d.images)
	if d.labels {
		m.Reasons = appendReasons(m.Reasons, []string{labelsReason})
	}
	m.Reasons = appendReasons(m.Reasons, d.chart)
	m.Reasons = appendReasons(m.Reasons, d.managerArgs)
	m.Reasons = appendReasons(m.Reasons, d.args)
	return m, true
}

// chartReasons are the marks of Kueue's Helm chart on a manager, whatever the
// release is called: the pod template's config-checksum annotation with
// control-plane=controller-manager, or the Deployment's
// helm.sh/chart=kueue-<version> with app.kubernetes.io/component=controller.
func chartReasons(own, template, annotations map[string]any) []string {
	var marks []string
	if _, ok := annotations[chartChecksumAnnotation]; ok {
		if plane, _ := template[labelControlPlane].(string); plane == labelControlValue {
			marks = append(marks, "pod template annotation "+chartChecksumAnnotation)
		}
	}
	chart, _ := own[labelHelmChart].(string)
	if component, _ := own[labelComponent].(string); component == labelComponentValue && isKueueChart(chart) {
		marks = append(marks, "label "+labelHelmChart+"="+shown(chart))
	}
	if len(marks) == 0 {
		return nil
	}
	return []string{"Kueue's Helm chart (" + strings.Join(marks, ", ") + ")"}
}

// isKueueChart reports whether a helm.sh/chart value names Kueue's chart at a
// version: kueue-0.19.2, kueue-v0.19.2 (not kueue-populator-0.1.0).
func isKueueChart(chart string) bool {
	v, ok := strings.CutPrefix(chart, "kueue-")
	v = strings.TrimPrefix(v, "v")
	return ok && v != "" && v[0] >= '0' && v[0] <= '9'
}

// detection accumulates the signals found while scanning one object.
type detection struct {
	images, args   []string // reasons, in scan order, possibly repeated
	imageContainer string   // first container whose image matched
	image          string   // and its image
	argContainer   string   // first container whose arguments matched
	labels         bool
	// chart are the marks of Kueue's Helm chart (chartReasons); managerArgs
	// the containers that pass Kueue's Configuration file and serve the
	// visibility API: Kueue's manager, whatever its image is called.
	chart, managerArgs []string
}

// container examines one entry of a container list. Entries that are not objects, and
// fields of the wrong type, are ignored.
func (d *detection) container(c any) {
	cm, ok := c.(map[string]any)
	if !ok {
		return
	}
	name, _ := cm["name"].(string)
	name = shorten(name)
	if image, ok := cm["image"].(string); ok && isKueueManagerImage(image) {
		d.images = append(d.images, "image "+strconv.Quote(shorten(image)))
		if d.imageContainer == "" {
			d.imageContainer, d.image = name, image
		}
	}
	// Command and args form one argv, so the two-word form may straddle them.
	command, _ := cm["command"].([]any)
	args, _ := cm["args"].([]any)
	found := false
	var prev string // previous argv element, when it was a string
	for _, list := range [][]any{command, args} {
		for _, a := range list {
			s, ok := a.(string)
			if !ok {
				prev = ""
				continue
			}
			if r, ok := configArgReason(prev, s); ok {
				d.args = append(d.args, r)
				found = true
			}
			prev = s
		}
	}
	if found && d.argContainer == "" {
		d.argContainer = name
	}
	if found && servesVisibility(cm) {
		d.managerArgs = append(d.managerArgs, "container port "+visibilityPort)
	}
}

// servesVisibility reports whether a container has a port named after Kueue's
// visibility API server.
func servesVisibility(c map[string]any) bool {
	ports, _ := c["ports"].([]any)
	for _, p := range ports {
		if pm, ok := p.(map[string]any); ok {
			if name, _ := pm["name"].(string); name == visibilityPort {
				return true
			}
		}
	}
	return false
}

// configArgReason reports whether argv element arg — preceded by prev — passes Kueue's
// configuration file to the manager, and renders the reason. Kueue's manager parses
// flags with Go's flag package, so -config and --config, with "=value" or with the
// value as the next word, are all the same flag.
func configArgReason(prev, arg string) (string, bool) {
	if value, ok := cutConfigFlag(arg); ok && value != "" {
		if isConfigFile(value) {
			return "argument " + shown(arg), true
		}
		return "", false
	}
	if prev == "--config" || prev == "-config" {
		if isConfigFile(arg) {
			return "argument " + shown(prev) + " " + shown(arg), true
		}
	}
	return "", false
}

// cutConfigFlag returns the value of a --config=value or -config=value argument.
func cutConfigFlag(arg string) (string, bool) {
	for _, prefix := range []string{"--config=", "-config="} {
		if v, ok := strings.CutPrefix(arg, prefix); ok {
			return v, true
		}
	}
	return "", false
}

// isConfigFile reports whether a --config value names Kueue's manager configuration
// file, wherever it is mounted.
func isConfigFile(value string) bool {
	return path.Base(strings.TrimSpace(value)) == configFileName
}

// hasSelectorLabels reports whether labels carry both of Kueue's selector labels. Values
// that are not strings do not count.
func hasSelectorLabels(labels map[string]any) bool {
	name, _ := labels[labelName].(string)
	plane, _ := labels[labelControlPlane].(string)
	return name == labelNameValue && plane == labelControlValue
}

// appendReasons appends the reasons not yet in dst, stopping at maxReasons.
func appendReasons(dst, reasons []string) []string {
	for _, r := range reasons {
		if len(dst) >= maxReasons {
			return dst
		}
		dup := slices.Contains(dst, r)
		if !dup {
			dst = append(dst, r)
		}
	}
	return dst
}

// shorten cuts s to at most maxShown bytes on a rune boundary, marking the cut.
func shorten(s string) string {
	if len(s) <= maxShown {
		return s
	}
	cut := maxShown
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// utf8RuneStart reports whether b can start a UTF-8 encoded rune.
func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// shown renders an argument for a reason: as is when it is plain, quoted when it holds
// spaces or unprintable characters that could garble or forge a message.
func shown(s string) string {
	s = shorten(s)
	for _, r := range s {
		if r == ' ' || !unicode.IsGraphic(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// nested returns the value at fields below m, or nil when any step is missing or not
// an object. It never copies.
func nested(m map[string]any, fields ...string) any {
	var cur any = m
	for _, f := range fields {
		cm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = cm[f]
	}
	return cur
}

// nestedMap returns the object at fields below m.
func nestedMap(m map[string]any, fields ...string) (map[string]any, bool) {
	v, ok := nested(m, fields...).(map[string]any)
	return v, ok
}

// maxKeptArg is the longest argv element KeptArgv keeps as it is.
const maxKeptArg = 256

// KeptArgv is what Detect reads of a container's command and args: the elements
// that pass Kueue's configuration file (with the flag word before the value in
// the two-word form), each in the list it was in, so that a copy holding only
// these is detected as the whole container is. An element longer than
// maxKeptArg becomes its flag and file name. The server's cache keeps every
// Deployment, and a tenant may give any of them megabytes of arguments.
func KeptArgv(command, args []any) (keptCommand, keptArgs []any) {
	lists := [2][]any{command, args}
	var kept [2][]any
	var prev string
	prevList := -1
	for l, list := range lists {
		for _, a := range list {
			s, ok := a.(string)
			if !ok {
				prev, prevList = "", -1
				continue
			}
			if _, ok := configArgReason(prev, s); ok {
				if _, inline := cutConfigFlag(s); !inline && prevList >= 0 {
					kept[prevList] = append(kept[prevList], prev)
				}
				kept[l] = append(kept[l], shortArg(s))
			}
			prev, prevList = s, l
		}
	}
	return kept[0], kept[1]
}

// shortArg cuts a --config element longer than maxKeptArg to its flag and the
// file name, which is all Detect matches on.
func shortArg(s string) string {
	if len(s) <= maxKeptArg {
		return s
	}
	if _, inline := cutConfigFlag(s); inline {
		flag, _, _ := strings.Cut(s, "=")
		return flag + "=…/" + configFileName
	}
	return "…/" + configFileName
}
