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

DISTRO := _build/otelcol-statsgate
CONFIG ?= testdata/gateway.yaml

# Everything the distro is built from: a change to any of it rebuilds.
DISTRO_SOURCES := builder-config.yaml go.mod go.sum \
	$(shell find processor exporter -type f \( -name '*.go' -o -name '*.yaml' \) -not -name '*_test.go' 2>/dev/null)

COMPONENTS := processor/grpcstatsprocessor exporter/agentprometheusexporter

.PHONY: all build run test unit conformance smoke generate lint bench bench-e2e clean

all: lint test

## build: assemble otelcol-statsgate with the collector builder into $(DISTRO)
build: $(DISTRO)

$(DISTRO): $(BUILDER) $(DISTRO_SOURCES)
	$(BUILDER) --config builder-config.yaml
	@touch $@

$(BUILDER):
	@mkdir -p $(TOOLS_DIR)
	GOBIN=$(TOOLS_DIR) $(GO) install go.opentelemetry.io/collector/cmd/builder@$(BUILDER_VERSION)
	mv $(TOOLS_DIR)/builder $@

## run: start the gateway in the foreground on $(CONFIG)
run: $(DISTRO)
	./$(DISTRO) --config $(CONFIG)

## test: unit tests with the race detector, conformance with contrib's exporter, smoke test of the distro
test: unit conformance smoke

unit:
	$(GO) test -race ./...
	# Allocation checks and the million-series attack tests skip under -race; run them plainly.
	$(GO) test -count=1 -run 'DoesNotAllocate|UnderAttack' ./...

# The bench/ module holds contrib's prometheusexporter, kept out of the main module.
conformance:
	cd bench && $(GO) test -count=1 ./conformance

smoke: $(DISTRO)
	STATSGATE_BINARY=$(CURDIR)/$(DISTRO) $(GO) test -count=1 -v ./test/smoke

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
