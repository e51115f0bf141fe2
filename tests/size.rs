//! The size budget of the module `make policy.wasm` builds. The policy server downloads, verifies
//! and compiles the module on every start of every replica; the size is deterministic for a given
//! toolchain, so this is a test, not a benchmark. `make size-report` shows what takes the space.
//!
//! Run by `make test` only (`make size-test`, after `make policy.wasm`): Cargo.toml declares this
//! test binary with `test = false`, so `cargo test --workspace` on a fresh checkout, as
//! Kubewarden's reusable workflow runs it, does not build or run it, and `cargo test --test size`
//! runs it by name. Without policy.wasm it fails, saying how to build it.

use std::path::Path;

/// 300 KiB.
const BUDGET: u64 = 300 * 1024;

#[test]
fn policy_wasm_fits_the_size_budget() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("policy.wasm");
    let size = match std::fs::metadata(&path) {
        Ok(meta) => meta.len(),
        Err(e) => panic!(
            "{} cannot be read ({e}): run `make size-test`, which builds it first (`make test` does too)",
            path.display()
        ),
    };
    assert!(
        size <= BUDGET,
        "policy.wasm is {size} bytes, {} over the budget of {BUDGET} bytes (300 KiB); \
         `make size-report` shows what takes the space",
        size - BUDGET
    );
}
