# Raftka build, test and run targets. Tools are pinned and installed into bin/.
SHELL := /usr/bin/env bash
GO ?= go
BIN := $(CURDIR)/bin
GOLANGCI_LINT_VERSION := v2.15.0
CONTROLLER_TOOLS_VERSION := v0.23.0
KUSTOMIZE_VERSION := v5.8.1
HELM_VERSION := v3.22.0
# The peer the latency benchmark runs side by side with Raftka.
NATS_SERVER_VERSION := v2.15.3
# The last commit before ordered growth: the ordered-growth benchmark runs
# its Fetch path beside this build's.
BASELINE_BROKER_COMMIT := 881dd3965df06a0ccd5da98e0120b883c4597434
HELM := $(BIN)/helm
CONTROLLER_GEN := $(BIN)/controller-gen
KUSTOMIZE := $(BIN)/kustomize

.PHONY: all build test test-deps test-unit run run-operator bench fuzz fmt vet lint tools generate manifests envtest chart-lint image e2e-pause-image e2e-up e2e-down test-e2e clean help

all: build

help: ## list targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: generate ## build bin/raftka-broker, bin/raftka-operator and bin/raftka (the command-line tool)
	$(GO) build -o $(BIN)/raftka-broker ./broker/cmd/raftka-broker
	$(GO) build -o $(BIN)/raftka-operator .
	$(GO) build -ldflags "$(RAFTKA_LDFLAGS)" -o $(BIN)/raftka ./cmd/raftka

generate: $(CONTROLLER_GEN) ## deep-copy functions for api/
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

manifests: $(CONTROLLER_GEN) ## CRDs and RBAC in config/ from the markers
	$(CONTROLLER_GEN) crd rbac:roleName=raftka-operator paths=./api/... paths=./controllers/... \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	hack/sync-chart.sh

VERSION ?= v0.1.0
# The release and commit `raftka version` prints.
COMMIT := $(shell c=$$(git rev-parse --short=12 HEAD 2>/dev/null) && { git diff --quiet HEAD || c=$$c-dirty; } && echo $$c)
RAFTKA_LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
# build-image: static binary $(1) from package $(2), as the image raftka/$(3):$(VERSION) in bin/images/raftka-$(3).tar
# and $(4), if given, the extra --extra flags of hack/image.
define build-image
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/images/$(1) $(2)
	$(GO) run ./hack/image --binary $(BIN)/images/$(1) --path /$(1) --tag raftka/$(3):$(VERSION) --out $(BIN)/images/raftka-$(3).tar $(4)
endef

image: ## OCI image tarballs of the broker (with the raftka tool), the operator and the example consumer in bin/images, without a Docker daemon
	mkdir -p $(BIN)/images
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(RAFTKA_LDFLAGS)" -o $(BIN)/images/raftka ./cmd/raftka
	$(call build-image,raftka-broker,./broker/cmd/raftka-broker,broker,--extra /raftka=$(BIN)/images/raftka)
	$(call build-image,manager,.,operator)
	$(call build-image,consumer,./examples/consumer,consumer-example)

e2e-pause-image: ## the pause image of the e2e cluster (hack/e2e-cluster.sh builds it when missing)
	mkdir -p $(BIN)/images
	$(call build-image,pause,./hack/pause,e2e-pause)

e2e-up: ## a real single-node Kubernetes on this machine (hack/e2e-cluster.sh; needs root)
	hack/e2e-cluster.sh up

e2e-down: ## stop the e2e cluster and undo its changes to the machine
	hack/e2e-cluster.sh down

# test-e2e brings a cluster up, runs test/e2e against it and tears it down,
# also when a step fails. The rolled image is the broker under a second tag.
test-e2e: image $(HELM) ## end-to-end test on a real single-node Kubernetes: helm install, brokers in pods, no loss, autoscaling, rolling restart
	$(GO) run ./hack/image --binary $(BIN)/images/raftka-broker --path /raftka-broker --tag raftka/broker:$(VERSION)-rolled --out $(BIN)/images/raftka-broker-rolled.tar --extra /raftka=$(BIN)/images/raftka
	-hack/e2e-cluster.sh down 2>/dev/null
	trap 'hack/e2e-cluster.sh down' EXIT; \
	hack/e2e-cluster.sh up && \
	hack/e2e-cluster.sh import $(addprefix $(BIN)/images/raftka-,broker.tar broker-rolled.tar operator.tar consumer-example.tar) && \
	eval "$$(hack/e2e-cluster.sh env)" && $(GO) test -tags e2e -count=1 -v -timeout 30m ./test/e2e/

envtest: ## build kube-apiserver, etcd and kubectl for envtest into bin/k8s
	hack/envtest-assets.sh

KAFKAJS := broker/integration/testdata/kafkajs

test: test-deps build manifests vet lint envtest $(HELM) $(KAFKAJS)/node_modules/.package-lock.json ## vet, golangci-lint, then unit, envtest and integration tests (real API server, real brokers on 127.0.0.1, franz-go, sarama, kafka-go, kcat, confluent-kafka, KafkaJS and kafka-python)
	@git diff --exit-code --stat -- config/ api/ charts/ || (echo "generated files are out of date: commit 'make generate manifests'"; exit 1)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo "run 'make fmt'"; exit 1)
	KUBEBUILDER_ASSETS=$$(hack/envtest-assets.sh) RAFTKA_TEST_DEPS=installed RAFTKA_BROKER_BIN=$(BIN)/raftka-broker $(GO) test -count=1 -p 1 -timeout 40m ./...

