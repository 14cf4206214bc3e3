{{/* The name every object of the release starts with. */}}
{{- define "seckill.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "seckill.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "seckill.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* The gateway's Caddyfile: the values' own, or the chart's copy of the production file; with
the metrics site appended. */}}
{{- define "seckill.caddyfile" -}}
{{- if .Values.gateway.caddyfile -}}
{{ .Values.gateway.caddyfile }}
{{- else -}}
{{ .Files.Get "files/Caddyfile.production" }}
{{- end }}
{{- if .Values.gateway.metricsPort }}

# Added by the Helm chart: Caddy's metrics for Prometheus (the admin endpoint stays on loopback).
:{{ .Values.gateway.metricsPort }} {
	metrics
}
{{- end }}
{{- end -}}

{{- define "seckill.amqpURL" -}}
amqp://{{ .user }}:$(SECKILL_AMQP_PASSWORD)@{{ .root.Values.rabbitmq.host }}:{{ .root.Values.rabbitmq.port }}/{{ .root.Values.rabbitmq.vhost }}
{{- end -}}


{{/* The OTEL_* variables of a part (root, service) when tracing is on. */}}
{{- define "seckill.tracingEnv" -}}
{{- $t := .root.Values.tracing -}}
{{- if $t.enabled -}}
- name: POD_NAME
  valueFrom:
    fieldRef: {fieldPath: metadata.name}
- name: OTEL_TRACES_EXPORTER
  value: otlp
{{- with $t.endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
{{- end }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ $t.protocol | quote }}
- name: OTEL_TRACES_SAMPLER
  value: {{ $t.sampler | quote }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ $t.samplerArg | quote }}
- name: OTEL_SERVICE_NAME
  value: {{ .service | quote }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: "k8s.namespace.name={{ .root.Release.Namespace }},k8s.pod.name=$(POD_NAME),service.namespace={{ .root.Values.namespace }}"
{{- range $k, $v := $t.extraEnv }}
- name: {{ $k }}
  value: {{ $v | quote }}
{{- end }}
{{- end -}}
{{- end -}}
