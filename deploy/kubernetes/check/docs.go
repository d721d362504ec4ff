package check

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// createSecret is the command the README gives for a Secret, continuation lines
// joined: kubectl -n NAMESPACE create secret generic NAME --from-literal=KEY=...
var (
	createSecret = regexp.MustCompile(`kubectl\s+(?:-n|--namespace)[\s=]+(\S+)\s+create\s+secret\s+generic\s+(\S+)([^\n]*)`)
	secretKeyArg = regexp.MustCompile(`--from-(?:literal|file)=([-._a-zA-Z0-9]+)=`)
)

// SecretsUsed lists the Secret keys the gateway's container reads, from its
// environment and from mounted Secret volumes; Key is empty for a volume that
// mounts every key of its Secret.
func (g *Gateway) SecretsUsed() []corev1.SecretKeySelector {
	var used []corev1.SecretKeySelector
	for _, name := range slices.Sorted(maps.Keys(g.SecretEnv)) {
		used = append(used, g.SecretEnv[name])
	}
	pod := g.Deployment.Spec.Template.Spec
	for _, v := range pod.Volumes {
		if v.Secret == nil || !slices.ContainsFunc(g.Container.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == v.Name }) {
			continue
		}
		ref := corev1.LocalObjectReference{Name: v.Secret.SecretName}
		if len(v.Secret.Items) == 0 {
			used = append(used, corev1.SecretKeySelector{LocalObjectReference: ref})
		}
		for _, it := range v.Secret.Items {
			used = append(used, corev1.SecretKeySelector{LocalObjectReference: ref, Key: it.Key})
		}
	}
	return used
}

// CheckSecretsDocumented checks that readme (deploy/kubernetes/README.md) gives,
// for every Secret key the gateway reads, the kubectl command that creates it in
// the gateway's namespace: the Secrets are created by hand, never committed, so
// the README is the only place that says what to create.
func CheckSecretsDocumented(readme []byte, g *Gateway) error {
	text := strings.ReplaceAll(string(readme), "\\\n", " ")
	documented := map[string]map[string]bool{} // namespace/name -> keys
	for _, m := range createSecret.FindAllStringSubmatch(text, -1) {
		id := m[1] + "/" + m[2]
		if documented[id] == nil {
			documented[id] = map[string]bool{}
		}
		for _, k := range secretKeyArg.FindAllStringSubmatch(m[3], -1) {
			documented[id][k[1]] = true
		}
	}
	ns := g.Deployment.Namespace
	var errs []error
	for _, sel := range g.SecretsUsed() {
		keys, ok := documented[ns+"/"+sel.Name]
		if !ok || (sel.Key != "" && !keys[sel.Key]) {
			errs = append(errs, fmt.Errorf("the gateway reads the Secret %s (key %q), but no `kubectl -n %s create secret generic %s --from-literal=%s=...` creates it", sel.Name, sel.Key, ns, sel.Name, sel.Key))
		}
	}
	return errors.Join(errs...)
}
