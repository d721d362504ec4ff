# statsgate: build, run and test the gateway collector distribution.
#
#   make help      every target with its description (from the "## target:" lines below)
#   make run       build the distro if needed and start it on testdata/gateway.yaml
#   make test      lint, generated code and version checks, unit tests (with -race), fuzzing (a fixed
#                  number of inputs a target), the bench module's tests (conformance with contrib among
#                  them), then smoke, end-to-end, fleet, soak and lifecycle tests of the built distro
#   make image     the container image (Containerfile) for linux/amd64 and linux/arm64 as an OCI archive
#                  in _build/, and its SBOM
#   make k8s-check the Kubernetes manifests in deploy/kubernetes, checked offline (part of make test)
#   make rules-test the alert rules checked by promtool and run against their unit tests (part of make test)
#   make helm-check the Helm chart in deploy/helm/statsgate and the Operator example in deploy/operator, checked offline (part of make test)
#   make fleet     three replicas behind haproxy, scraped by Prometheus 3, agents moving between them (part of make test)
#   make dashboard regenerate the fleet's Grafana dashboard, deploy/dashboards/statsgate.json
#   make fleet-scaling  copies per series and memory per replica for 2, 3 and 5 replicas (~50 min)
#   make move-alternatives  the move of one agent run in the ways docs/scaling.md compares (~5 min)
#
# Needs only Go: the tools below are installed into .tools/ on first use; Debian packages
# (prometheus, podman) are installed with apt-get when missing.

SHELL := /usr/bin/env bash
GO    ?= go

TOOLS_DIR       := $(CURDIR)/.tools
BUILDER_VERSION := v0.164.0
BUILDER         := $(TOOLS_DIR)/builder-$(BUILDER_VERSION)
TELEMETRYGEN_VERSION := v0.161.0
TELEMETRYGEN         := $(TOOLS_DIR)/telemetrygen-$(TELEMETRYGEN_VERSION)
PROMETHEUS_VERSION   := v0.316.0
PROMTOOL_K8S         := $(TOOLS_DIR)/promtool-$(PROMETHEUS_VERSION)
PROMETHEUS3          := $(TOOLS_DIR)/prometheus-$(PROMETHEUS_VERSION)
HELM_VERSION         := v3.22.0
HELM                 := $(TOOLS_DIR)/helm-$(HELM_VERSION)
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT         := $(TOOLS_DIR)/golangci-lint-$(GOLANGCI_LINT_VERSION)

# $(call go-install,PACKAGE,VERSION[,TAGS]), the recipe of a tool's versioned path in
# $(TOOLS_DIR): go install PACKAGE@VERSION (built with TAGS, if any) into $(TOOLS_DIR), and the
# binary renamed to the target, e.g. .tools/helm to .tools/helm-v3.22.0.
define go-install
@mkdir -p $(TOOLS_DIR)
GOBIN=$(TOOLS_DIR) $(GO) install $(if $(3),-tags $(3) )$(1)@$(2)
mv $(TOOLS_DIR)/$(notdir $(1)) $@
endef

# $(call apt-install,CHECK,PACKAGES): unless the shell command CHECK succeeds (it says whether
# what PACKAGES bring is there), install the Debian PACKAGES with apt-get, with sudo unless root.
define apt-install
@if ! { $(strip $(1)); } >/dev/null; then \
	sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	echo "installing the Debian package$(if $(word 2,$(2)),s) $(strip $(2))"; \
	$$sudo apt-get update -q && \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(strip $(2)); \
fi
endef

DISTRO := _build/otelcol-statsgate
CONFIG ?= testdata/gateway.yaml

# Everything the distro is built from: a change to any of it rebuilds.
DISTRO_SOURCES := builder-config.yaml go.mod go.sum \
	$(shell find processor exporter internal -type f \( -name '*.go' -o -name '*.yaml' \) -not -name '*_test.go' 2>/dev/null)

COMPONENTS := processor/grpcstatsprocessor exporter/agentprometheusexporter

.PHONY: all help build run test unit unit-plain conformance bench-unit smoke e2e demo prometheus generate check-generated lint bench bench-e2e clean reliability soak fuzz fuzz-ci versions image image-test container-tools k8s-check helm-check fleet fleet-scaling move-alternatives haproxy dashboard check-dashboard rules-test

## all: the default target, make test
all: test

