{{/*
The chart name, overridable.
*/}}
{{- define "kueue-guard.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The prefix of every namespaced resource name: the release name, or
release-chart when the release name does not contain the chart name.
*/}}
{{- define "kueue-guard.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "kueue-guard.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels on every object.
*/}}
{{- define "kueue-guard.labels" -}}
helm.sh/chart: {{ include "kueue-guard.chart" . }}
{{ include "kueue-guard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: webhook
app.kubernetes.io/part-of: kueue-guard
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Labels that select the webhook pods.
*/}}
{{- define "kueue-guard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kueue-guard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kueue-guard.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kueue-guard.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The webhook Service, which the webhook configurations call.
*/}}
{{- define "kueue-guard.serviceName" -}}
{{- printf "%s-webhook" (include "kueue-guard.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The Secret holding the serving certificate.
*/}}
{{- define "kueue-guard.tlsSecretName" -}}
{{- default (printf "%s-webhook-tls" (include "kueue-guard.fullname" .)) .Values.tls.secretName }}
{{- end }}

{{/*
The serving Certificate whose CA cert-manager's cainjector puts into the
webhook configurations.
*/}}
{{- define "kueue-guard.servingCertificateName" -}}
{{- printf "%s-serving-cert" (include "kueue-guard.fullname" .) }}
{{- end }}

{{- define "kueue-guard.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
The generated parts of the chart (make generate): webhook names, paths and
rules from pkg/webhookconfig, and RBAC rules from what the server reads.
*/}}
{{- define "kueue-guard.generatedWebhooks" -}}
{{- $gen := .Files.Get "files/webhooks.yaml" }}
{{- if not $gen }}
{{- fail "files/webhooks.yaml is missing from the chart: run `make generate`" }}
{{- end }}
{{- /* The generated match conditions hold a placeholder for the trusted
requesters; the expression goes into single-quoted YAML scalars, so its quotes
are doubled. */}}
{{- $trusted := include "kueue-guard.trustedRequesterCEL" . | replace "'" "''" }}
{{- $gen | replace "__TRUSTED_REQUESTER__" $trusted }}
{{- end }}

{{/*
trust.controllers as the server runs with it: config.trust.controllers plus
Kueue's own service account in config.kueueNamespace. The configuration file
and the webhooks' match conditions are both rendered from this one list.
*/}}
{{- define "kueue-guard.trustedControllers" -}}
{{- $kueue := printf "system:serviceaccount:%s:kueue-controller-manager" .Values.config.kueueNamespace }}
{{- $list := .Values.config.trust.controllers | default list }}
{{- if not (has $kueue $list) }}
{{- $list = append $list $kueue }}
{{- end }}
{{- toJson $list }}
{{- end }}

{{/*
The CEL expression that is true for a request from a trusted controller, the
same expression the server's Go code builds (package trust, Matcher.CEL):
usernames, "prefix*" username prefixes and "group:NAME" groups.
*/}}
{{- define "kueue-guard.trustedRequesterCEL" -}}
{{- $users := list }}{{- $prefixes := list }}{{- $groups := list }}
{{- range (include "kueue-guard.trustedControllers" . | fromJsonArray) }}
{{- if hasPrefix "group:" . }}
{{- $groups = append $groups (printf "'%s'" (trimPrefix "group:" .)) }}
{{- else if hasSuffix "*" . }}
{{- $prefixes = append $prefixes (printf "'%s'" (trimSuffix "*" .)) }}
{{- else }}
{{- $users = append $users (printf "'%s'" .) }}
{{- end }}
{{- end }}
{{- $terms := list }}
{{- if $users }}
{{- $terms = append $terms (printf "request.userInfo.username in [%s]" (join ", " $users)) }}
{{- end }}
{{- if $prefixes }}
{{- $terms = append $terms (printf "[%s].exists(p, request.userInfo.username.startsWith(p))" (join ", " $prefixes)) }}
{{- end }}
{{- if $groups }}
{{- $terms = append $terms (printf "(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in [%s]))" (join ", " $groups)) }}
{{- end }}
{{- if $terms }}
{{- printf "(%s)" (join " || " $terms) }}
{{- else }}
{{- print "false" }}
{{- end }}
{{- end }}

{{- define "kueue-guard.generatedRBAC" -}}
{{- $gen := .Files.Get "files/rbac.yaml" }}
{{- if not $gen }}
{{- fail "files/rbac.yaml is missing from the chart: run `make generate`" }}
{{- end }}
{{- $gen }}
{{- end }}

{{/*
Annotations on both webhook configurations.
*/}}
{{- define "kueue-guard.webhookAnnotations" -}}
{{- if .Values.certManager.enabled }}
annotations:
  cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace (include "kueue-guard.servingCertificateName" .) }}
{{- end }}
{{- end }}

