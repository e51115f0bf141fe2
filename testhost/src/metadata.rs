//! Policy metadata: the `io.kubewarden.metadata` custom section written by
//! `kwctl annotate`, or a `metadata.yml` file for modules that were not
//! annotated.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};

/// Name of the wasm custom section where `kwctl annotate` stores the policy
/// metadata (as JSON).
pub const KUBEWARDEN_CUSTOM_SECTION_METADATA: &str = "io.kubewarden.metadata";

/// A Kubernetes resource type the policy may read at evaluation time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextAwareResource {
    pub api_version: String,
    pub kind: String,
}

/// The part of the policy metadata testhost uses.  Unknown keys are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyMetadata {
    #[serde(default)]
    pub execution_mode: Option<String>,
    #[serde(default)]
    pub policy_type: Option<String>,
    #[serde(default)]
    pub context_aware_resources: BTreeSet<ContextAwareResource>,
}

impl PolicyMetadata {
    pub fn is_raw(&self) -> bool {
        self.policy_type.as_deref() == Some("raw")
    }
}

/// Where the metadata used for a run came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataSource {
    /// The module carries a `io.kubewarden.metadata` custom section.
    Annotated(PolicyMetadata),
    /// The module is not annotated; the metadata comes from a YAML file.
    File(PathBuf, PolicyMetadata),
    /// Nothing found.
    None,
}

impl MetadataSource {
    /// The metadata found, if any.
    pub fn declared(&self) -> Option<&PolicyMetadata> {
        match self {
            MetadataSource::Annotated(m) | MetadataSource::File(_, m) => Some(m),
            MetadataSource::None => None,
        }
    }

    /// The context aware resources declared by whichever metadata was found.
    pub fn context_aware_resources(&self) -> BTreeSet<ContextAwareResource> {
        match self {
            MetadataSource::Annotated(m) | MetadataSource::File(_, m) => {
                m.context_aware_resources.clone()
            }
            MetadataSource::None => BTreeSet::new(),
        }
    }
}

/// Returns the contents of the first custom section called `name`. The module is read section
/// by section up to that one (wasmparser, as wasmtime does), not validated.
pub fn find_custom_section<'a>(
    wasm: &'a [u8],
    name: &str,
) -> Result<Option<&'a [u8]>, wasmparser::BinaryReaderError> {
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        if let wasmparser::Payload::CustomSection(section) = payload? {
            if section.name() == name {
                return Ok(Some(section.data()));
            }
        }
    }
    Ok(None)
}

/// Reads the metadata embedded by `kwctl annotate`, if any.
pub fn from_module(wasm: &[u8], origin: &str) -> Result<Option<PolicyMetadata>> {
    let section = find_custom_section(wasm, KUBEWARDEN_CUSTOM_SECTION_METADATA)
        .map_err(|e| anyhow!("cannot parse WebAssembly file {origin}: {e}"))?;
    section
        .map(|data| {
            serde_json::from_slice(data).map_err(|e| {
                anyhow!(
                    "cannot parse the {KUBEWARDEN_CUSTOM_SECTION_METADATA} section of {origin}: {e}"
                )
            })
        })
        .transpose()
}

/// Reads a `metadata.yml` file.
pub fn from_yaml_file(path: &Path) -> Result<PolicyMetadata> {
    let contents = std::fs::read_to_string(path)
        .map_err(|e| anyhow!("cannot read metadata file {}: {e}", path.display()))?;
    serde_yaml::from_str(&contents)
        .map_err(|e| anyhow!("cannot parse metadata file {}: {e}", path.display()))
}