## help: every documented target with its description (the "## target:" comments of this Makefile);
## fails, naming them, when a .PHONY target has none
help:
	@awk '\
		/^\.PHONY:/ { for (i = 2; i <= NF; i++) phony[$$i] = 1; next } \
		/^## [A-Za-z0-9_.-]+:/ { \
			name = substr($$2, 1, length($$2) - 1); documented[name] = 1; \
			text = $$0; sub(/^## [^:]+: */, "", text); \
			printf "%-16s %s\n", name, text; indoc = 1; next } \
		indoc && /^##/ { text = $$0; sub(/^## ?/, "", text); printf "%-16s %s\n", "", text; next } \
		{ indoc = 0 } \
		END { fflush(); for (t in phony) if (!(t in documented)) { print "undocumented .PHONY target: " t > "/dev/stderr"; bad = 1 } \
			exit bad }' $(MAKEFILE_LIST)

## build: assemble otelcol-statsgate with the collector builder into $(DISTRO)
build: $(DISTRO)

# CGO_ENABLED=0: a static binary, so that the same file runs on any Linux and in an
# image built FROM scratch (make image), where there is no C library to link against.
$(DISTRO): $(BUILDER) $(DISTRO_SOURCES)
	CGO_ENABLED=0 $(BUILDER) --config builder-config.yaml
	@touch $@

$(BUILDER):
	$(call go-install,go.opentelemetry.io/collector/cmd/builder,$(BUILDER_VERSION))

## run: start the gateway in the foreground on $(CONFIG)
run: $(DISTRO)
	./$(DISTRO) --config $(CONFIG)

## test: everything CI checks: lint, generated code and the dashboard as committed, go.mod at the distro's collector
## versions, unit tests with the race detector, every fuzz target for $(FUZZEXECS_CI) inputs, the bench module's tests (conformance with contrib's exporter among them), smoke,
## end-to-end, fleet and reliability tests of the distro, its image and its Kubernetes manifests
test: lint check-generated check-dashboard versions unit fuzz-ci bench-unit smoke cardinality k8s-check helm-check rules-test e2e fleet reliability image-test

## versions: every component in builder-config.yaml is of one collector release (the builder's),
## and so is every collector module the built distro resolved (_build/go.mod); every collector
## module go.mod, bench/go.mod and test/promparse/go.mod require is at the version the distro
## resolved, so that the unit tests run the code that ships
versions:
	@# The pins first, before the build: a distro of mixed releases may not even build.
	$(GO) test -count=1 -v -run 'TestCollectorModulesOfOneRelease/builder-config' ./test/versions
	@$(MAKE) --no-print-directory build
	STATSGATE_DISTRO_GOMOD=$(CURDIR)/_build/go.mod $(GO) test -count=1 -v -run 'TestCollectorModules' ./test/versions

# Tests that skip under -race (allocation checks, the million-series attack tests) or run fewer
# seeds under it (the direct writers against expfmt, scrapes by gzip parts): make unit runs them
# again without -race, in full (make unit-plain). Each entry is a -run pattern matched over ./..., wherever the test
# lives, and must match at least one test that passes there: a test renamed or gone fails make
# unit instead of dropping out of the run.
PLAIN_TESTS := DoesNotAllocate UnderAttack TestDirectWritersWriteWhatExpfmtWrites \
	TestScrapeByPartsWritesTheSequentialScrape TestScrapeByPartsDuringChurnWritesNoSeriesTwice
empty :=
space := $(empty) $(empty)
PLAIN_RUN = $(subst $(space),|,$(strip $(PLAIN_TESTS)))

## unit: the main module's tests with the race detector (promtool required: the bad-input tests
## lint every scrape with it); then make unit-plain; then test/promparse, every format's scrape
## parsed by Prometheus 3.16's own parsers
unit: prometheus
	# The bad-input tests lint every scrape with promtool; without it they fail here rather than skip.
	STATSGATE_REQUIRE_PROMTOOL=1 $(GO) test -race ./...
	@$(MAKE) --no-print-directory unit-plain
	# Every format's scrape, with every Accept header Prometheus 2.42 to 3.16 sends, parsed by
	# Prometheus 3.16's own parsers and compared with the OTLP sent; a module of its own keeps
	# prometheus/prometheus out of the main one.
	cd test/promparse && $(GO) test -count=1 ./...

## unit-plain: without the race detector and in full, the tests that skip or run fewer seeds
## under it: $(PLAIN_TESTS); fails when an entry matched no passing test (part of make unit)
unit-plain:
	@set -o pipefail; log=$$(mktemp); trap 'rm -f "$$log"' EXIT; \
	echo "$(GO) test -count=1 -v -run '$(PLAIN_RUN)' ./..."; \
	$(GO) test -count=1 -v -run '$(PLAIN_RUN)' ./... 2>&1 | tee "$$log" || exit 1; \
	for p in $(PLAIN_TESTS); do \
		awk '/^--- PASS: / { print $$3 }' "$$log" | grep -qE "$$p" || \
			{ echo "make unit-plain: no test matching $$p passed"; exit 1; }; \
	done

