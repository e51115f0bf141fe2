//! No text file of the repository is longer than a reader takes in.

use super::*;

/// No text file, documentation or source, grows past what a reader can take in one go.
const FILE_MAX_LINES: usize = 800;

#[test]
fn no_file_is_longer_than_a_reader_takes_in() {
    let root = root();
    let files = repository_files(&root);
    for expected in [
        "docs/design.md",
        "guard/src/decision/mod.rs",
        "testhost/src/bench.rs",
    ] {
        assert!(files.contains(expected), "{expected} not seen");
    }
    let long: Vec<String> = files
        .iter()
        // Cargo.lock is written by cargo; binaries (policy.wasm) are not read
        .filter(|f| Path::new(f).file_name() != Some("Cargo.lock".as_ref()))
        .filter_map(|f| Some((f, fs::read_to_string(root.join(f)).ok()?.lines().count())))
        .filter(|(_, lines)| *lines > FILE_MAX_LINES)
        .map(|(file, lines)| format!("{file} ({lines} lines)"))
        .collect();
    assert!(
        long.is_empty(),
        "longer than {FILE_MAX_LINES} lines: {}; split them by concept",
        long.join(", ")
    );
}

/// The test host's ceiling (testhost/README.md, "Size"): its Rust files, tests included, stay
/// within TESTHOST_MAX_LINES in all and TESTHOST_FILE_MAX_LINES each. It is a test tool: growth
/// past it is a reason to cut, not to raise it quietly.
const TESTHOST_MAX_LINES: usize = 7_500;
const TESTHOST_FILE_MAX_LINES: usize = 500;

#[test]
fn the_test_host_stays_within_its_ceiling() {
    let root = root();
    let counted: Vec<(String, usize)> = repository_files(&root)
        .into_iter()
        .filter(|f| f.starts_with("testhost/") && f.ends_with(".rs"))
        .map(|f| {
            let lines = read_at(&root, &f).lines().count();
            (f, lines)
        })
        .collect();
    assert!(counted.len() > 10, "the test host's files not seen");
    let total: usize = counted.iter().map(|(_, n)| n).sum();
    assert!(
        total <= TESTHOST_MAX_LINES,
        "testhost/ has {total} lines of Rust, over its ceiling of {TESTHOST_MAX_LINES}"
    );
    let long: Vec<String> = counted
        .iter()
        .filter(|(_, n)| *n > TESTHOST_FILE_MAX_LINES)
        .map(|(f, n)| format!("{f} ({n})"))
        .collect();
    assert!(
        long.is_empty(),
        "testhost files over {TESTHOST_FILE_MAX_LINES} lines: {}",
        long.join(", ")
    );
}
