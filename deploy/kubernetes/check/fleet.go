package check

import (
	"errors"
	"fmt"
	"net"
	"path"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// podIPField is the downward API field of the pod's IP: the address a headless
// Service's DNS name gives for the pod.
const podIPField = "status.podIP"

// advertiseSyntax is fleet::advertise read from the environment: ${env:NAME}:port,
// the host in brackets or not.
var advertiseSyntax = regexp.MustCompile(`^\[?\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}\]?:([0-9]+)$`)

// checkFleet checks the gossip that makes the replicas one fleet: on at more
// than one replica, listening on both protocols at a container port, advertised
// at the pod's IP, joined through a headless Service that lists every replica,
// and encrypted with a key mounted from a Secret.
func checkFleet(s *Set, g *Gateway) error {
	f, err := g.Collector.Fleet()
	if err != nil {
		return err
	}
	if !f.Enabled {
		if replicas := replicasOf(g.Deployment); replicas >= 2 {
			return fmt.Errorf("fleet::enabled must be true with %d replicas, or each replica holds the series of every agent it received until metric_expiration", replicas)
		}
		return nil
	}
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	port, err := reachablePort("fleet::bind", f.Bind, "gossip port")
	if err != nil {
		return err
	}
	for _, proto := range []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP} {
		if _, ok := portOf(g.Container, port, proto); !ok {
			fail("no container port %d/%s: memberlist gossips at fleet::bind's port over both UDP and TCP", port, proto)
		}
	}

	// Advertise: the pod's IP, at the port peers dial.
	switch m := advertiseSyntax.FindStringSubmatch(f.Advertise); {
	case f.Advertise == "":
		fail("fleet::advertise: not set; bound to %s, memberlist advertises the first private address of the pod's interfaces, which need not be the pod IP the other replicas find through DNS. Set ${env:POD_IP}:%d with POD_IP from %s", f.Bind, port, podIPField)
	case m == nil:
		fail("fleet::advertise %q: want ${env:NAME}:%d with NAME from the downward API's %s", f.Advertise, port, podIPField)
	case g.FieldEnv[m[1]] != podIPField:
		fail("fleet::advertise: ${env:%s} must come from the downward API's %s (valueFrom.fieldRef), the address the headless Service gives for the pod", m[1], podIPField)
	case m[2] != strconv.Itoa(int(port)):
		fail("fleet::advertise port %s is not fleet::bind's (%d): the other replicas would dial a port nothing listens on", m[2], port)
	}

	// Join: the headless Service, at the port every replica listens on.
	if len(f.Join) == 0 {
		fail("fleet::join: empty; every replica would run alone, each waiting for another to join it")
	}
	ns := g.Deployment.Namespace
	search := false
	for _, peer := range f.Join {
		host, joinPort := peer, port
		if h, p, err := net.SplitHostPort(peer); err == nil {
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil {
				fail("fleet::join %q: port %q is not a number", peer, p)
				continue
			}
			host, joinPort = h, int32(n)
		}
		svc := serviceNamed(s, host, ns)
		if svc == nil {
			fail("fleet::join %q: not the DNS name of a Service in the rendering (namespace %s); join the headless Service that selects the gateway pods", peer, ns)
			continue
		}
		search = search || !strings.HasSuffix(host, ".")
		if joinPort != port {
			fail("fleet::join %q: port %d is not fleet::bind's (%d): the Service's name resolves to the pods' IPs, dialled at this port", peer, joinPort, port)
		}
		if err := checkGossipService(svc, g, port); err != nil {
			errs = append(errs, fmt.Errorf("fleet::join %q: Service %s: %w", peer, svc.Name, err))
		}
	}
	if p := g.Deployment.Spec.Template.Spec.DNSPolicy; search && p != "" && p != corev1.DNSClusterFirst && p != corev1.DNSClusterFirstWithHostNet {
		fail("dnsPolicy %s: fleet::join names a Service by a name the cluster's search domains complete, which only ClusterFirst gives the pod", p)
	}

	if _, err := g.FleetKey(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// serviceNamed finds the Service that host names from a pod in namespace ns:
// NAME (the pod's own namespace, through its search domains), NAME.NS,
// NAME.NS.svc or NAME.NS.svc.<cluster domain>, with or without a final dot.
func serviceNamed(s *Set, host, ns string) *corev1.Service {
	parts := strings.Split(strings.TrimSuffix(host, "."), ".")
	if (len(parts) >= 2 && parts[1] != ns) || (len(parts) >= 3 && parts[2] != "svc") {
		return nil
	}
	for _, svc := range s.Services {
		if svc.Name == parts[0] && svc.Namespace == ns {
			return svc
		}
	}
	return nil
}

// checkGossipService checks the Service the replicas join through: headless
// (its name resolves to every pod), listing pods that are not ready yet,
// selecting the gateway pods, and carrying the gossip port on both protocols.
func checkGossipService(svc *corev1.Service, g *Gateway, port int32) error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		fail("clusterIP must be None (headless): with a virtual IP its name resolves to one address, and each replica would join whichever replica kube-proxy picks, not the fleet")
	}
	if !svc.Spec.PublishNotReadyAddresses {
		fail("publishNotReadyAddresses must be true: replicas starting together must find each other before they are ready, or they form separate fleets")
	}
	podLabels := g.Deployment.Spec.Template.Labels
	if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(podLabels)) {
		fail("selector %v does not select the gateway pods (labels %v)", svc.Spec.Selector, podLabels)
	}
	for _, proto := range []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP} {
		var sp *corev1.ServicePort
		for i := range svc.Spec.Ports {
			if p := &svc.Spec.Ports[i]; p.Port == port && protocol(p.Protocol) == proto {
				sp = p
			}
		}
		if sp == nil {
			fail("no port %d/%s: memberlist gossips over both UDP and TCP", port, proto)
			continue
		}
		target := sp.TargetPort
		if target.Type == intstr.Int && target.IntVal == 0 {
			target = intstr.FromInt32(sp.Port)
		}
		if cp, ok := containerPort(g.Container, target); !ok || cp.ContainerPort != port || protocol(cp.Protocol) != proto {
			fail("port %s: targetPort %s is not the container's gossip port %d/%s", sp.Name, target.String(), port, proto)
		}
	}
	return errors.Join(errs...)
}

