# spawn's two commands for a fresh machine: `make demo` and `make test`.
GO     ?= go
AGENTS := $(CURDIR)/agents/node_modules/.bin

.PHONY: all build agents demo test vet cross bench clean

all: build

build:
	$(GO) build -o bin/spawn ./cmd/spawn

# The pinned agent CLIs (agents/package.json), installed locally, never globally.
agents: agents/node_modules/.spawn-installed

agents/node_modules/.spawn-installed: agents/package.json agents/package-lock.json
	cd agents && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Runs spawn's main job offline: the real claude and gemini CLIs, scripted models, no API key.
demo: build agents
	./bin/spawn demo --claude $(AGENTS)/claude --gemini $(AGENTS)/gemini

vet:
	$(GO) vet ./...

# spawn builds and vets for macOS too (Apple silicon and Intel), so that
# `go install .../cmd/spawn@latest` works on a Mac: what is Linux's stays
# behind build tags, with Darwin's beside it. Cached after the first run.
cross:
	GOOS=darwin GOARCH=arm64 $(GO) build ./...
	GOOS=darwin GOARCH=arm64 $(GO) vet ./...
	GOOS=darwin GOARCH=amd64 $(GO) build ./...
	GOOS=darwin GOARCH=amd64 $(GO) vet ./...

# Everything CI runs: vet, the macOS builds, a short pass of every fuzz
# target, a quick pass of the benchmarks (so they cannot rot), then every
# test, last. The end-to-end tests drive the real claude and gemini
# binaries from agents/; under CI=true they fail rather than skip without
# them.
test: agents vet cross
	GO=$(GO) ./scripts/fuzz-short.sh
	SMOKE=1 GO=$(GO) ./scripts/bench-table.sh
	$(GO) test -race -count=1 -timeout 15m ./...

# One table of spawn's figures, each against its limit measured in the same
# run (scripts/bench-table.sh); `make test` runs a quick pass of it.
bench: agents
	BENCHTIME=5x GO=$(GO) ./scripts/bench-table.sh

clean:
	rm -rf bin agents/node_modules