## conformance: the same OTLP input to contrib's prometheusexporter v0.165.1 and to ours, both
## scraped over HTTP; identical series required but for the documented differences
# Contrib runs as a program of its own: the test builds bench/conformance/contrib, a module on
# collector v0.165.0 / v1.71.0, apart from bench/ and the distro (v0.164.0 / v1.70.0).
conformance:
	cd bench && $(GO) test -count=1 ./conformance

## bench-unit: the tests of every package of the bench module (conformance, and the load generator,
## the benchmark harnesses, the scrape parser and the workload the benchmarks rely on)
bench-unit:
	cd bench && $(GO) test -count=1 ./...

## smoke: the built distro: validate (the default config, misspelt keys, contrib's example configs),
## components, one OTLP request through to /metrics, TLS scrapes with a bearer token, the remedy config;
## every contrib key and the default config's settings take effect in what is served (each against
## a control run without it)
smoke: $(DISTRO)
	STATSGATE_BINARY=$(CURDIR)/$(DISTRO) $(GO) test -count=1 -v ./test/smoke

## k8s-check: render deploy/kubernetes (base and every overlay) as `kubectl apply -k` would,
## decode every object strictly into its API type, cross-check ports, selectors, the scrape
## token's Secret and the memory sizing, validate the collector config with the built distro
## and the Prometheus scrape config with promtool. Its own Go module keeps the Kubernetes
## dependencies out of the main one. The Helm tests are make helm-check's: with the distro set,
## they fail without helm.
k8s-check: $(DISTRO) $(PROMTOOL_K8S)
	cd deploy/kubernetes/check && STATSGATE_BINARY=$(CURDIR)/$(DISTRO) STATSGATE_PROMTOOL=$(PROMTOOL_K8S) \
		$(GO) test -count=1 -v -skip '^TestHelm' ./...

## helm-check: the Helm chart deploy/helm/statsgate: helm lint and helm template on the default
## values and every examples/*.yaml, every object decoded strictly, the checks of k8s-check on
## each rendering, the collector config validated with the built distro, and the renderings
## compared with kustomize's (default = base, examples/production.yaml = overlays/production,
## examples/prometheus-operator.yaml = overlays/prometheus-operator); then the OpenTelemetry
## Operator example deploy/operator/statsgate.yaml, decoded into the Operator's v1beta1 types
## and compared with the base. The tests live in deploy/kubernetes/check (TestHelm*, TestOperator*).
helm-check: $(DISTRO) $(HELM)
	cd deploy/kubernetes/check && STATSGATE_BINARY=$(CURDIR)/$(DISTRO) STATSGATE_HELM=$(HELM) \
		$(GO) test -count=1 -v -run '^(TestHelm|TestOperator)' ./...

$(HELM):
	$(call go-install,helm.sh/helm/v3/cmd/helm,$(HELM_VERSION))

RULES      := deploy/kubernetes/prometheus/statsgate.rules.yaml
RULES_TEST := deploy/kubernetes/prometheus/statsgate.rules.test.yaml

## rules-test: the alert rules (deploy/kubernetes/prometheus/statsgate.rules.yaml) checked and
## linted by promtool, then their unit tests: each alert fires on one series history, with its
## labels and annotations, and stays silent on another. make k8s-check also requires the
## prometheus-operator overlay's PrometheusRule to be generated from the same file, and shows
## that each alert's test fails when its expression is broken.
rules-test: $(PROMTOOL_K8S)
	$(PROMTOOL_K8S) check rules --lint=all --lint-fatal $(RULES)
	$(PROMTOOL_K8S) test rules $(RULES_TEST)

# promtool of Prometheus 3 with Kubernetes discovery, which the scrape config uses: Debian's
# promtool 2.42 is built without it. The other discovery plugins are left out: one of them
# (Nomad) needs a module the Go module proxy refuses.
PROMTOOL_TAGS := remove_all_sd,enable_kubernetes_sd
$(PROMTOOL_K8S):
	$(call go-install,github.com/prometheus/prometheus/cmd/promtool,$(PROMETHEUS_VERSION),$(PROMTOOL_TAGS))

