//! No text file of the repository is longer than a reader takes in.

use super::*;

/// No text file, documentation or source, grows past what a reader can take in one go.
const FILE_MAX_LINES: usize = 800;

#[test]
fn no_file_is_longer_than_a_reader_takes_in() {
    let root = repo();
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
