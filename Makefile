# The two commands that do everything on a fresh machine:
#   make demo   installs what is missing, then runs the main job on the embedded demo
#   make test   installs what is missing, then runs every check CI runs
#
# Go comes from the machine; everything else (Chromium from Debian's packages,
# the Playwright driver from npm, Go modules from the module proxy) is
# installed by `aegis setup`, which is idempotent.

GO      ?= go
BIN     := bin/aegis
GOFILES := $(shell git ls-files '*.go' 2>/dev/null)
# go test flags; override e.g. `make test TESTFLAGS=-short`.
TESTFLAGS ?=

export PATH := $(PATH):/usr/local/go/bin

.PHONY: all build setup testdeps demo test vet fmt-check schema-check tamper attack unit bench fuzz loadtest clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/aegis

# setup installs the browser and the Playwright driver when they are missing.
setup: build
	$(BIN) setup

demo: setup
	$(BIN) demo

# testdeps installs what only the tests need: axe-core, the accessibility
# engine the page tests run in Chromium (scripts/testdeps; pinned, cached).
testdeps:
	scripts/testdeps

test: setup testdeps fmt-check vet schema-check tamper attack unit

fmt-check:
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# schema-check compiles every embedded schema, checks the vector files and
# the wire compatibility with seed 003, and runs `aegis validate` on them.
schema-check: build
	$(GO) test -count=1 -run 'Schema|Vector|Equivalen|Seed|Validate' ./schemas/ ./contract/ ./cli/

# tamper runs the exhaustive tamper tests of the evidence verifier (every
# bit-flipped byte and every truncation of every file of a bundle: about
# 25,000 verifications) without -race, which slows them five to ten times
# and has nothing to find in them that the verifier's other tests, run
# with -race by unit, would not: the same code on the same goroutines.
TAMPER := TestTamperEveryByte|TestTamperTruncation
tamper:
	$(GO) test -count=1 -run '^($(TAMPER))$$' ./evidence/

# attack runs the attack suite against the embedded policy in every driver
# mode this machine has outside the tests (playwright and sandbox; go test
# ./attack adds extension mode) and fails on any violation; the baseline
# without the gate runs beside it. See README.md, "Attacking your policy".
attack: build
	$(BIN) policy attack

unit:
	$(GO) test -race -count=1 -timeout 15m -skip '^($(TAMPER))$$' $(TESTFLAGS) ./...

bench: setup
	$(GO) test -run '^$$' -bench . -benchmem ./...

# fuzz runs every fuzz target briefly (FUZZTIME each); the committed corpora
# are replayed by `make test` anyway.
FUZZTIME ?= 20s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# loadtest runs `make test` three times under CPU and I/O load and reports
# each run's time, status and load average (see scripts/loadtest).
loadtest:
	scripts/loadtest

clean:
	rm -rf bin