## reliability: a 60 s churn soak (agents join and leave, series expire; heap, goroutines and
## series must plateau) and the lifecycle faults (SIGTERM mid-scrape and mid-ingestion, restart
## on the same ports, config reload by SIGHUP and by restart) against the built distro.
## Also memory without scrapes: 100k series expire unscraped and 100k new ones reuse their memory.
## -p 1: the soak's memory figures and the shutdown bounds must not share the CPUs with each other.
reliability: $(DISTRO)
	STATSGATE_BINARY=$(CURDIR)/$(DISTRO) $(GO) test -count=1 -v -p 1 ./test/soak ./test/lifecycle

SOAK_DURATION ?= 10m
SOAK_TIMEOUT  ?= 40m

## soak: the churn soak for $(SOAK_DURATION) (SOAK_TIMEOUT bounds the go test run; raise both together)
soak: $(DISTRO)
	STATSGATE_BINARY=$(CURDIR)/$(DISTRO) STATSGATE_SOAK_DURATION=$(SOAK_DURATION) \
		$(GO) test -count=1 -v -run TestChurnSoak -timeout $(SOAK_TIMEOUT) ./test/soak

## e2e: demo agents and telemetrygen -> the distro -> Prometheus 2.42 (TLS + bearer token), checked
## through its query API; and an OTel SDK agent -> the distro -> Prometheus 3 scraping protobuf with
## native histograms, OpenMetrics with exemplars, and UTF-8 names in each format
e2e: $(DISTRO) $(TELEMETRYGEN) $(PROMETHEUS3) prometheus
	STATSGATE_BINARY=$(CURDIR)/$(DISTRO) \
	STATSGATE_PROMETHEUS=$$(command -v prometheus) \
	STATSGATE_PROMTOOL=$$(command -v promtool) \
	STATSGATE_TELEMETRYGEN=$(TELEMETRYGEN) \
	STATSGATE_PROMETHEUS3=$(PROMETHEUS3) \
	$(GO) test -count=1 -v -timeout 5m ./test/e2e

## fleet: three replicas of the distro on the default config behind haproxy, formed into a
## fleet (departures on), scraped by Prometheus 3; gRPC and OTLP agents (cumulative and delta,
## gRPC and HTTP) move between the replicas (max_connection_age, a rolling restart, a replica
## killed); what Prometheus stored must be what the agents counted; per job (gRPC services,
## cumulative and delta gRPC, sticky HTTP) the copies per series (mean <= 1.1 cumulative, 1.8
## delta), the time each agent is held by two replicas per move (<= 1 s cumulative, 2.2 s delta)
## and never three holders; out-of-order refusals must stop within seconds of each move.
## Negative controls (TestFleetControl*): departures off (the very same per-job check must fail
## for every gRPC job) and sample timestamps off (not exact). Also the damping of agents balanced per request, and
## the move of one agent between two replicas, alone and in a fleet.
## Every query of the Grafana dashboard (deploy/dashboards) must return data over the run;
## DASHBOARD_SCREENSHOT=docs/dashboard.png plots what they returned into that file.
## FLEET_SETS adds --set overrides to every replica, e.g.
##   make fleet FLEET_SETS=exporters::agentprometheus::send_timestamps=false
DASHBOARD_SCREENSHOT ?=

fleet: $(DISTRO) $(PROMETHEUS3) haproxy
	STATSGATE_BINARY=$(CURDIR)/$(DISTRO) \
	STATSGATE_PROMETHEUS3=$(PROMETHEUS3) \
	STATSGATE_HAPROXY=$$(command -v haproxy) \
	STATSGATE_FLEET_SETS=$(FLEET_SETS) \
	STATSGATE_DASHBOARD_PNG=$(if $(DASHBOARD_SCREENSHOT),$(abspath $(DASHBOARD_SCREENSHOT))) \
	$(GO) test -count=1 -v -timeout 16m ./test/fleet

## move-alternatives: the move of one agent between two replicas run in the other ways
## docs/scaling.md compares (sample timestamps off, a short metric_expiration,
## track_timestamps_staleness, every export to the other replica, out_of_order_time_window),
## each asserted: exact or inflated, refused or not. About 5 minutes on 2 cores; not in make test.
move-alternatives: $(DISTRO) $(PROMETHEUS3)
	STATSGATE_MOVE_ALTERNATIVES=1 STATSGATE_BINARY=$(CURDIR)/$(DISTRO) STATSGATE_PROMETHEUS3=$(PROMETHEUS3) \
		$(GO) test -count=1 -v -timeout 15m -run TestMoveSafetyAlternatives ./test/fleet

