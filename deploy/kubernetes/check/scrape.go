package check

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// PromConfig is the part of a Prometheus config this check reads; promtool checks
// the whole of it.
type PromConfig struct {
	ScrapeConfigs []PromScrapeConfig `json:"scrape_configs"`
}

// PromScrapeConfig is one Prometheus scrape job.
type PromScrapeConfig struct {
	JobName         string `json:"job_name"`
	HonorLabels     bool   `json:"honor_labels"`
	HonorTimestamps *bool  `json:"honor_timestamps"`
	Scheme          string `json:"scheme"`
	Authorization   *struct {
		Type            string `json:"type"`
		CredentialsFile string `json:"credentials_file"`
	} `json:"authorization"`
	KubernetesSDConfigs []struct {
		Role       string `json:"role"`
		Namespaces struct {
			Names []string `json:"names"`
		} `json:"namespaces"`
	} `json:"kubernetes_sd_configs"`
	RelabelConfigs []Relabel `json:"relabel_configs"`
}

// Relabel is one relabel_configs entry (keep and drop only, see below).
type Relabel struct {
	SourceLabels []string `json:"source_labels"`
	Separator    *string  `json:"separator"`
	Regex        *string  `json:"regex"`
	Action       string   `json:"action"`
}

// CheckScrapeConfig checks a Prometheus config's scrape jobs against the gateway of
// a rendering: discovery of its pods in its namespace, relabeling that keeps its
// pods' "metrics" port and nothing else, and the settings that keep series exact
// across replicas.
func CheckScrapeConfig(data []byte, g *Gateway) error {
	var cfg PromConfig
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return err
	}
	if len(cfg.ScrapeConfigs) == 0 {
		return errors.New("no scrape_configs")
	}
	var errs []error
	jobs := map[string]bool{}
	for _, sc := range cfg.ScrapeConfigs {
		jobs[sc.JobName] = true
		var err error
		if keepsOnly(sc, g, TelemetryPortName) {
			err = checkTelemetryJob(sc, g)
		} else {
			err = checkScrapeJob(sc, g)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("job %s: %w", sc.JobName, err))
		}
	}
	for _, job := range []string{MetricsJob, TelemetryJob} {
		if !jobs[job] {
			errs = append(errs, fmt.Errorf("no job %s: the alert rules (statsgate.rules.yaml) select it", job))
		}
	}
	return errors.Join(errs...)
}

// keepsOnly tells whether the job's relabeling keeps the gateway's container port
// named port and no other.
func keepsOnly(sc PromScrapeConfig, g *Gateway, port string) bool {
	kept, err := keptPorts(sc, g)
	return err == nil && len(kept) == 1 && kept[0] == port
}

// keptPorts runs the job's relabeling on the gateway's pod: one target per
// container port; it returns the names of the ports kept.
func keptPorts(sc PromScrapeConfig, g *Gateway) ([]string, error) {
	d := g.Deployment
	var kept []string
	for _, p := range g.Container.Ports {
		keep, err := relabelKeeps(sc.RelabelConfigs, podMeta(d.Namespace, d.Spec.Template.Labels, g.Container.Name, p))
		if err != nil {
			return nil, err
		}
		if keep {
			kept = append(kept, p.Name)
		}
	}
	return kept, nil
}

// checkTelemetryJob checks the job that scrapes the collector's own metrics: its
// name (the alert rules select it), discovery of the gateway's pods, and its port
// only, of the gateway's pods only.
func checkTelemetryJob(sc PromScrapeConfig, g *Gateway) error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	d := g.Deployment
	if sc.JobName != TelemetryJob {
		fail("scrapes the collector's own metrics as job %q; the alert rules select job %q", sc.JobName, TelemetryJob)
	}
	if len(sc.KubernetesSDConfigs) != 1 || sc.KubernetesSDConfigs[0].Role != "pod" {
		fail("want one kubernetes_sd_configs entry with role pod (each pod is a target)")
	} else if names := sc.KubernetesSDConfigs[0].Namespaces.Names; len(names) > 0 && !contains(names, d.Namespace) {
		fail("kubernetes_sd_configs discovers namespaces %v, the gateway runs in %q", names, d.Namespace)
	}
	if strings.ToLower(sc.Scheme) == "https" {
		fail("scheme https, but the collector serves its own metrics over plain HTTP")
	}
	telemetry, _ := namedPort(g.Container, TelemetryPortName)
	other := map[string]string{"app.kubernetes.io/name": "something-else"}
	if keep, _ := relabelKeeps(sc.RelabelConfigs, podMeta(d.Namespace, other, "app", telemetry)); keep {
		fail("relabel_configs keep port %q of any pod in the namespace, not only the gateway's", telemetry.Name)
	}
	return errors.Join(errs...)
}

