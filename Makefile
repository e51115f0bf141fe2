# capi-template-guard: Kubewarden policy build, test and evaluation targets.
SOURCE_FILES := $(shell find src -type f -name '*.rs') Cargo.toml Cargo.lock
TESTHOST_FILES := $(shell find testhost -type f -name '*.rs' -o -name Cargo.toml)
KWCTL ?= kwctl
TESTHOST := target/release/testhost

.PHONY: all
all: policy.wasm

policy.wasm: $(SOURCE_FILES)
	cargo build --target=wasm32-wasip1 --release -p capi-template-guard
	cp target/wasm32-wasip1/release/capi_template_guard.wasm policy.wasm

# Needs kwctl (not in any package registry: install it from the Kubewarden releases).
annotated-policy.wasm: policy.wasm metadata.yml README.md
	$(KWCTL) annotate -m metadata.yml -u README.md -o annotated-policy.wasm policy.wasm

# The waPC test host that runs policy.wasm like `kwctl run` where kwctl is not installed.
$(TESTHOST): $(TESTHOST_FILES) Cargo.lock
	cargo build --release -p testhost

.PHONY: fmt
fmt:
	cargo fmt --all -- --check

.PHONY: lint
lint:
	cargo clippy --workspace --all-targets -- -D warnings

.PHONY: unit-tests
unit-tests:
	cargo test --workspace

# Evaluates the policy on every sample request in test_data/ and prints each verdict.
.PHONY: evaluate
evaluate: policy.wasm $(TESTHOST)
	scripts/evaluate.sh

# e2e.bats through the test host; again through kwctl when it is on PATH.
.PHONY: e2e-tests
e2e-tests: policy.wasm $(TESTHOST)
	$(TESTHOST) protocol-version policy.wasm
	KWCTL=$(TESTHOST) POLICY=policy.wasm bats e2e.bats
	@if command -v $(KWCTL) >/dev/null 2>&1; then \
		$(MAKE) annotated-policy.wasm && KWCTL=$(KWCTL) POLICY=annotated-policy.wasm bats e2e.bats; \
	else \
		echo "kwctl is not on PATH: e2e.bats ran through the test host only."; \
	fi

# Everything: formatting, lints, unit tests (policy and test host), the wasm build, e2e.bats.
.PHONY: test
test: fmt lint unit-tests e2e-tests

.PHONY: clean
clean:
	cargo clean
	rm -f policy.wasm annotated-policy.wasm