## fleet-scaling: copies per series and memory per replica for fleets of 2, 3 and 5 replicas,
## departures on and off, and the alternatives (a short expiry, longer connections); writes
## bench/results/fleet-scaling.{md,json} and docs/fleet-scaling.svg. About 50 minutes; not in make test.
fleet-scaling: $(DISTRO) haproxy
	STATSGATE_FLEET_SCALING=1 STATSGATE_BINARY=$(CURDIR)/$(DISTRO) STATSGATE_HAPROXY=$$(command -v haproxy) \
		$(GO) test -count=1 -v -timeout 90m -run TestFleetScaling ./test/fleet

# Prometheus 3 (Debian has only 2.42). Without remove_all_sd the build fails on a discovery
# plugin's module (Nomad) that the Go module proxy refuses; file and static discovery remain.
$(PROMETHEUS3):
	$(call go-install,github.com/prometheus/prometheus/cmd/prometheus,$(PROMETHEUS_VERSION),remove_all_sd)

.PHONY: cardinality chromium

CARDINALITY_ARTIFACTS  ?= $(CURDIR)/_build/test-artifacts
CARDINALITY_SCREENSHOT ?=

## cardinality: the built distro with a flooding agent among well-behaved ones (cmd/otlpagent); its
## cardinality view in headless Chromium, screenshotted and read from the DOM after its script ran,
## and as JSON, checked against /metrics and the collector's own metrics. The screenshot, DOM and
## JSON are kept in $(CARDINALITY_ARTIFACTS); CARDINALITY_SCREENSHOT=docs/cardinality.png also
## refreshes the README's copy.
cardinality: $(DISTRO) chromium
	STATSGATE_BINARY=$(CURDIR)/$(DISTRO) \
	STATSGATE_CHROMIUM=$$(command -v chromium) \
	STATSGATE_ARTIFACTS=$(CARDINALITY_ARTIFACTS) \
	STATSGATE_SCREENSHOT_COPY=$(if $(CARDINALITY_SCREENSHOT),$(abspath $(CARDINALITY_SCREENSHOT))) \
	$(GO) test -count=1 -v -timeout 4m ./test/cardinality

## chromium: install Chromium (Debian package) when it is missing; the cardinality test runs it headless
chromium:
	$(call apt-install,command -v chromium,chromium)

## haproxy: install haproxy (Debian package) when it is missing; the fleet test runs it in the foreground
haproxy:
	$(call apt-install,command -v haproxy,haproxy)

## demo: the gateway, two demo agents and Prometheus on localhost until Ctrl-C
demo: $(DISTRO) prometheus
	bash scripts/demo.sh $(DISTRO)

$(TELEMETRYGEN):
	$(call go-install,github.com/open-telemetry/opentelemetry-collector-contrib/cmd/telemetrygen,$(TELEMETRYGEN_VERSION))

## prometheus: install Prometheus and promtool (Debian package) when they are missing
prometheus:
	$(call apt-install,command -v prometheus && command -v promtool,prometheus)

# The container image. podman keeps its images and containers under .tools/containers, not in
# /var/lib/containers (only its small blob-info cache, which has no flag, is written to
# /var/lib/containers/cache). runc: with crun (podman's first choice when it is installed)
# containers do not start on the hybrid cgroup hierarchy of the build machines.
IMAGE_VERSION    := $(shell sed -n 's/^  version: *//p' builder-config.yaml)
IMAGE            := localhost/statsgate/otelcol-statsgate:$(IMAGE_VERSION)
IMAGE_ARCHIVE    := _build/otelcol-statsgate-image.tar
IMAGE_CONTEXT    := _build/image
HOST_CA_BUNDLE   := /etc/ssl/certs/ca-certificates.crt
CONTAINERS_DIR   := $(TOOLS_DIR)/containers
PODMAN           := podman --root $(CONTAINERS_DIR)/root --runroot $(CONTAINERS_DIR)/runroot --runtime runc
# --network host: -p would leave a CNI bridge and iptables rules behind. Both ulimits must be
# set, below the build machines' hard limits (nofile 20000, nproc 32768): podman's defaults
# (nofile 1048576) are refused and the container does not start.
PODMAN_RUN_FLAGS := --network host --ulimit nofile=4096:4096 --ulimit nproc=4096:4096

IMAGE_PLATFORMS := linux/amd64 linux/arm64
IMAGE_ARCHES    := $(patsubst linux/%,%,$(IMAGE_PLATFORMS))
# The static binary of each platform, linux-<arch>/ beside the distro's sources in _build/.
IMAGE_BINARIES  := $(foreach arch,$(IMAGE_ARCHES),_build/linux-$(arch)/otelcol-statsgate)
IMAGE_SBOM      := _build/otelcol-statsgate.cdx.json
CYCLONEDX_GOMOD_VERSION := v1.10.0
CYCLONEDX_GOMOD := $(TOOLS_DIR)/cyclonedx-gomod-$(CYCLONEDX_GOMOD_VERSION)