func checkScrapeJob(sc PromScrapeConfig, g *Gateway) error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	d := g.Deployment
	if len(sc.KubernetesSDConfigs) != 1 || sc.KubernetesSDConfigs[0].Role != "pod" {
		fail("want one kubernetes_sd_configs entry with role pod (each pod is a target)")
	} else if names := sc.KubernetesSDConfigs[0].Namespaces.Names; len(names) > 0 && !contains(names, d.Namespace) {
		fail("kubernetes_sd_configs discovers namespaces %v, the gateway runs in %q", names, d.Namespace)
	}
	if !sc.HonorLabels {
		fail("honor_labels must be true, or every series takes the gateway pod's job and instance instead of its agent's")
	}
	if !isTrue(sc.HonorTimestamps) {
		fail("honor_timestamps must be set to true: the samples' own timestamps keep counters exact when agents move between replicas")
	}
	if want, got := scheme(g.Collector), strings.ToLower(sc.Scheme); got != want && !(got == "" && want == "http") {
		fail("scheme %q: the exporter serves %s", sc.Scheme, want)
	}
	if token, err := g.ScrapeToken(); err != nil {
		errs = append(errs, err)
	} else if token != nil && (sc.Authorization == nil || sc.Authorization.CredentialsFile == "") {
		fail("/metrics takes a bearer token (Secret %s): set authorization.credentials_file", token.Name)
	}

	if sc.JobName != MetricsJob {
		fail("scrapes the agents' metrics as job %q; the alert rules select up{job=%q}", sc.JobName, MetricsJob)
	}
	// Relabeling, run on the gateway's pod: one target per container port.
	metrics, _ := namedPort(g.Container, "metrics")
	kept, err := keptPorts(sc, g)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if len(kept) != 1 || kept[0] != metrics.Name {
		fail("relabel_configs keep the gateway's container ports %v; want exactly [%s]", kept, metrics.Name)
	}
	// ...and on another pod of the namespace, which must not be scraped.
	other := map[string]string{"app.kubernetes.io/name": "something-else"}
	if keep, _ := relabelKeeps(sc.RelabelConfigs, podMeta(d.Namespace, other, "app", metrics)); keep {
		fail("relabel_configs keep port %q of any pod in the namespace, not only the gateway's", metrics.Name)
	}
	return errors.Join(errs...)
}

// podMeta is the target Prometheus's pod discovery makes for one container port.
func podMeta(namespace string, labels map[string]string, container string, p corev1.ContainerPort) map[string]string {
	m := map[string]string{
		"__meta_kubernetes_namespace":                   namespace,
		"__meta_kubernetes_pod_phase":                   "Running",
		"__meta_kubernetes_pod_ready":                   "true",
		"__meta_kubernetes_pod_container_name":          container,
		"__meta_kubernetes_pod_container_port_name":     p.Name,
		"__meta_kubernetes_pod_container_port_number":   fmt.Sprint(p.ContainerPort),
		"__meta_kubernetes_pod_container_port_protocol": string(p.Protocol),
		"__meta_kubernetes_pod_container_init":          "false",
		"__address__":                                   fmt.Sprintf("10.0.0.1:%d", p.ContainerPort),
	}
	for k, v := range labels {
		m["__meta_kubernetes_pod_label_"+sanitize(k)] = v
		m["__meta_kubernetes_pod_labelpresent_"+sanitize(k)] = "true"
	}
	return m
}

var invalidLabelChars = regexp.MustCompile(`[^a-zA-Z0-9_]`)

func sanitize(name string) string { return invalidLabelChars.ReplaceAllString(name, "_") }

// relabelKeeps runs keep and drop rules as Prometheus does. Other actions fail: a
// label set per pod (replace, labelmap) would make the replicas' copies of one
// agent's series different series.
func relabelKeeps(rules []Relabel, target map[string]string) (bool, error) {
	for _, r := range rules {
		sep := ";"
		if r.Separator != nil {
			sep = *r.Separator
		}
		expr := "(.*)"
		if r.Regex != nil {
			expr = *r.Regex
		}
		re, err := regexp.Compile("^(?:" + expr + ")$")
		if err != nil {
			return false, fmt.Errorf("relabel regex %q: %w", expr, err)
		}
		values := make([]string, len(r.SourceLabels))
		for i, l := range r.SourceLabels {
			values[i] = target[l]
		}
		match := re.MatchString(strings.Join(values, sep))
		switch r.Action {
		case "keep":
			if !match {
				return false, nil
			}
		case "drop":
			if match {
				return false, nil
			}
		default:
			return false, fmt.Errorf("relabel action %q: this check runs keep and drop only; a label added per pod would split the replicas' copies of one series", r.Action)
		}
	}
	return true, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
