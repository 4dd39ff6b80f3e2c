# kueue-guard — build, test and run. Everything the tests need is built here from
# the Go module proxy: no downloaded binaries, no Docker.

GO        ?= go
BIN       := $(CURDIR)/bin
TESTCP    := $(BIN)/testcp
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

# The test control plane: kube-apiserver, kube-controller-manager and kubectl from
# k8s.io/kubernetes at the minor of our k8s.io/api, etcd from go.etcd.io modules
# (hack/testcp), Kueue's controller manager from sigs.k8s.io/kueue (hack/kueue,
# the version in its go.mod, stamped so that the manager reports it), and the JobSet
# and KubeRay operators (hack/jobset, hack/kuberay) at the versions whose CRDs the
# tests install.
KUBE_VERSION  := v1.36.3
KUBE_LDFLAGS  := -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
                 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36
KUEUE_VERSION := $(shell awk '$$1 == "sigs.k8s.io/kueue" { print $$2 }' hack/kueue/go.mod)
KUEUE_LDFLAGS := -X sigs.k8s.io/kueue/pkg/version.GitVersion=$(KUEUE_VERSION) \
                 -X sigs.k8s.io/kueue/pkg/version.GitCommit=$(KUEUE_VERSION)
# OPA, for the load harness's comparison: the version kueue-guard's policy engine
# is built from (go.mod).
OPA_VERSION   := $(shell awk '$$1 == "github.com/open-policy-agent/opa" { print $$2 }' go.mod)
# golangci-lint, with the linters Kueue's own configuration enables (.golangci.yaml).
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT         := $(BIN)/golangci-lint
TESTCP_BINS  := kube-apiserver etcd kubectl kube-controller-manager kueue-manager jobset-manager kuberay-operator
TESTCP_SRCS  := $(shell find hack/testcp hack/kueue hack/jobset hack/kuberay -name 'go.mod' -o -name 'go.sum' -o -name '*.go' | sort)
TESTCP_STAMP := $(shell cat $(TESTCP_SRCS) Makefile | sha256sum | cut -c1-16)-$(shell $(GO) env GOVERSION)

GINKGO_FLAGS ?=
TEST_FLAGS   ?= -race -count=1
BENCH_FLAGS  ?=
# Go fuzz targets (package:Target), run by make fuzz for FUZZTIME each, and by
# make test briefly: FUZZ_SMOKE_TIME is a count of executions ("Nx"), not a
# duration, because a duration is a deadline that a stalled worker on a loaded
# 2-core machine misses and reports as a failure with no crasher.
FUZZ_TARGETS    := ./pkg/workload:FuzzFromUnstructured ./pkg/handlers:FuzzHandle ./pkg/handlers:FuzzEnvelope ./pkg/policies:FuzzBuildInput ./pkg/policies:FuzzProjectedDecisions ./pkg/review:FuzzParse ./pkg/kueuecontroller:FuzzDetect ./pkg/config:FuzzDecode ./pkg/jsonmap:FuzzDecode ./pkg/jsonmap:FuzzDecodeDeferring ./pkg/jsonmap:FuzzAt
FUZZTIME        ?= 10m
FUZZ_SMOKE_TIME ?= 2000x
# make soak: kueue-guard built with -race under 80% of its throughput for
# SOAK_TIME; make test soaks it briefly (SOAK_SMOKE_TIME).
SOAK_TIME       ?= 10m
SOAK_SMOKE_TIME ?= 30s

export KUBEBUILDER_ASSETS := $(TESTCP)

.PHONY: all build build-race test unit integration policy-test testbin lint vet fmt layers golangci golangci-lint run clean help opa bench bench-smoke fuzz fuzz-smoke soak soak-smoke

all: build

help: ## Show the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## Build bin/kueue-guard.
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/kueue-guard ./cmd/webhook

