# spawn's commands for a fresh machine: `make demo`, `make install` and `make test`.
GO     ?= go
AGENTS := $(CURDIR)/agents/node_modules/.bin
# make install puts spawn and spawn-shim (and links to the pinned CLIs) in $(PREFIX)/bin.
PREFIX ?= $(HOME)/.local

# The version and commit spawn version prints: the tag (git describe), and
# the commit with -dirty for a modified tree; "" outside a git checkout.
VERSION := $(shell git describe --tags --dirty 2>/dev/null)
COMMIT  := $(shell c=$$(git rev-parse --short=12 HEAD 2>/dev/null) && { git diff --quiet HEAD 2>/dev/null && echo $$c || echo $$c-dirty; })
LDFLAGS := -X github.com/infinite-improbability-drive/spawn/internal/cli.buildVersion=$(VERSION) -X github.com/infinite-improbability-drive/spawn/internal/cli.buildCommit=$(COMMIT)

.PHONY: all build ldflags agents install demo demo-github test test-fast vet cross bench cassette clean

all: build

# urfave_cli_no_docs leaves out urfave/cli's man-page and Markdown writers
# (spawn uses neither), whose Markdown parser every spawn process would
# otherwise initialise: the hook answers each of the coder's tool calls.
TAGS := urfave_cli_no_docs

# Where build puts spawn and spawn-shim (a test builds them elsewhere).
BIN ?= bin

# build makes two binaries: spawn, and spawn-shim, which runs spawn's own
# processes (every agent's reaper and model bridge, the coder's hooks, the
# git helper) and starts in half spawn's time. spawn runs the shim beside
# it only if its Go build ID is the one stamped into spawn here: a shim
# from another build is never run (spawn then runs itself instead).
# CGO_ENABLED=0: static binaries, which start without the dynamic loader
# and libc (spawn uses no C library).
build:
	CGO_ENABLED=0 $(GO) build -tags $(TAGS) -o $(BIN)/spawn-shim ./cmd/spawn-shim
	id=$$($(GO) tool buildid $(BIN)/spawn-shim) && \
	  CGO_ENABLED=0 $(GO) build -tags $(TAGS) -ldflags "$(LDFLAGS) -X github.com/infinite-improbability-drive/spawn/internal/proc.shimID=$$id" -o $(BIN)/spawn ./cmd/spawn

# The linker flags build uses (a test checks that they stamp spawn version).
ldflags:
	@echo '$(LDFLAGS)'

# The pinned agent CLIs (agents/package.json), installed locally, never globally.
agents: agents/node_modules/.spawn-installed

agents/node_modules/.spawn-installed: agents/package.json agents/package-lock.json
	cd agents && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# spawn and the pinned CLIs on PATH: spawn is copied to $(PREFIX)/bin, and
# claude, gemini and codex there are links to agents/node_modules/.bin (a CLI
# of your own in $(PREFIX)/bin is kept; spawn doctor says which one spawn
# finds and whether it is the pinned version).
install: build agents
	install -d $(PREFIX)/bin
	install -m 0755 bin/spawn-shim $(PREFIX)/bin/spawn-shim
	install -m 0755 bin/spawn $(PREFIX)/bin/spawn
	@for cli in claude gemini codex; do \
	  [ -e $(AGENTS)/$$cli ] || continue; \
	  if [ -e $(PREFIX)/bin/$$cli ] && [ ! -L $(PREFIX)/bin/$$cli ]; then \
	    echo "kept your own $(PREFIX)/bin/$$cli"; \
	  else \
	    ln -sfn $(AGENTS)/$$cli $(PREFIX)/bin/$$cli && echo "linked $(PREFIX)/bin/$$cli to $(AGENTS)/$$cli"; \
	  fi; \
	done
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "put $(PREFIX)/bin on PATH: export PATH=\"$(PREFIX)/bin:\$$PATH\"";; esac
	@echo "then, in your repository: spawn doctor"

# Runs spawn's main job offline: the real claude and gemini CLIs, scripted models, no API key.
demo: build agents
	./bin/spawn demo --claude $(AGENTS)/claude --gemini $(AGENTS)/gemini

# The same loop as a pull request on a fake GitHub. The fake is test code,
# which the spawn binary does not carry: the GitHub demo is a test, shown.
demo-github: agents
	cd internal/cli && $(GO) test -count=1 -run '^TestDemoInGitHubModeShowsThePullRequestsLife$$' -args -show-demo

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
	$(GO) test -race -count=1 -timeout 25m ./...

# The fast tier: the policy, the parsers, the config, the registry and
# every table test, without any agent CLI (no node needed), in under a
# minute.
test-fast:
	$(GO) test -short -count=1 ./...

# One table of spawn's figures, each against its limit measured in the same
# run (scripts/bench-table.sh); `make test` runs a quick pass of it.
# BENCHTIME=3x make bench runs each benchmark three times (default five).
BENCHTIME ?= 5x
bench: agents
	BENCHTIME=$(BENCHTIME) GO=$(GO) ./scripts/bench-table.sh

# Records a cassette from the real, paid model APIs (ANTHROPIC_API_KEY and
# GEMINI_API_KEY must be set): a two-round pingpong of the pinned claude and
# gemini, kept redacted in testdata/cassettes/$(CASSETTE)/. spawn's tests
# replay every cassette there without a key (TestRecordedCassettesReplayWithoutAKey).
CASSETTE ?= paid-pingpong
cassette: build agents
	SPAWN=$(CURDIR)/bin/spawn ./scripts/record-cassette.sh $(CASSETTE)

clean:
	rm -rf bin agents/node_modules