test-deps: ## the Debian packages the client tests need (installed as root, else named with the command to run)
	hack/test-deps.sh

test-unit: ## tests that start no broker process
	$(GO) test -count=1 -short ./...

run-operator: build manifests ## the operator against the current kubeconfig (RAFTKA_BOOTSTRAP_OVERRIDE reaches brokers from outside)
	$(BIN)/raftka-operator $(OPERATOR_ARGS)

run: build ## a local 3-broker cluster on 127.0.0.1:9092-9094 in the foreground (Ctrl-C stops it)
	hack/local-cluster.sh run 3

bench: build envtest $(BIN)/nats-server $(BIN)/raftka-broker-$(BASELINE_BROKER_COMMIT) ## benchmarks of the broker and the operator, NATS JetStream beside the broker's latency; writes docs/benchmarks.md
	RAFTKA_BROKER_BIN=$(BIN)/raftka-broker RAFTKA_BENCH_REPORT=$(CURDIR)/docs/benchmarks.md $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./broker/bench/
	RAFTKA_BROKER_BIN=$(BIN)/raftka-broker RAFTKA_NATS_SERVER_BIN=$(BIN)/nats-server RAFTKA_BENCH_REPORT=$(CURDIR)/docs/benchmarks.md $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./broker/bench/latency/
	RAFTKA_BROKER_BIN=$(BIN)/raftka-broker RAFTKA_BENCH_REPORT=$(CURDIR)/docs/benchmarks.md $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./broker/bench/moves/
	RAFTKA_BROKER_BIN=$(BIN)/raftka-broker RAFTKA_BENCH_REPORT=$(CURDIR)/docs/benchmarks.md $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./broker/bench/security/
	RAFTKA_BROKER_BIN=$(BIN)/raftka-broker RAFTKA_BENCH_REPORT=$(CURDIR)/docs/benchmarks.md $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./broker/bench/transactions/
	RAFTKA_BROKER_BIN=$(BIN)/raftka-broker RAFTKA_BENCH_BASELINE_BIN=$(BIN)/raftka-broker-$(BASELINE_BROKER_COMMIT) RAFTKA_BENCH_REPORT=$(CURDIR)/docs/benchmarks.md $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./broker/bench/ordered/
	KUBEBUILDER_ASSETS=$$(hack/envtest-assets.sh) RAFTKA_BROKER_BIN=$(BIN)/raftka-broker RAFTKA_BENCH_REPORT=$(CURDIR)/docs/benchmarks.md $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 90m ./controllers/

# The broker as of BASELINE_BROKER_COMMIT, built from git's copy of it.
$(BIN)/raftka-broker-$(BASELINE_BROKER_COMMIT):
	rm -rf $(BIN)/baseline-src && mkdir -p $(BIN)/baseline-src
	git archive $(BASELINE_BROKER_COMMIT) | tar -x -C $(BIN)/baseline-src
	cd $(BIN)/baseline-src && $(GO) build -o $@ ./broker/cmd/raftka-broker
	rm -rf $(BIN)/baseline-src

FUZZTIME ?= 60s
fuzz: ## run each fuzz target for FUZZTIME (request decoding, partition and metadata state machines, snapshot catch-up, log compaction, Raft log replay)
	cd broker/server && $(GO) test -run '^$$' -fuzz FuzzParseRequest -fuzztime $(FUZZTIME) .
	cd broker/partition && $(GO) test -run '^$$' -fuzz FuzzUpdate -fuzztime $(FUZZTIME) .
	cd broker/partition && $(GO) test -run '^$$' -fuzz FuzzSnapshotCatchUp -fuzztime $(FUZZTIME) .
	cd broker/partition && $(GO) test -run '^$$' -fuzz FuzzCompactBatch -fuzztime $(FUZZTIME) .
	cd broker/raftlog && $(GO) test -run '^$$' -fuzz FuzzOpen -fuzztime $(FUZZTIME) .
	cd broker/meta && $(GO) test -run '^$$' -fuzz FuzzApply -fuzztime $(FUZZTIME) .

fmt: ## gofmt the tree
	gofmt -w $$(git ls-files '*.go')

vet: ## go vet
	$(GO) vet ./...

lint: $(BIN)/golangci-lint ## golangci-lint, pinned
	$(BIN)/golangci-lint run --build-tags e2e ./...

$(BIN)/golangci-lint:
	GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

$(BIN)/nats-server:
	GOBIN=$(BIN) $(GO) install github.com/nats-io/nats-server/v2@$(NATS_SERVER_VERSION)

$(CONTROLLER_GEN):
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)

# KafkaJS at the version package-lock.json pins, for its integration test.
$(KAFKAJS)/node_modules/.package-lock.json: $(KAFKAJS)/package-lock.json
	npm ci --prefix $(KAFKAJS) --no-audit --no-fund --prefer-offline

$(HELM):
	GOBIN=$(BIN) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

chart-lint: $(HELM) ## helm lint and render the chart
	$(HELM) lint charts/raftka
	$(HELM) template raftka charts/raftka --namespace raftka-system --set brokerCluster.enabled=true >/dev/null

$(KUSTOMIZE):
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)

tools: $(BIN)/golangci-lint $(CONTROLLER_GEN) $(KUSTOMIZE) $(HELM) ## install pinned tools into bin/

clean: ## remove builds and the local cluster's data
	-hack/local-cluster.sh stop
	rm -rf $(BIN)/raftka-broker .local-cluster
