# Raftka build, test and run targets. Tools are pinned and installed into bin/.
SHELL := /usr/bin/env bash
GO ?= go
BIN := $(CURDIR)/bin
GOLANGCI_LINT_VERSION := v2.15.0

.PHONY: all build test test-unit run bench fuzz fmt vet lint tools clean help

all: build

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: ## build bin/raftka-broker
	$(GO) build -o $(BIN)/raftka-broker ./broker/cmd/raftka-broker

test: build ## unit and integration tests (real brokers on 127.0.0.1, franz-go and kcat)
	RAFTKA_BROKER_BIN=$(BIN)/raftka-broker $(GO) test -count=1 -timeout 25m ./...

test-unit: ## tests that start no broker process
	$(GO) test -count=1 -short ./...

run: build ## a local 3-broker cluster on 127.0.0.1:9092-9094 in the foreground (Ctrl-C stops it)
	hack/local-cluster.sh run 3

bench: build ## benchmarks against a local cluster; writes docs/benchmarks.md
	RAFTKA_BROKER_BIN=$(BIN)/raftka-broker RAFTKA_BENCH_REPORT=$(CURDIR)/docs/benchmarks.md $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./broker/bench/

FUZZTIME ?= 60s
fuzz: ## run each fuzz target for FUZZTIME (request decoding, partition state machine)
	cd broker/server && $(GO) test -run '^$$' -fuzz FuzzParseRequest -fuzztime $(FUZZTIME) .
	cd broker/partition && $(GO) test -run '^$$' -fuzz FuzzUpdate -fuzztime $(FUZZTIME) .

fmt: ## gofmt the tree
	gofmt -w $$(git ls-files '*.go')

vet: ## go vet
	$(GO) vet ./...

lint: $(BIN)/golangci-lint ## golangci-lint, pinned
	$(BIN)/golangci-lint run ./...

$(BIN)/golangci-lint:
	GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

tools: $(BIN)/golangci-lint ## install pinned tools into bin/

clean: ## remove builds and the local cluster's data
	-hack/local-cluster.sh stop
	rm -rf $(BIN)/raftka-broker .local-cluster
