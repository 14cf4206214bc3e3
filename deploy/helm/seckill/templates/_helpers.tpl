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
