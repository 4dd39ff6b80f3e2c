package review

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
)

// SARIF identity: the OASIS schema the output validates against, and the tool.
const (
	SARIFVersion   = "2.1.0"
	SARIFSchemaURI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
	toolName       = "kueue-guard"
	toolURI        = "https://github.com/kueue-guard/kueue-guard"
	// srcRoot is the uriBaseId of relative paths: code-scanning UIs resolve it
	// to the repository checkout.
	srcRoot = "%SRCROOT%"
	// fingerprintKey names the partial fingerprint that lets code-scanning UIs
	// track one finding across commits (rule, object and field; not the message,
	// whose numbers change).
	fingerprintKey = "kueueGuardFinding/v1"
)

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool        sarifTool          `json:"tool"`
	Invocations []sarifInvocation  `json:"invocations"`
	Artifacts   []sarifArtifact    `json:"artifacts,omitempty"`
	Results     []sarifResult      `json:"results"`
	Properties  map[string]any     `json:"properties,omitempty"`
	BaseIDs     map[string]sarifID `json:"originalUriBaseIds,omitempty"`
}

type sarifID struct {
	Description sarifMessage `json:"description"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri"`
	Version        string      `json:"version,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name,omitempty"`
	ShortDescription     *sarifMessage  `json:"shortDescription,omitempty"`
	FullDescription      *sarifMessage  `json:"fullDescription,omitempty"`
	DefaultConfiguration sarifRuleConf  `json:"defaultConfiguration"`
	Properties           map[string]any `json:"properties,omitempty"`
}

type sarifRuleConf struct {
	Level string `json:"level"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifInvocation struct {
	ExecutionSuccessful bool                `json:"executionSuccessful"`
	ExitCode            int                 `json:"exitCode"`
	Notifications       []sarifNotification `json:"toolExecutionNotifications,omitempty"`
}

type sarifNotification struct {
	Level     string          `json:"level"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations,omitempty"`
}