testbin: ## Build the test control plane (kube-apiserver, etcd, kubectl, kube-controller-manager, Kueue, the JobSet and KubeRay operators) into bin/testcp; instant when up to date.
	@if [ "$$(cat $(TESTCP)/.stamp 2>/dev/null)" = "$(TESTCP_STAMP)" ] && \
	    (for b in $(TESTCP_BINS); do [ -x $(TESTCP)/$$b ] || exit 1; done); then \
		echo "test control plane up to date in $(TESTCP)"; \
	else \
		set -e; mkdir -p $(TESTCP); rm -f $(TESTCP)/.stamp; \
		echo "building etcd (about a minute the first time)"; \
		(cd hack/testcp/etcd && $(GO) build -o $(TESTCP)/etcd .); \
		echo "building kube-apiserver $(KUBE_VERSION) (several minutes the first time)"; \
		(cd hack/testcp && $(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $(TESTCP)/kube-apiserver ./cmd/kube-apiserver); \
		echo "building kubectl $(KUBE_VERSION)"; \
		(cd hack/testcp && $(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $(TESTCP)/kubectl ./cmd/kubectl); \
		echo "building kube-controller-manager $(KUBE_VERSION)"; \
		(cd hack/testcp && $(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $(TESTCP)/kube-controller-manager ./cmd/kube-controller-manager); \
		echo "building Kueue's manager $(KUEUE_VERSION) (a few minutes the first time)"; \
		(cd hack/kueue && $(GO) build -ldflags "$(KUEUE_LDFLAGS)" -o $(TESTCP)/kueue-manager sigs.k8s.io/kueue/cmd/kueue); \
		echo "building the JobSet and KubeRay operators"; \
		(cd hack/jobset && $(GO) build -o $(TESTCP)/jobset-manager sigs.k8s.io/jobset); \
		(cd hack/kuberay && $(GO) build -o $(TESTCP)/kuberay-operator github.com/ray-project/kuberay/ray-operator); \
		echo "$(TESTCP_STAMP)" > $(TESTCP)/.stamp; \
	fi

test: lint testbin policy-test bench-smoke soak-smoke fuzz-smoke ## Unit, policy and integration tests (-race) against the real control plane.
	$(GO) test $(TEST_FLAGS) ./... $(GINKGO_FLAGS)

policy-test: ## Run the shipped policies' Rego tests (kueue-guard policy test policies/).
	$(GO) run ./cmd/webhook policy test policies/

unit: ## Unit tests only (no control plane).
	$(GO) test $(TEST_FLAGS) $$($(GO) list ./... | grep -v /test/)

integration: testbin ## Integration tests only.
	$(GO) test $(TEST_FLAGS) ./test/... $(GINKGO_FLAGS)

lint: vet fmt layers golangci ## go vet, gofmt, the package layering of docs/architecture.md and golangci-lint.

golangci: golangci-lint ## golangci-lint with .golangci.yaml (Kueue's linters).
	$(GOLANGCI_LINT) run ./...

golangci-lint: ## Install golangci-lint at GOLANGCI_LINT_VERSION into bin/ from the Go module proxy; instant when up to date.
	@if $(GOLANGCI_LINT) version 2>/dev/null | grep -q "version $(GOLANGCI_LINT_VERSION:v%=%) "; then \
		echo "golangci-lint $(GOLANGCI_LINT_VERSION) up to date in $(BIN)"; \
	else \
		echo "installing golangci-lint $(GOLANGCI_LINT_VERSION) into $(BIN)"; \
		GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION); \
	fi

layers: ## Fail when a package imports one of its own or a higher layer (docs/architecture.md).
	$(GO) run ./hack/layercheck

vet:
	$(GO) vet ./...

fmt:
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# make run KUEUE=false leaves Kueue's manager out (kueue-guard then holds queued workloads).
KUEUE ?= true
run: build testbin ## Start a local control plane with kueue-guard, Kueue and the examples; Ctrl-C stops it.
	$(GO) run ./hack/devcluster --kueue-guard $(BIN)/kueue-guard --examples examples --state-dir .local --kueue=$(KUEUE)

opa: ## Install OPA, at the version in go.mod, into bin/opa for make bench; instant when up to date.
	@if [ "$$($(BIN)/opa version 2>/dev/null | sed -n 's/^Version: //p')" = "$(OPA_VERSION:v%=%)" ]; then \
		echo "OPA $(OPA_VERSION) up to date in $(BIN)"; \
	else \
		echo "installing OPA $(OPA_VERSION) into $(BIN)"; \
		GOBIN=$(BIN) $(GO) install github.com/open-policy-agent/opa@$(OPA_VERSION); \
	fi

bench: build testbin opa ## Load-test kueue-guard against a floor server and OPA (about 20 minutes) and write docs/performance.md.
	GO="$(GO)" $(GO) run ./hack/bench --out docs/performance.md $(BENCH_FLAGS)

bench-smoke: build testbin opa ## Run the load harness once, briefly, checking no target (part of make test).
	GO="$(GO)" $(GO) run ./hack/bench --short --out ''

build-race: ## Build bin/kueue-guard-race, with the race detector, for make soak.
	$(GO) build -race -ldflags "$(LDFLAGS)" -o $(BIN)/kueue-guard-race ./cmd/webhook

soak: build-race testbin ## Soak kueue-guard (-race) for SOAK_TIME (default 10m) at 80% of the throughput it reaches in the run; fails on any failed request or a growing RSS.
	GO="$(GO)" $(GO) run ./hack/bench --soak $(SOAK_TIME) --timeout 24h --kueue-guard $(BIN)/kueue-guard-race

soak-smoke: ## Run the soak briefly (part of make test).
	@$(MAKE) --no-print-directory soak SOAK_TIME=$(SOAK_SMOKE_TIME)

fuzz: ## Run every Go fuzz target for FUZZTIME (default 10m) each; a crash is saved under testdata/fuzz and fails the run.
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzzing $${t#*:} in $${t%%:*} for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) "$${t%%:*}"; \
	done

fuzz-smoke: ## Run every Go fuzz target briefly (part of make test).
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZ_SMOKE_TIME)

clean: ## Remove build output (keeps the test control plane).
	rm -f $(BIN)/kueue-guard $(BIN)/kueue-guard-race

# --- Helm chart and container image (appended for the chart; see manifests/charts/kueue-guard) ---

IMG    ?= ghcr.io/kueue-guard/kueue-guard:$(VERSION)
DOCKER ?= docker

.PHONY: generate verify-generate docker-build

generate: ## Write the chart's generated files (webhook rules, RBAC, shipped policies) from the Go sources.
	$(GO) run ./hack/generate

verify-generate: ## Fail if `make generate` would change any file.
	$(GO) run ./hack/generate -verify

docker-build: ## Build the container image $(IMG) (multi-stage, static, distroless nonroot).
	$(DOCKER) build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMG) .
