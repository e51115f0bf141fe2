//! What the repository's test trees share: where the repository is, reading its files, and its
//! YAML as JSON values. Each test binary includes it (`#[path = "../common/mod.rs"] mod common;`)
//! and uses what it needs.
#![allow(dead_code)]

use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The repository's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The file at `relative` under `root` (the repository, or a copy of it).
pub fn read_at(root: &Path, relative: &str) -> String {
    let path = root.join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The repository's file at `relative`.
pub fn read(relative: &str) -> String {
    read_at(&root(), relative)
}

/// Every non-empty YAML document of `text` (read from `relative`), as JSON values.
pub fn yaml_documents(relative: &str, text: &str) -> Vec<Value> {
    let mut documents = Vec::new();
    for (index, document) in yaml_serde::Deserializer::from_str(text).enumerate() {
        let value = Value::deserialize(document).unwrap_or_else(|e| {
            panic!(
                "{relative}: YAML document #{} does not parse: {e}",
                index + 1
            )
        });
        if !value.is_null() {
            documents.push(value);
        }
    }
    documents
}