type sarifArtifact struct {
	Location sarifArtifactLocation `json:"location"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Level               string            `json:"level"`
	Message             sarifMessage      `json:"message"`
	Locations           []sarifLocation   `json:"locations"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Properties          map[string]any    `json:"properties,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation *sarifPhysical `json:"physicalLocation,omitempty"`
	LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifactLocation `json:"artifactLocation"`
	Region           *sarifRegion          `json:"region,omitempty"`
}

type sarifArtifactLocation struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId,omitempty"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

type sarifLogical struct {
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

// sarifLevel maps an enforcement to a SARIF level.
func sarifLevel(enforcement string) string {
	switch admission.Enforcement(enforcement) {
	case admission.EnforcementDeny:
		return "error"
	case admission.EnforcementWarn:
		return "warning"
	}
	return "note"
}

// artifactLocation turns a path into a SARIF artifact location: relative paths
// against %SRCROOT% (so code-scanning UIs link into the repository), absolute
// ones as file URIs.
func artifactLocation(path string) sarifArtifactLocation {
	if path == stdinName {
		return sarifArtifactLocation{URI: "stdin"}
	}
	slashed := filepath.ToSlash(filepath.Clean(path))
	if filepath.IsAbs(path) {
		u := url.URL{Scheme: "file", Path: slashed}
		return sarifArtifactLocation{URI: u.String()}
	}
	slashed = strings.TrimPrefix(slashed, "./")
	segs := strings.Split(slashed, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return sarifArtifactLocation{URI: strings.Join(segs, "/"), URIBaseID: srcRoot}
}

func location(file string, line int, o *Object) sarifLocation {
	loc := sarifLocation{PhysicalLocation: &sarifPhysical{ArtifactLocation: artifactLocation(file)}}
	if line > 0 {
		loc.PhysicalLocation.Region = &sarifRegion{StartLine: line}
	}
	if o != nil {
		loc.LogicalLocations = []sarifLogical{{FullyQualifiedName: logicalName(o), Kind: "object"}}
	}
	return loc
}

// logicalName is "apiVersion/Kind/namespace/name" (no namespace for cluster-scoped objects).
func logicalName(o *Object) string {
	parts := []string{o.APIVersion, o.Kind}
	if o.Namespace != "" {
		parts = append(parts, o.Namespace)
	}
	return strings.Join(append(parts, o.Name), "/")
}

func fingerprint(f Finding, o *Object) string {
	h := sha256.Sum256([]byte(strings.Join([]string{f.Rule, o.GroupVersionKind().GroupKind().String(), o.Namespace, o.Name, f.Field}, "\x00")))
	return hex.EncodeToString(h[:16])
}

// SARIF builds the SARIF 2.1.0 log of a report: one result per finding (deny →
// error, warn → warning, dryrun → note), located at the finding's field in the
// file; input errors and the review's notes are tool execution notifications.
func SARIF(rep *Report, version string) any {
	rules := rep.Rules()
	index := map[string]int{}
	driver := sarifDriver{Name: toolName, InformationURI: toolURI, Version: version, Rules: []sarifRule{}}
	for i, r := range rules {
		index[r.ID] = i
		sr := sarifRule{ID: r.ID, DefaultConfiguration: sarifRuleConf{Level: sarifLevel(r.Enforcement)},
			Properties: map[string]any{"kind": ruleKind(r)}}
		if r.Title != "" {
			sr.Name = r.Title
			sr.ShortDescription = &sarifMessage{Text: r.Title}
		}
		if r.Description != "" {
			sr.FullDescription = &sarifMessage{Text: r.Description}
		}
		if len(r.Files) > 0 {
			sr.Properties["files"] = r.Files
		}
		driver.Rules = append(driver.Rules, sr)
	}
	inv := sarifInvocation{ExecutionSuccessful: rep.ExitCode != ExitInputError, ExitCode: rep.ExitCode}
	for _, e := range rep.Errors {
		inv.Notifications = append(inv.Notifications, sarifNotification{Level: "error", Message: sarifMessage{Text: e.Message},
			Locations: []sarifLocation{location(e.File, e.Line, nil)}})
	}
	for _, n := range rep.Notes {
		inv.Notifications = append(inv.Notifications, sarifNotification{Level: "note", Message: sarifMessage{Text: n}})
	}
	results := []sarifResult{}
	for _, o := range rep.Objects {
		if o.Status == StatusError {
			inv.Notifications = append(inv.Notifications, sarifNotification{Level: "error",
				Message: sarifMessage{Text: o.Ref() + ": " + o.Reason}, Locations: []sarifLocation{location(o.Source.File, o.Source.Line, o)}})
		}
		for _, n := range o.Notes {
			inv.Notifications = append(inv.Notifications, sarifNotification{Level: "note",
				Message: sarifMessage{Text: o.Ref() + ": " + n}, Locations: []sarifLocation{location(o.Source.File, o.Source.Line, o)}})
		}
		for _, f := range o.Findings {
			props := map[string]any{"enforcement": f.Enforcement, "object": o.Ref()}
			if f.Field != "" {
				props["field"] = f.Field
			}
			results = append(results, sarifResult{
				RuleID: f.Rule, RuleIndex: index[f.Rule], Level: sarifLevel(f.Enforcement),
				Message:             sarifMessage{Text: o.Ref() + ": " + f.Message},
				Locations:           []sarifLocation{location(o.Source.File, f.Line, o)},
				PartialFingerprints: map[string]string{fingerprintKey: fingerprint(f, o)},
				Properties:          props,
			})
		}
	}
	run := sarifRun{Tool: sarifTool{Driver: driver}, Invocations: []sarifInvocation{inv}, Results: results,
		BaseIDs: map[string]sarifID{srcRoot: {Description: sarifMessage{Text: "The directory the review was run from."}}}}
	for _, f := range rep.files {
		run.Artifacts = append(run.Artifacts, sarifArtifact{Location: artifactLocation(f)})
	}
	return &sarifLog{Schema: SARIFSchemaURI, Version: SARIFVersion, Runs: []sarifRun{run}}
}

func ruleKind(r RuleInfo) string {
	if r.Policy {
		return "rego-policy"
	}
	return "built-in"
}

// RenderSARIF writes the report as a SARIF 2.1.0 log.
func RenderSARIF(w io.Writer, rep *Report, version string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(SARIF(rep, version))
}