## image: build the container image from Containerfile for $(IMAGE_PLATFORMS), one image per
## platform, and write them with their manifest list (OCI image index) to $(IMAGE_ARCHIVE)
## (OCI archive: podman load -i / docker load -i take the host's platform); and the SBOM of the
## binary to $(IMAGE_SBOM) (CycloneDX JSON)
image: $(IMAGE_ARCHIVE) $(IMAGE_SBOM)

# The builder's own compile step (`go build -trimpath -ldflags="-s -w"` in _build/), once per
# architecture, on the sources it generated for $(DISTRO). CGO_ENABLED=0: a static binary needs
# no C library, so the image is FROM scratch and cross-compiling needs no C toolchain. For the
# build host's architecture the result is $(DISTRO) byte for byte (and comes from Go's cache).
_build/linux-%/otelcol-statsgate: $(DISTRO)
	cd _build && CGO_ENABLED=0 GOOS=linux GOARCH=$* $(GO) build -trimpath -ldflags="-s -w" -o linux-$*/otelcol-statsgate .

# FROM scratch: nothing is pulled and no RUN step executes, so an image for another architecture
# needs no emulation. Each platform's build context ($(IMAGE_CONTEXT)/linux-<arch>) holds its
# binary, the default config and the build host's CA bundle; each image is tagged
# $(IMAGE)-linux-<arch>. The manifest list $(IMAGE) lives in the store only until it is written
# to the archive: podman 4.3 (Debian 12) cannot list or prune a store that holds a manifest list
# ("fetching target platform image selected from image index ... file does not exist").
$(IMAGE_ARCHIVE): $(IMAGE_BINARIES) Containerfile testdata/gateway.yaml $(wildcard $(HOST_CA_BUNDLE)) | container-tools
	@for arch in $(IMAGE_ARCHES); do \
		ctx=$(IMAGE_CONTEXT)/linux-$$arch; \
		rm -rf $$ctx && mkdir -p $$ctx && \
		cp _build/linux-$$arch/otelcol-statsgate $$ctx/otelcol-statsgate && \
		cp testdata/gateway.yaml $$ctx/config.yaml && \
		cp $(HOST_CA_BUNDLE) $$ctx/ca-certificates.crt || exit 1; \
	done
	@# A list left by an interrupted run, or the single-platform image of an older Makefile.
	$(PODMAN) rmi --ignore $(IMAGE)
	@# chroot isolation: RUN steps fail under the default (OCI runtime) isolation on the build machines.
	for arch in $(IMAGE_ARCHES); do \
		$(PODMAN) build --isolation chroot --platform linux/$$arch -f Containerfile \
			-t $(IMAGE)-linux-$$arch $(IMAGE_CONTEXT)/linux-$$arch || exit 1; \
	done
	$(PODMAN) manifest create $(IMAGE)
	for arch in $(IMAGE_ARCHES); do \
		$(PODMAN) manifest add $(IMAGE) containers-storage:$(IMAGE)-linux-$$arch || exit 1; \
	done
	@# The index, both images and their blobs; the index is named $(IMAGE) in the archive, the
	@# name podman load gives the image of the host's platform.
	rm -f $@.tmp
	$(PODMAN) manifest push --all --format oci $(IMAGE) oci-archive:$@.tmp:$(IMAGE) && mv $@.tmp $@
	$(PODMAN) manifest rm $(IMAGE)
	@# The images these replaced and the builds' intermediate images.
	$(PODMAN) image prune -f >/dev/null

# The SBOM of the shipped binary from its build info (`go version -m`): the main module, every
# module linked in with its version and go.sum hash, the build settings and the binary's hashes.
# It is made from the linux/amd64 binary; every platform's binary links the same modules at the
# same versions (make image-test checks it), and -short-purls leaves the architecture out of
# the package URLs. Go records our components' module, replaced by this repository
# (`github.com/statsgate/statsgate => ../`), as a module "../" of version (devel): jq names it
# after the module it replaces, at the distro's version.
$(IMAGE_SBOM): $(firstword $(IMAGE_BINARIES)) $(CYCLONEDX_GOMOD) | container-tools
	$(CYCLONEDX_GOMOD) bin -json -short-purls -noserial -version v$(IMAGE_VERSION) \
		-output $@.bin $(firstword $(IMAGE_BINARIES))
	jq --arg mod github.com/statsgate/statsgate --arg ver v$(IMAGE_VERSION) '$(SBOM_LOCAL_MODULE)' $@.bin > $@.tmp
	mv $@.tmp $@ && rm $@.bin