// FleetKey returns the Secret key mounted at fleet::secret_key_file, or nil when
// the fleet is off.
func (g *Gateway) FleetKey() (*corev1.SecretKeySelector, error) {
	f, err := g.Collector.Fleet()
	if err != nil || !f.Enabled {
		return nil, err
	}
	file := f.SecretKeyFile
	if file == "" {
		return nil, errors.New("fleet::secret_key_file: not set; the fleet's gossip would be neither encrypted nor authenticated, and anyone who reaches its port could send claims")
	}
	m, rel := mountOf(g.Container, file)
	if m == nil {
		return nil, fmt.Errorf("fleet::secret_key_file %s: no volume is mounted there", file)
	}
	var vol *corev1.Volume
	for i, v := range g.Deployment.Spec.Template.Spec.Volumes {
		if v.Name == m.Name {
			vol = &g.Deployment.Spec.Template.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.Secret == nil {
		return nil, fmt.Errorf("fleet::secret_key_file %s: the volume %s mounted at %s is not a Secret", file, m.Name, m.MountPath)
	}
	if isTrue(vol.Secret.Optional) {
		return nil, fmt.Errorf("fleet::secret_key_file %s: the Secret %s is optional; a pod started without it fails at once, rather than waiting for it", file, vol.Secret.SecretName)
	}
	key := rel
	if len(vol.Secret.Items) > 0 {
		key = ""
		for _, it := range vol.Secret.Items {
			if path.Clean(it.Path) == rel {
				key = it.Key
			}
		}
		if key == "" {
			return nil, fmt.Errorf("fleet::secret_key_file %s: the volume %s (Secret %s) has no item at path %q", file, vol.Name, vol.Secret.SecretName, rel)
		}
	}
	return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: vol.Secret.SecretName}, Key: key}, nil
}

// mountOf finds the volume mount that holds file, the innermost one when mounts
// nest, and file's path inside the volume.
func mountOf(c *corev1.Container, file string) (*corev1.VolumeMount, string) {
	file = path.Clean(file)
	var found *corev1.VolumeMount
	var rel string
	for i, m := range c.VolumeMounts {
		dir := path.Clean(m.MountPath)
		var r string
		switch {
		case m.SubPath != "" && dir == file:
			r = path.Clean(m.SubPath)
		case m.SubPath == "" && strings.HasPrefix(file, dir+"/"):
			r = strings.TrimPrefix(file, dir+"/")
		default:
			continue
		}
		if found == nil || len(dir) > len(path.Clean(found.MountPath)) {
			found, rel = &c.VolumeMounts[i], r
		}
	}
	return found, rel
}

// portOf finds the container port number/protocol.
func portOf(c *corev1.Container, port int32, proto corev1.Protocol) (corev1.ContainerPort, bool) {
	for _, p := range c.Ports {
		if p.ContainerPort == port && protocol(p.Protocol) == proto {
			return p, true
		}
	}
	return corev1.ContainerPort{}, false
}

// protocol is p with the API's default, TCP, when unset.
func protocol(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}
