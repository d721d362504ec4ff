package check

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// checkNetworkPolicy checks a NetworkPolicy that selects the gateway's pods: the
// agents reach OTLP from anywhere, the replicas reach each other's gossip port, and
// the two metrics ports (the agents' metrics, the collector's own, which has no
// authentication) are reached from selected namespaces only, never from anywhere.
// Every port a rule names must be a container port, or the rule admits nothing.
func checkNetworkPolicy(np *networkingv1.NetworkPolicy, g *Gateway) error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	podLabels := g.Deployment.Spec.Template.Labels
	if err := selects(&np.Spec.PodSelector, podLabels); err != nil {
		fail("podSelector: %v", err)
		return errors.Join(errs...)
	}
	ingress := len(np.Spec.PolicyTypes) == 0 // Ingress is implied then
	for _, t := range np.Spec.PolicyTypes {
		ingress = ingress || t == networkingv1.PolicyTypeIngress
	}
	if !ingress {
		fail("policyTypes %v: without Ingress the policy restricts nothing coming in", np.Spec.PolicyTypes)
	}

	for i, rule := range np.Spec.Ingress {
		for j, p := range rule.Ports {
			if p.Port == nil {
				continue
			}
			if cp, ok := containerPort(g.Container, *p.Port); !ok || protocol(cp.Protocol) != protocolOf(p) {
				fail("ingress[%d].ports[%d]: %s/%s is not a container port of the pod", i, j, p.Port.String(), protocolOf(p))
			}
		}
	}

	// What reaches each container port, by the port's role.
	gossipPeer := func(peer networkingv1.NetworkPolicyPeer) bool {
		return peer.NamespaceSelector == nil && peer.IPBlock == nil && peer.PodSelector != nil &&
			selects(peer.PodSelector, podLabels) == nil
	}
	for _, cp := range g.Container.Ports {
		var rules []networkingv1.NetworkPolicyIngressRule
		for _, rule := range np.Spec.Ingress {
			if admitsPort(rule, cp) {
				rules = append(rules, rule)
			}
		}
		anywhere := false
		for _, r := range rules {
			anywhere = anywhere || len(r.From) == 0
		}
		at := fmt.Sprintf("port %s (%d/%s)", cp.Name, cp.ContainerPort, protocol(cp.Protocol))
		switch cp.Name {
		case "otlp-grpc", "otlp-http":
			if !anywhere {
				fail("%s: agents in any namespace push OTLP; admit it from anywhere (a rule without from)", at)
			}
		case "metrics", TelemetryPortName:
			if len(rules) == 0 {
				fail("%s: no rule admits Prometheus", at)
			}
			if anywhere {
				fail("%s: admitted from anywhere; admit the Prometheus namespace only", at)
			}
			for _, r := range rules {
				for _, peer := range r.From {
					if peer.NamespaceSelector == nil || peer.IPBlock != nil ||
						(len(peer.NamespaceSelector.MatchLabels) == 0 && len(peer.NamespaceSelector.MatchExpressions) == 0) {
						fail("%s: admitted from %s; admit the Prometheus namespace only (a namespaceSelector that names it)", at, peerString(peer))
					}
				}
			}
		case "gossip-tcp", "gossip-udp":
			peers := false
			for _, r := range rules {
				for _, peer := range r.From {
					peers = peers || gossipPeer(peer)
				}
			}
			if !peers {
				fail("%s: the replicas must reach each other's gossip port (from: a podSelector of the gateway's pods)", at)
			}
			if anywhere {
				fail("%s: admitted from anywhere; admit the gateway's own pods only", at)
			}
		}
	}
	return errors.Join(errs...)
}

// admitsPort tells whether rule lets traffic reach the container port cp.
func admitsPort(rule networkingv1.NetworkPolicyIngressRule, cp corev1.ContainerPort) bool {
	if len(rule.Ports) == 0 {
		return true // every port
	}
	for _, p := range rule.Ports {
		if protocolOf(p) != protocol(cp.Protocol) {
			continue
		}
		switch {
		case p.Port == nil:
			return true
		case p.Port.Type == intstr.String && p.Port.StrVal == cp.Name:
			return true
		case p.Port.Type == intstr.Int && p.EndPort != nil && p.Port.IntVal <= cp.ContainerPort && cp.ContainerPort <= *p.EndPort:
			return true
		case p.Port.Type == intstr.Int && p.Port.IntVal == cp.ContainerPort:
			return true
		}
	}
	return false
}

func protocolOf(p networkingv1.NetworkPolicyPort) corev1.Protocol {
	if p.Protocol == nil {
		return corev1.ProtocolTCP
	}
	return *p.Protocol
}

func peerString(peer networkingv1.NetworkPolicyPeer) string {
	switch {
	case peer.IPBlock != nil:
		return "ipBlock " + peer.IPBlock.CIDR
	case peer.NamespaceSelector == nil:
		return "a podSelector (this namespace)"
	default:
		return "every namespace (an empty namespaceSelector)"
	}
}