# The "../" component renamed, and its package URL and bom-ref wherever they appear.
SBOM_LOCAL_MODULE := walk(if type == "string" then sub("^pkg:golang/\\.\\./@\\(devel\\)"; "pkg:golang/\($$mod)@\($$ver)") else . end) | (.components[] | select(.name == "../")) |= (.name = $$mod | .version = $$ver)

$(CYCLONEDX_GOMOD):
	$(call go-install,github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod,$(CYCLONEDX_GOMOD_VERSION))

## image-test: the archive's index (both platforms, each image's binary built for its
## architecture), the SBOM, and the image of the host's platform run with podman: its config,
## user and files, OTLP in and /metrics out
image-test: image
	STATSGATE_IMAGE_ARCHIVE=$(CURDIR)/$(IMAGE_ARCHIVE) \
	STATSGATE_IMAGE_PLATFORMS="$(IMAGE_PLATFORMS)" \
	STATSGATE_IMAGE_SBOM=$(CURDIR)/$(IMAGE_SBOM) \
	STATSGATE_IMAGE_BINARIES="$(addprefix $(CURDIR)/,$(IMAGE_BINARIES))" \
	STATSGATE_PODMAN="$(PODMAN)" \
	STATSGATE_PODMAN_RUN_FLAGS="$(PODMAN_RUN_FLAGS)" \
	STATSGATE_SKOPEO=$$(command -v skopeo) \
	$(GO) test -count=1 -v ./test/image

## container-tools: install podman, buildah, runc, skopeo, the CA bundle and jq (Debian packages) when missing
container-tools:
	$(call apt-install,command -v podman && command -v buildah && command -v skopeo && \
		PATH="$$PATH:/usr/sbin" command -v runc && [ -f $(HOST_CA_BUNDLE) ] && command -v jq,\
		podman buildah runc skopeo ca-certificates jq)

FUZZEXECS    ?= 1000000
FUZZEXECS_CI ?= 100000
# Targets whose every input runs a whole scenario (FuzzFleet: a simulated fleet of three
# aggregating gateways, ~1 ms an input; FuzzIngestScrape: four exporters scraped over HTTP in
# every format, ~14 ms a valid input) get a tenth of the budget: 10,000 inputs in make test.
FUZZ_WHOLE_RUNS := FuzzFleet|FuzzIngestScrape

## fuzz: run every fuzz target of the main module for $(FUZZEXECS) inputs, one after the other; the
## targets are found by go test -list, so a new or moved one cannot be left out (their seed corpora
## run in make unit). Minimisation is off: a short run finds hundreds of new inputs and minimising
## each would take most of it (a few hundred execs in 3 minutes instead of ~2000 a second); a failing
## input is written to testdata/fuzz as found.
# The budget is a count of inputs (-fuzztime Nx), not a duration: with a duration, Go 1.26's fuzz
# coordinator can fail a target that found nothing with a bare "context deadline exceeded" when the
# deadline fires between cancelling its context and its workers' (go.dev/issue/75804, fixed in
# Go 1.27). A count sets no deadline. make test's 100,000 inputs keep it under 20 minutes: from
# ~12 s for the fastest target to ~65 s for FuzzIngestScrape, about 5 minutes in all with the
# baselines on a loaded 2-core machine; make fuzz goes ten times further.
fuzz:
	@set -eo pipefail; \
	targets=$$($(GO) test -list '^Fuzz' ./... | \
		awk '/^Fuzz/ { names[++n] = $$1; next } /^ok / { for (i = 1; i <= n; i++) print $$2, names[i]; n = 0 }'); \
	[ -n "$$targets" ] || { echo "make fuzz: go test -list found no fuzz target"; exit 1; }; \
	while read -r pkg target; do \
		execs=$(FUZZEXECS); \
		case $$target in $(FUZZ_WHOLE_RUNS)) execs=$$((execs / 10));; esac; \
		echo "$(GO) test -run '^$$' -fuzz '^$$target\$$' -fuzztime $${execs}x -fuzzminimizetime 0 $$pkg"; \
		$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $${execs}x -fuzzminimizetime 0 "$$pkg" </dev/null; \
	done <<< "$$targets"

