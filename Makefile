# statsgate: build, run and test the gateway collector distribution.
#
#   make run       build the distro if needed and start it on testdata/gateway.yaml
#   make test      unit tests (with -race) plus a smoke test of the built distro
#
# Needs only Go: the tools below are installed into .tools/ on first use.

SHELL := /usr/bin/env bash
GO    ?= go

TOOLS_DIR       := $(CURDIR)/.tools
BUILDER_VERSION := v0.164.0
BUILDER         := $(TOOLS_DIR)/builder-$(BUILDER_VERSION)
TELEMETRYGEN_VERSION := v0.161.0
TELEMETRYGEN         := $(TOOLS_DIR)/telemetrygen-$(TELEMETRYGEN_VERSION)

DISTRO := _build/otelcol-statsgate
CONFIG ?= testdata/gateway.yaml

# Everything the distro is built from: a change to any of it rebuilds.
DISTRO_SOURCES := builder-config.yaml go.mod go.sum \
	$(shell find processor exporter -type f \( -name '*.go' -o -name '*.yaml' \) -not -name '*_test.go' 2>/dev/null)

COMPONENTS := processor/grpcstatsprocessor exporter/agentprometheusexporter

.PHONY: all build run test unit conformance smoke e2e demo prometheus generate lint bench bench-e2e clean reliability soak fuzz

all: lint test

## build: assemble otelcol-statsgate with the collector builder into $(DISTRO)
build: $(DISTRO)

# CGO_ENABLED=0: a static binary, so that the same file runs on any Linux and in an
# image built FROM scratch (make image), where there is no C library to link against.
$(DISTRO): $(BUILDER) $(DISTRO_SOURCES)
	CGO_ENABLED=0 $(BUILDER) --config builder-config.yaml
	@touch $@

$(BUILDER):
	@mkdir -p $(TOOLS_DIR)
	GOBIN=$(TOOLS_DIR) $(GO) install go.opentelemetry.io/collector/cmd/builder@$(BUILDER_VERSION)
	mv $(TOOLS_DIR)/builder $@

## run: start the gateway in the foreground on $(CONFIG)
run: $(DISTRO)
	./$(DISTRO) --config $(CONFIG)

## test: unit tests with the race detector, conformance with contrib's exporter, smoke and end-to-end tests of the distro
test: unit conformance smoke e2e reliability

unit: prometheus
	# The bad-input tests lint every scrape with promtool; without it they fail here rather than skip.
	STATSGATE_REQUIRE_PROMTOOL=1 $(GO) test -race ./...
	# Allocation checks and the million-series attack tests skip under -race; run them plainly.
	$(GO) test -count=1 -run 'DoesNotAllocate|UnderAttack' ./...

# The bench/ module holds contrib's prometheusexporter, kept out of the main module.
conformance:
	cd bench && $(GO) test -count=1 ./conformance

smoke: $(DISTRO)
	STATSGATE_BINARY=$(CURDIR)/$(DISTRO) $(GO) test -count=1 -v ./test/smoke

## reliability: a 60 s churn soak (agents join and leave, series expire; heap, goroutines and
## series must plateau) and the lifecycle faults (SIGTERM mid-scrape and mid-ingestion, restart
## on the same ports, config reload by SIGHUP and by restart) against the built distro.
## -p 1: the soak's memory figures and the shutdown bounds must not share the CPUs with each other.
reliability: $(DISTRO)
	STATSGATE_BINARY=$(CURDIR)/$(DISTRO) $(GO) test -count=1 -v -p 1 ./test/soak ./test/lifecycle

SOAK_DURATION ?= 10m
SOAK_TIMEOUT  ?= 40m

## soak: the churn soak for $(SOAK_DURATION) (SOAK_TIMEOUT bounds the go test run; raise both together)
soak: $(DISTRO)
	STATSGATE_BINARY=$(CURDIR)/$(DISTRO) STATSGATE_SOAK_DURATION=$(SOAK_DURATION) \
		$(GO) test -count=1 -v -run TestChurnSoak -timeout $(SOAK_TIMEOUT) ./test/soak

## e2e: demo agents and telemetrygen -> the distro -> a real Prometheus (TLS + bearer token), checked through its query API
e2e: $(DISTRO) $(TELEMETRYGEN) prometheus
	STATSGATE_BINARY=$(CURDIR)/$(DISTRO) \
	STATSGATE_PROMETHEUS=$$(command -v prometheus) \
	STATSGATE_PROMTOOL=$$(command -v promtool) \
	STATSGATE_TELEMETRYGEN=$(TELEMETRYGEN) \
	$(GO) test -count=1 -v -timeout 5m ./test/e2e

## demo: the gateway, two demo agents and Prometheus on localhost until Ctrl-C
demo: $(DISTRO) prometheus
	bash scripts/demo.sh $(DISTRO)

$(TELEMETRYGEN):
	@mkdir -p $(TOOLS_DIR)
	GOBIN=$(TOOLS_DIR) $(GO) install github.com/open-telemetry/opentelemetry-collector-contrib/cmd/telemetrygen@$(TELEMETRYGEN_VERSION)
	mv $(TOOLS_DIR)/telemetrygen $@

## prometheus: install Prometheus and promtool (Debian package) when they are missing
prometheus:
	@if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		echo "installing the Debian package prometheus"; \
		$$sudo apt-get update -q && \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus; \
	fi

FUZZTIME ?= 60s

## fuzz: run each fuzz target for $(FUZZTIME), one after the other (their seed corpora run in make test).
## Minimisation is off: a short run finds hundreds of new inputs and minimising each would take most
## of it (a few hundred execs in 3 minutes instead of ~2000 a second); a failing input is written
## to testdata/fuzz as found.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzProcessOTLP$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 0 ./processor/grpcstatsprocessor
	$(GO) test -run '^$$' -fuzz '^FuzzIngestScrape$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 0 ./exporter/agentprometheusexporter

## generate: regenerate the mdatagen output of both components
generate:
	@for c in $(COMPONENTS); do (cd $$c && $(GO) generate ./...) || exit 1; done

## lint: gofmt and go vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd bench && $(GO) vet ./...

## bench: ours vs contrib side by side (go test -bench, benchstat), regenerates BENCHMARKS.md
## and docs/scrape-time.svg; QUICK=1 for a short run (10k/100k, count 2)
bench:
	bash bench/bench.sh

## bench-e2e: the built distro vs a peer distro with contrib's exporter, under a load generator
bench-e2e:
	bash bench/e2e.sh

clean:
	rm -rf _build
