{{/* The chart's name: statsgate, unless nameOverride. */}}
{{- define "statsgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Object names: the release's name when it contains the chart's (helm install statsgate ...
gives the names of deploy/kubernetes), else <release>-<chart>. */}}
{{- define "statsgate.fullname" -}}
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

{{- define "statsgate.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride }}
{{- end }}

{{- define "statsgate.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The pods' labels and every selector: the same two as deploy/kubernetes, which the
scrape config, the NetworkPolicy and the alert rules' jobs rely on. */}}
{{- define "statsgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "statsgate.name" . }}
app.kubernetes.io/component: gateway
{{- end }}

{{- define "statsgate.labels" -}}
helm.sh/chart: {{ include "statsgate.chart" . }}
{{ include "statsgate.selectorLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "statsgate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "statsgate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "statsgate.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* mode: deployment only. */}}
{{- define "statsgate.validateValues" -}}
{{- if ne .Values.mode "deployment" }}
{{- fail (printf "mode %q is not supported: statsgate runs as a Deployment only (mode: deployment), a fleet of identical replicas behind a Service" (toString .Values.mode)) }}
{{- end }}
{{- end }}

{{/* resources.limits.memory in MiB (an integer quantity in Ki, Mi, Gi, Ti or bytes). */}}
{{- define "statsgate.memoryLimitMiB" -}}
{{- $mem := toString (required "resources.limits.memory is required: the memory sizing is derived from it" .Values.resources.limits.memory) }}
{{- if hasSuffix "Ti" $mem }}{{ mul (trimSuffix "Ti" $mem | int64) 1048576 }}
{{- else if hasSuffix "Gi" $mem }}{{ mul (trimSuffix "Gi" $mem | int64) 1024 }}
{{- else if hasSuffix "Mi" $mem }}{{ trimSuffix "Mi" $mem | int64 }}
{{- else if hasSuffix "Ki" $mem }}{{ div (trimSuffix "Ki" $mem | int64) 1024 }}
{{- else if regexMatch "^[0-9]+$" $mem }}{{ div ($mem | int64) 1048576 }}
{{- else }}{{ fail (printf "resources.limits.memory %q: use an integer with Ki, Mi, Gi or Ti, or bytes" $mem) }}
{{- end }}
{{- end }}

{{/* A percentage of the memory limit in whole MiB, rounded. */}}
{{- define "statsgate.percentOfLimit" -}}
{{- $limit := include "statsgate.memoryLimitMiB" .root | float64 }}
{{- round (divf (mulf $limit .percent) 100) 0 | int64 }}
{{- end }}

{{/* The collector config: the default (files/config.yaml), the fleet's names from these
values, then .Values.config merged over both. */}}
{{- define "statsgate.config" -}}
{{- $config := .Files.Get "files/config.yaml" | fromYaml }}
{{- $gossipPort := int (index .Values.ports "gossip-tcp" "containerPort") }}
{{- $fleet := dict "exporters" (dict "agentprometheus" (dict "fleet" (dict "join" (list (printf "%s-gossip:%d" (include "statsgate.fullname" .) $gossipPort))))) }}
{{- $config = mustMergeOverwrite $config $fleet (deepCopy .Values.config) }}
{{- toYaml $config }}
{{- end }}
