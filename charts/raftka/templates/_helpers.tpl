{{- define "raftka.fullname" -}}
{{- printf "%s-operator" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "raftka.labels" -}}
app.kubernetes.io/name: raftka-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "raftka.selectorLabels" -}}
app.kubernetes.io/name: raftka-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "raftka.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "raftka.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}