{{/*
The clientConfig of one webhook: the Service, on the webhook's path.
Call with (dict "root" $ "path" "/x").
*/}}
{{- define "kueue-guard.clientConfig" -}}
clientConfig:
  service:
    name: {{ include "kueue-guard.serviceName" .root }}
    namespace: {{ .root.Release.Namespace }}
    path: {{ .path }}
    port: {{ .root.Values.service.port }}
{{- end }}

{{/*
A namespaceSelector that excludes the namespaces in .exclude (by their
kubernetes.io/metadata.name label, which the API server sets on every
namespace) and adds the user's extra terms from .extra.
Call with (dict "exclude" (list ...) "extra" (dict ...)).
*/}}
{{- define "kueue-guard.namespaceSelector" -}}
namespaceSelector:
  {{- with get .extra "matchLabels" }}
  matchLabels:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values:
    {{- range .exclude }}
    - {{ . | quote }}
    {{- end }}
  {{- with get .extra "matchExpressions" }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

{{/*
The namespaces the workload webhooks skip. Always: kube-system, the release
namespace, Kueue's (config.kueueNamespace) and cert-manager's
(certManager.namespace), so that no kueue-guard fault can hold down what repairs
it; then webhooks.excludeNamespaces and config.exemptNamespaces, without
duplicates.
*/}}
{{- define "kueue-guard.workloadExclusions" -}}
{{- $always := list "kube-system" .Release.Namespace .Values.config.kueueNamespace .Values.certManager.namespace }}
{{- $all := concat $always .Values.webhooks.excludeNamespaces .Values.config.exemptNamespaces | compact | uniq }}
{{- toJson $all }}
{{- end }}

{{/*
The selectors and conditions of one webhook: "values" is its values block,
"generated" its generated block, whose match conditions (from pkg/webhookconfig)
come first and the values' after them.
*/}}
{{- define "kueue-guard.webhookOptions" -}}
{{- with .values.objectSelector }}
objectSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with concat (.generated.matchConditions | default list) (.values.matchConditions | default list) }}
matchConditions:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
The policy files to ship, as JSON (relative path: content; JSON rather than
YAML keeps every file's trailing newline exact): the chart's
files/policies (unless policies.shipped=false, less policies.exclude and the
excluded policies' _test.rego files), then policies.files, which win over
shipped files of the same path.
*/}}
{{- define "kueue-guard.policyFiles" -}}
{{- $out := dict }}
{{- if .Values.policies.shipped }}
{{- range $path, $content := .Files.Glob "files/policies/**" }}
{{- $rel := trimPrefix "files/policies/" $path }}
{{- /* Excluding a policy excludes its shipped tests. */}}
{{- $policy := regexReplaceAll "_test\\.rego$" $rel ".rego" }}
{{- if not (or (has $rel $.Values.policies.exclude) (has $policy $.Values.policies.exclude)) }}
{{- $_ := set $out $rel (toString $content) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $rel, $content := .Values.policies.files }}
{{- $_ := set $out $rel $content }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{/*
The ConfigMap key of a policy file path: ConfigMap keys cannot hold "/".
*/}}
{{- define "kueue-guard.policyKey" -}}
{{- . | replace "/" "__" }}
{{- end }}

{{/*
Whether the policy files hold a Rego test (_test.rego): the helm test runs
them, and `kueue-guard policy test` fails a directory without any.
*/}}
{{- define "kueue-guard.policyTests" -}}
{{- range $path, $_ := include "kueue-guard.policyFiles" . | fromJson }}
{{- if hasSuffix "_test.rego" $path }}true{{ end }}
{{- end }}
{{- end }}

{{/*
The policies volume: the policies ConfigMap, with items that restore the
policy directory's layout (ConfigMap keys are flat).
*/}}
{{- define "kueue-guard.policiesVolume" -}}
- name: policies
  configMap:
    name: {{ include "kueue-guard.fullname" . }}-policies
    {{- with (include "kueue-guard.policyFiles" . | fromJson) }}
    items:
    {{- range $path := keys . | sortAlpha }}
    - key: {{ include "kueue-guard.policyKey" $path }}
      path: {{ $path }}
    {{- end }}
    {{- end }}
{{- end }}

{{/*
The workload validating webhook's failure policy: Ignore under availability
failOpen, whose guarantees during an outage are the API server's twins
(apiServerRules, which it therefore requires); else the configured one.
*/}}
{{- define "kueue-guard.workloadFailurePolicy" -}}
{{- if eq .Values.availability "failOpen" }}
{{- if not .Values.apiServerRules.enabled }}
{{- fail "availability: failOpen needs apiServerRules.enabled: the API server's twins are what hold while kueue-guard is down" }}
{{- end }}
{{- print "Ignore" }}
{{- else }}
{{- print .Values.webhooks.validateWorkloads.failurePolicy }}
{{- end }}
{{- end }}