## fuzz-ci: make fuzz with FUZZEXECS=$(FUZZEXECS_CI), from the seed corpora and testdata/fuzz (part of make test)
# Go keeps every input a run found interesting in its cache and runs them all (the baseline
# coverage) before fuzzing: make test after make test, that corpus grows and the baseline with it
# (600 cached inputs took FuzzProcessOTLP ~14 s). So the project's cached inputs are dropped first
# (go clean -fuzzcache would drop every project's).
fuzz-ci:
	rm -rf "$$($(GO) env GOCACHE)/fuzz/$$($(GO) list -m)"
	@$(MAKE) --no-print-directory fuzz FUZZEXECS=$(FUZZEXECS_CI)

## generate: regenerate the mdatagen output of both components
generate:
	@for c in $(COMPONENTS); do (cd $$c && $(GO) generate ./...) || exit 1; done

# The working tree (tracked files and untracked ones git does not ignore), copied into a new
# temporary directory whose path is printed: the checks below generate there, so that a failed
# check leaves the tree as it was and a second run fails again.
COPY_TREE = tmp=$$(mktemp -d) && \
	git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$$tmp" && \
	echo "$$tmp"

## check-generated: fails when make generate would change anything, i.e. when the committed
## generated code is not what metadata.yaml and the pinned mdatagen produce; generates in a copy
check-generated:
	@set -eo pipefail; tmp=$$($(COPY_TREE)); trap 'rm -rf "$$tmp"' EXIT; \
	for c in $(COMPONENTS); do (cd "$$tmp/$$c" && $(GO) generate ./...); done; \
	changed=0; for c in $(COMPONENTS); do diff -r "$$c" "$$tmp/$$c" >/dev/null || changed=1; done; \
	if [ $$changed = 1 ]; then \
		echo "make generate would change files (< committed, > generated); run it and commit its output:"; \
		for c in $(COMPONENTS); do diff -r "$$c" "$$tmp/$$c" || true; done; \
		exit 1; \
	fi; \
	echo "make generate changes nothing"

## dashboard: write deploy/dashboards/statsgate.json, the fleet's Grafana dashboard, from its
## definition in deploy/dashboards/main.go (grafana-foundation-sdk; a module of its own keeps the
## SDK out of the main go.mod). test/promparse parses its queries, make fleet runs them.
dashboard:
	cd deploy/dashboards && $(GO) run . -o statsgate.json

## check-dashboard: fails when the committed statsgate.json is not what make dashboard writes;
## writes to a temporary file
check-dashboard:
	@set -eo pipefail; out=$$(mktemp); trap 'rm -f "$$out"' EXIT; \
	(cd deploy/dashboards && $(GO) run . -o "$$out"); \
	if ! cmp -s deploy/dashboards/statsgate.json "$$out"; then \
		echo "make dashboard would change deploy/dashboards/statsgate.json (< committed, > generated); run it and commit its output:"; \
		diff deploy/dashboards/statsgate.json "$$out" | head -40 || true; \
		exit 1; \
	fi; \
	echo "make dashboard changes nothing"

# Every Go module of the repository (a committed go.mod outside testdata/), each linted from its
# own directory with the one .golangci.yml; a module without Go files (internal/tools: a go.mod
# for mdatagen) is skipped.
LINT_MODULES := $(sort $(patsubst %/,%,$(dir $(shell git ls-files -- go.mod '*/go.mod' ':!:**/testdata/**'))))

## lint: golangci-lint (.golangci.yml: go vet, staticcheck, errcheck and more; gofmt and goimports)
## on every Go module of the repository; and every .PHONY target of the Makefile documented for make help
lint: $(GOLANGCI_LINT)
	@for m in $(LINT_MODULES); do \
		[ -n "$$(git ls-files -- "$$m/*.go" | head -1)" ] || continue; \
		echo "golangci-lint run ./... in $$m"; \
		(cd $$m && $(GOLANGCI_LINT) run ./...) || exit 1; \
	done
	@$(MAKE) --no-print-directory help >/dev/null

$(GOLANGCI_LINT):
	$(call go-install,github.com/golangci/golangci-lint/v2/cmd/golangci-lint,$(GOLANGCI_LINT_VERSION))

## bench: ours vs contrib side by side (go test -bench, benchstat), regenerates BENCHMARKS.md
## and docs/scrape-time.svg; QUICK=1 for a short run (10k/100k, count 2)
bench:
	bash bench/bench.sh

## bench-e2e: the built distro vs a peer distro with contrib's exporter, under a load generator
bench-e2e:
	bash bench/e2e.sh

## clean: remove _build/ (the distro's sources and binaries, the image archive, the SBOM)
clean:
	rm -rf _build
