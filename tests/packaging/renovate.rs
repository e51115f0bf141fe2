//! Renovate sees every pin: the versions its built-in managers cannot read (the Makefile's tools,
//! the policy-server image of the dedicated PolicyServer, the admission-controller chart of the
//! Sylva values, the cosign the workflows install) each have a custom regex manager in
//! renovate.json that captures the pin as written. A custom manager needs `managerFilePatterns`
//! (`/regex/` or a glob; from Renovate 40.2.0, renovatebot/renovate#34427, formerly `fileMatch`)
//! and `matchStrings` with a `currentValue` group, plus a dependency name and a datasource, each as
//! a group or a template (renovatebot/renovate `lib/modules/manager/custom/regex/readme.md`).
//! Renovate's regular expressions are RE2's, which Rust's `regex` reads the same for these.

use super::*;
use regex::Regex;

/// One custom manager: the files it reads and what it captures there.
struct Manager {
    files: Vec<Regex>,
    strings: Vec<Regex>,
    dep_name: Option<String>,
}

fn managers() -> Vec<Manager> {
    let renovate: Value =
        serde_json::from_str(&read("renovate.json")).expect("renovate.json is JSON");
    let Some(list) = renovate["customManagers"].as_array() else {
        return Vec::new();
    };
    list.iter()
        .enumerate()
        .map(|(i, m)| {
            let what = format!("renovate.json customManagers[{i}]");
            assert_eq!(m["customType"], "regex", "{what}");
            let files = strings(
                &m["managerFilePatterns"],
                &format!("{what}.managerFilePatterns"),
            )
            .iter()
            .map(|p| {
                let inner = p
                    .strip_prefix('/')
                    .and_then(|p| p.strip_suffix('/'))
                    .unwrap_or_else(|| panic!("{what}: {p} is not a /regex/"));
                Regex::new(inner).unwrap_or_else(|e| panic!("{what}: {p}: {e}"))
            })
            .collect();
            let strings: Vec<Regex> = strings(&m["matchStrings"], &format!("{what}.matchStrings"))
                .iter()
                .map(|s| Regex::new(s).unwrap_or_else(|e| panic!("{what}: {s}: {e}")))
                .collect();
            for s in &strings {
                assert!(
                    s.capture_names().any(|n| n == Some("currentValue")),
                    "{what}: {s} captures no currentValue"
                );
                assert!(
                    s.capture_names().any(|n| n == Some("depName"))
                        || m["depNameTemplate"].is_string(),
                    "{what}: no depName group and no depNameTemplate"
                );
            }
            assert!(
                m["datasourceTemplate"].is_string(),
                "{what}: no datasourceTemplate"
            );
            Manager {
                files,
                strings,
                dep_name: m["depNameTemplate"].as_str().map(str::to_string),
            }
        })
        .collect()
}

/// Every (dependency, version) the custom managers capture in `file`.
fn captured(managers: &[Manager], file: &str) -> BTreeSet<(String, String)> {
    let text = read(file);
    let mut out = BTreeSet::new();
    for manager in managers
        .iter()
        .filter(|m| m.files.iter().any(|f| f.is_match(file)))
    {
        for string in &manager.strings {
            for found in string.captures_iter(&text) {
                let name = found
                    .name("depName")
                    .map(|m| m.as_str().to_string())
                    .or_else(|| manager.dep_name.clone())
                    .unwrap_or_default();
                out.insert((name, found["currentValue"].to_string()));
            }
        }
    }
    out
}

/// The pins of the Makefile, as it writes them: `NAME_VERSION := X` and pip's `name==X`.
fn makefile_pins() -> Vec<String> {
    let text = read("Makefile");
    let assigned = Regex::new(r"(?m)^[A-Z_]+_VERSION := (\S+)$").expect("a regex");
    let pip = Regex::new(r"[A-Za-z][A-Za-z0-9._-]*==(\d[^\s\\]*)").expect("a regex");
    assigned
        .captures_iter(&text)
        .chain(pip.captures_iter(&text))
        .map(|c| c[1].to_string())
        .collect()
}

/// Every mapping of `value` (depth first).
fn mappings<'a>(value: &'a Value, out: &mut Vec<&'a serde_json::Map<String, Value>>) {
    match value {
        Value::Object(map) => {
            out.push(map);
            map.values().for_each(|v| mappings(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| mappings(v, out)),
        _ => {}
    }
}

#[test]
fn every_pin_renovate_cannot_read_has_a_custom_manager() {
    let managers = managers();
    let mut missing = Vec::new();
    let mut expect = |file: &str, name: Option<&str>, version: &str| {
        let found = captured(&managers, file);
        if !found
            .iter()
            .any(|(n, v)| v == version && name.is_none_or(|name| n == name))
        {
            missing.push(format!("{file}: {} {version}", name.unwrap_or("")));
        }
    };

    let pins = makefile_pins();
    assert!(pins.len() >= 5, "the Makefile's pins: {pins:?}");
    for version in &pins {
        expect("Makefile", None, version);
    }

    for (file, pointer) in [
        (
            "examples/placement/placement.yaml",
            "/data/policyServerImage",
        ),
        ("examples/policy-server/policy-server.yaml", "/spec/image"),
    ] {
        let document = yaml_documents(file, &read(file))
            .into_iter()
            .find(|d| d.pointer(pointer).is_some())
            .unwrap_or_else(|| panic!("{file}: no {pointer}"));
        let image = str_at(&document, pointer, file);
        let (name, tag) = image.rsplit_once(':').expect("an image with a tag");
        expect(file, Some(name), tag);
    }

    let sylva = "examples/sylva/values.yaml";
    let values = yaml_file(sylva);
    let mut all = Vec::new();
    mappings(&values, &mut all);
    let chart = all
        .iter()
        .find(|m| m.get("chart").and_then(Value::as_str) == Some("admission-controller"))
        .and_then(|m| m.get("version").and_then(Value::as_str))
        .unwrap_or_else(|| panic!("{sylva}: no admission-controller chart with a version"));
    expect(sylva, Some("admission-controller"), chart);

    let mut cosigns = 0;
    for entry in fs::read_dir(root().join(".github/workflows")).expect(".github/workflows") {
        let path = entry.expect("an entry").path();
        let file = format!(
            ".github/workflows/{}",
            path.file_name().expect("a name").to_string_lossy()
        );
        let workflow = yaml_file(&file);
        let mut all = Vec::new();
        mappings(&workflow, &mut all);
        for step in all.iter().filter(|m| {
            m.get("uses")
                .and_then(Value::as_str)
                .is_some_and(|u| u.starts_with("sigstore/cosign-installer@"))
        }) {
            let version = step
                .get("with")
                .and_then(|w| w.get("cosign-release"))
                .and_then(Value::as_str)
                .unwrap_or_else(|| {
                    panic!("{file}: cosign-installer without a pinned cosign-release")
                });
            expect(&file, Some("sigstore/cosign"), version);
            cosigns += 1;
        }
    }
    assert!(cosigns > 0, "the workflows install cosign");

    assert!(
        missing.is_empty(),
        "pins no custom manager of renovate.json captures:\n{}",
        missing.join("\n")
    );
}
