// Package check verifies the Kubernetes manifests in deploy/kubernetes offline: it
// renders the base and every overlay as `kubectl apply -k` does (kustomize's krusty),
// decodes every object strictly into its Kubernetes API type, and checks that the
// objects agree with each other and with the collector config they carry (ports,
// selectors, secrets, memory sizing, the fleet's gossip). The tests in this package
// run it on the real files and on broken copies of them.
package check

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	otelv1beta1 "github.com/open-telemetry/opentelemetry-operator/apis/v1beta1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	kusttypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
)

// kinds maps apiVersion + kind to the Go type an object decodes into. A kind that is
// not listed fails: the check cannot vouch for what it cannot decode.
var kinds = map[typeKey]func() any{
	{"v1", "Namespace"}:                                  func() any { return &corev1.Namespace{} },
	{"v1", "ServiceAccount"}:                             func() any { return &corev1.ServiceAccount{} },
	{"v1", "Service"}:                                    func() any { return &corev1.Service{} },
	{"v1", "ConfigMap"}:                                  func() any { return &corev1.ConfigMap{} },
	{"v1", "Secret"}:                                     func() any { return &corev1.Secret{} },
	{"apps/v1", "Deployment"}:                            func() any { return &appsv1.Deployment{} },
	{"policy/v1", "PodDisruptionBudget"}:                 func() any { return &policyv1.PodDisruptionBudget{} },
	{"autoscaling/v2", "HorizontalPodAutoscaler"}:        func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	{"monitoring.coreos.com/v1", "PodMonitor"}:           func() any { return &monitoringv1.PodMonitor{} },
	{"monitoring.coreos.com/v1", "PrometheusRule"}:       func() any { return &monitoringv1.PrometheusRule{} },
	{"networking.k8s.io/v1", "NetworkPolicy"}:            func() any { return &networkingv1.NetworkPolicy{} },
	{"kustomize.config.k8s.io/v1beta1", "Kustomization"}: func() any { return &kusttypes.Kustomization{} },
	// deploy/operator's example, for OpenTelemetry Operator users.
	{"opentelemetry.io/v1beta1", "OpenTelemetryCollector"}: func() any { return &otelv1beta1.OpenTelemetryCollector{} },
}

type typeKey struct{ apiVersion, kind string }

// Object is one decoded manifest: Value is a pointer to its API type
// (*appsv1.Deployment, ...).
type Object struct {
	APIVersion, Kind, Name, Namespace string
	Value                             any
}

// DecodeObject decodes one YAML document strictly: a duplicate key, a field the
// API type does not have, a field in the wrong case ("readinessprobe") or a value of
// the wrong type fails, as the API server's strict field validation would.
func DecodeObject(doc []byte) (Object, error) {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return Object{}, err
	}
	var tm metav1.TypeMeta
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, &tm); err != nil {
		return Object{}, fmt.Errorf("apiVersion/kind: %w", err)
	}
	if tm.APIVersion == "" || tm.Kind == "" {
		return Object{}, errors.New("no apiVersion or kind")
	}
	newValue := kinds[typeKey{tm.APIVersion, tm.Kind}]
	if newValue == nil {
		return Object{}, fmt.Errorf("%s %s: not a kind this check knows; add its Go type to the table in decode.go", tm.APIVersion, tm.Kind)
	}
	v := newValue()
	strict, err := sigsjson.UnmarshalStrict(j, v, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return Object{}, fmt.Errorf("%s %s: %w", tm.APIVersion, tm.Kind, err)
	}
	if len(strict) > 0 {
		return Object{}, fmt.Errorf("%s %s: %w", tm.APIVersion, tm.Kind, errors.Join(strict...))
	}
	obj := Object{APIVersion: tm.APIVersion, Kind: tm.Kind, Value: v}
	if m, ok := v.(metav1.Object); ok {
		obj.Name, obj.Namespace = m.GetName(), m.GetNamespace()
	}
	if k, ok := v.(*kusttypes.Kustomization); ok && k.MetaData != nil {
		obj.Name = k.MetaData.Name
	}
	return obj, nil
}

// SplitDocuments splits a YAML stream at its `---` lines, leaving out empty documents.
func SplitDocuments(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			docs = append(docs, doc)
		}
	}
}

// stripComments drops whole-line comments, so that a document of comments only
// counts as empty.
func stripComments(doc []byte) []byte {
	var out []byte
	for line := range bytes.Lines(doc) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '#' {
			continue
		}
		out = append(out, line...)
	}
	return out
}

// DecodeAll decodes every document of a YAML stream (a rendering) into a Set.
func DecodeAll(data []byte) (*Set, error) {
	docs, err := SplitDocuments(data)
	if err != nil {
		return nil, err
	}
	set := &Set{}
	var errs []error
	for i, doc := range docs {
		obj, err := DecodeObject(doc)
		if err != nil {
			errs = append(errs, fmt.Errorf("document %d: %w", i+1, err))
			continue
		}
		set.Add(obj)
	}
	return set, errors.Join(errs...)
}

// Set holds the objects of one rendering, by type.
type Set struct {
	Namespaces      []*corev1.Namespace
	ServiceAccounts []*corev1.ServiceAccount
	Services        []*corev1.Service
	ConfigMaps      []*corev1.ConfigMap
	Secrets         []*corev1.Secret
	Deployments     []*appsv1.Deployment
	PDBs            []*policyv1.PodDisruptionBudget
	HPAs            []*autoscalingv2.HorizontalPodAutoscaler
	PodMonitors     []*monitoringv1.PodMonitor
	PrometheusRules []*monitoringv1.PrometheusRule
	NetworkPolicies []*networkingv1.NetworkPolicy
	Other           []Object
}

// Add files obj under its type.
func (s *Set) Add(obj Object) {
	switch v := obj.Value.(type) {
	case *corev1.Namespace:
		s.Namespaces = append(s.Namespaces, v)
	case *corev1.ServiceAccount:
		s.ServiceAccounts = append(s.ServiceAccounts, v)
	case *corev1.Service:
		s.Services = append(s.Services, v)
	case *corev1.ConfigMap:
		s.ConfigMaps = append(s.ConfigMaps, v)
	case *corev1.Secret:
		s.Secrets = append(s.Secrets, v)
	case *appsv1.Deployment:
		s.Deployments = append(s.Deployments, v)
	case *policyv1.PodDisruptionBudget:
		s.PDBs = append(s.PDBs, v)
	case *autoscalingv2.HorizontalPodAutoscaler:
		s.HPAs = append(s.HPAs, v)
	case *monitoringv1.PodMonitor:
		s.PodMonitors = append(s.PodMonitors, v)
	case *monitoringv1.PrometheusRule:
		s.PrometheusRules = append(s.PrometheusRules, v)
	case *networkingv1.NetworkPolicy:
		s.NetworkPolicies = append(s.NetworkPolicies, v)
	default:
		s.Other = append(s.Other, obj)
	}
}
