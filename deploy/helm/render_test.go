package helm

import (
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
)

// The chart is rendered and linted with the packages Helm's own `helm template` and
// `helm lint --strict` run, called directly: the values merged over values.yaml and checked
// against values.schema.json (chartutil), the templates rendered (engine), NOTES.txt set aside
// and the manifests put in install order (releaseutil); the linter's rules (lint). Helm's
// action package would do the same and link the Kubernetes client, kustomize and the OCI
// registry code for a cluster these tests never talk to, which doubles the test binary.

// kubeVersion is the cluster version the chart is rendered for (`--kube-version 1.30`).
var kubeVersion = chartutil.KubeVersion{Version: "v1.30.0", Major: "1", Minor: "30"}

// helmTemplate is `helm template rel ./seckill -n shop --kube-version 1.30` with vals over
// values.yaml: the manifests, each after its `# Source:` line, as Helm prints them.
func helmTemplate(vals map[string]any) (string, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return "", err
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return "", err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = kubeVersion
	if ch.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return "", fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", ch.Metadata.KubeVersion, caps.KubeVersion.String())
	}
	opts := chartutil.ReleaseOptions{Name: "rel", Namespace: "shop", Revision: 1, IsInstall: true}
	values, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals, opts, caps, false)
	if err != nil {
		return "", err
	}
	files, err := engine.Render(ch, values)
	if err != nil {
		return "", err
	}
	for name := range files {
		if strings.HasSuffix(name, "/NOTES.txt") {
			delete(files, name)
		}
	}
	_, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	return b.String(), nil
}

// helmLint is `helm lint --strict ./seckill` with vals: every message, and
// the errors strict mode fails on (warnings and worse).
func helmLint(vals map[string]any) (msgs []support.Message, errs []error) {
	l := lint.AllWithKubeVersion(chartDir, vals, "", nil)
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			errs = append(errs, m.Err)
		}
	}
	return l.Messages, errs
}