/// Finds the metadata of a module: the annotated section first; otherwise
/// the file given explicitly (must exist); otherwise `default_file` when it
/// exists.
pub fn resolve(
    wasm: &[u8],
    origin: &str,
    explicit_file: Option<&Path>,
    default_file: &Path,
) -> Result<MetadataSource> {
    if let Some(m) = from_module(wasm, origin)? {
        return Ok(MetadataSource::Annotated(m));
    }
    if let Some(path) = explicit_file {
        return Ok(MetadataSource::File(
            path.to_path_buf(),
            from_yaml_file(path)?,
        ));
    }
    if default_file.is_file() {
        return Ok(MetadataSource::File(
            default_file.to_path_buf(),
            from_yaml_file(default_file)?,
        ));
    }
    Ok(MetadataSource::None)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn leb(mut v: usize) -> Vec<u8> {
        let mut out = vec![];
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                return out;
            }
            out.push(byte | 0x80);
        }
    }

    /// Builds a minimal wasm module made of custom sections only.
    pub(crate) fn module_with_sections(sections: &[(&str, &[u8])]) -> Vec<u8> {
        let mut wasm = b"\0asm\x01\0\0\0".to_vec();
        // an empty type section, to have a non custom section too
        wasm.extend([1u8, 1, 0]);
        for (name, data) in sections {
            let mut body = leb(name.len());
            body.extend(name.as_bytes());
            body.extend(*data);
            wasm.push(0);
            wasm.extend(leb(body.len()));
            wasm.extend(body);
        }
        wasm
    }

    #[test]
    fn finds_custom_section() {
        let wasm = module_with_sections(&[("other", b"x"), ("io.kubewarden.metadata", b"{}")]);
        assert_eq!(
            find_custom_section(&wasm, KUBEWARDEN_CUSTOM_SECTION_METADATA).unwrap(),
            Some(&b"{}"[..])
        );
        assert_eq!(find_custom_section(&wasm, "missing").unwrap(), None);
    }

    #[test]
    fn rejects_garbage() {
        assert!(find_custom_section(b"hello world", "x").is_err());
        let mut wasm = module_with_sections(&[("name", &[1, 2, 3, 4])]);
        wasm.truncate(wasm.len() - 2);
        assert!(find_custom_section(&wasm, "name").is_err());
    }

    #[test]
    fn parses_annotated_metadata() {
        let json = br#"{"protocolVersion":"v1","rules":[],"mutating":false,"executionMode":"kubewarden-wapc","policyType":"kubernetes","contextAwareResources":[{"apiVersion":"v1","kind":"Namespace"}]}"#;
        let wasm = module_with_sections(&[(KUBEWARDEN_CUSTOM_SECTION_METADATA, json)]);
        let m = from_module(&wasm, "p.wasm").unwrap().unwrap();
        assert_eq!(m.execution_mode.as_deref(), Some("kubewarden-wapc"));
        assert!(!m.is_raw());
        assert!(m.context_aware_resources.contains(&ContextAwareResource {
            api_version: "v1".to_string(),
            kind: "Namespace".to_string()
        }));
    }

    #[test]
    fn annotated_wins_over_file() {
        let dir = std::env::temp_dir().join(format!("testhost-meta-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("metadata.yml");
        std::fs::write(
            &file,
            "rules: []\nmutating: false\ncontextAwareResources:\n- apiVersion: apps/v1\n  kind: Deployment\n",
        )
        .unwrap();

        let plain = module_with_sections(&[]);
        let src = resolve(&plain, "p.wasm", None, &file).unwrap();
        assert!(matches!(src, MetadataSource::File(_, _)));
        assert_eq!(src.context_aware_resources().len(), 1);

        let annotated = module_with_sections(&[(
            KUBEWARDEN_CUSTOM_SECTION_METADATA,
            br#"{"contextAwareResources":[]}"#,
        )]);
        let src = resolve(&annotated, "p.wasm", Some(&file), &file).unwrap();
        assert!(matches!(src, MetadataSource::Annotated(_)));
        assert!(src.context_aware_resources().is_empty());

        let src = resolve(&plain, "p.wasm", None, &dir.join("nope.yml")).unwrap();
        assert_eq!(src, MetadataSource::None);

        let err = resolve(&plain, "p.wasm", Some(&dir.join("nope.yml")), &file).unwrap_err();
        assert!(err.to_string().contains("nope.yml"), "{err}");

        std::fs::write(&file, "contextAwareResources: [oops\n").unwrap();
        let err = resolve(&plain, "p.wasm", None, &file).unwrap_err();
        assert!(
            err.to_string().contains("cannot parse metadata file"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
