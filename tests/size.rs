//! The size budget of the module `make policy.wasm` builds. The policy server downloads, verifies
//! and compiles the module on every start of every replica; the size is deterministic for a given
//! toolchain, so this is a test, not a benchmark. `make size-report` shows what takes the space.

use std::path::Path;

/// 300 KiB.
const BUDGET: u64 = 300 * 1024;

#[test]
fn policy_wasm_fits_the_size_budget() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("policy.wasm");
    let size = match std::fs::metadata(&path) {
        Ok(meta) => meta.len(),
        Err(e) => panic!(
            "{} cannot be read ({e}): run `make policy.wasm` first (`make test` and `make unit-tests` do)",
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
