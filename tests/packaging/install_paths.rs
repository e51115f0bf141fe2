//! Every documented way in, built as a user builds it: each `kubectl apply -k` and `kubectl
//! delete -k` command, and each kustomization, that the README, docs/ and the examples' own
//! comments give, with the release's URLs read as the paths of a clone. Each build is checked:
//!
//! - every service account a RoleBinding or ClusterRoleBinding binds exists, in the build or in
//!   the platform the path names: Kubewarden's chart, whose `default` PolicyServer runs as
//!   `policy-server` in its release namespace (`kubewarden`), or Kubewarden installed from Rancher
//!   (the component examples/placement/rancher), whose charts Rancher installs in
//!   `cattle-kubewarden-system` (kubewarden/helm-charts `charts/admission-controller/Chart.yaml`,
//!   6.0.0-alpha, annotation `catalog.cattle.io/namespace`); the account is the chart's
//!   `values.yaml` `policyServer.serviceAccountName`, `policy-server`, which
//!   `templates/defaults/policies/_policyserver-default.tpl` gives the `default` PolicyServer;
//! - every matchCondition that lets a DELETE skip a guard is one a component of the path turned
//!   on: it names exactly (namespace and name) a service account the build creates, or it is the
//!   break-glass condition of examples/guard/break-glass. The guard alone has none.
//!
//! Beside them: a Rancher user and a Helm or Flux user of template-cleanup find a path of their
//! own in the README, and what docs/operations.md says names its namespace on its own does.

use super::placement::kustomize_text;
use super::*;
use regex::Regex;

/// How the release's URLs of the examples start; `?ref=v<version>` ends them.
const REPOSITORY: &str = "https://github.com/capi-template-guard/capi-template-guard//";

/// The documents whose commands and kustomizations are install paths (artifacthub-pkg.yml: its
/// install text, Markdown in YAML).
const DOCUMENTS: [&str; 5] = [
    "README.md",
    "artifacthub-pkg.yml",
    "docs/operations.md",
    "docs/cleanup.md",
    "docs/deploy-tools.md",
];

/// The components that turn a bypass on, each the only source of its condition.
const BREAK_GLASS: &str = "examples/guard/break-glass";
const RANCHER: &str = "examples/placement/rancher";

/// template-cleanup's guard's one condition: it selects template-cleanup's DELETEs for that guard,
/// and exempts none of them (template-cleanup/core/src/preflight.rs, `SELECTS_THE_CLEANUP`).
const SELECTS_THE_CLEANUP: (&str, &str) = (
    "only-capi-template-cleanup",
    "request.userInfo.username.startsWith('system:serviceaccount:') && request.userInfo.username.endsWith(':capi-template-cleanup')",
);

/// One documented install path: where it is written and the kustomization it amounts to, its
/// paths those of a clone.
#[derive(Debug)]
struct InstallPath {
    place: String,
    kustomization: String,
}

impl InstallPath {
    fn uses(&self, path: &str) -> bool {
        self.kustomization
            .lines()
            .any(|l| l.trim().trim_start_matches("- ").trim_end_matches('/') == path)
    }
}

/// The release URLs of `text` as paths of a clone; every `?ref=` must be this release's tag.
fn local(text: &str, place: &str) -> String {
    let url = Regex::new(&format!(
        r"{}([^?\s'\x22]+)\?ref=([^\s'\x22]+)",
        regex::escape(REPOSITORY)
    ))
    .expect("a regex");
    let tag = format!("v{}", PolicyMetadata::load().version());
    for found in url.captures_iter(text) {
        assert_eq!(
            found[2], tag,
            "{place}: {} is not pinned to {tag}",
            &found[0]
        );
    }
    url.replace_all(text, "$1").into_owned()
}

/// The path of a `kubectl apply -k` or `kubectl delete -k` in `line`, if any.
fn command(line: &str, place: &str) -> Option<InstallPath> {
    let at = line
        .find("kubectl apply -k ")
        .or_else(|| line.find("kubectl delete -k "))?;
    let argument = line[at..]
        .split_whitespace()
        .nth(3)
        .unwrap_or_else(|| panic!("{place}: `{line}` names no directory"))
        .trim_matches(|c| c == '\'' || c == '"');
    let path = local(argument, place);
    Some(InstallPath {
        place: format!("{place}: {}", line.trim()),
        kustomization: format!("resources:\n  - {}\n", path.trim_end_matches('/')),
    })
}

/// The install paths of a Markdown document: in its fenced blocks, each command and each
/// kustomization (a block that says `kind: Kustomization`).
fn markdown_paths(document: &str) -> Vec<InstallPath> {
    let text = read(document);
    let mut paths = Vec::new();
    let mut block: Option<(usize, Vec<&str>)> = None;
    for (number, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            match block.take() {
                None => block = Some((number + 2, Vec::new())),
                Some((first, lines)) => {
                    let place = format!("{document}:{first}");
                    let body = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
                    if body.contains("kind: Kustomization") {
                        paths.push(InstallPath {
                            kustomization: local(&body, &place),
                            place,
                        });
                    } else {
                        paths.extend(lines.iter().filter_map(|l| command(l, &place)));
                    }
                }
            }
        } else if let Some((_, lines)) = block.as_mut() {
            lines.push(line);
        }
    }
    paths
}

/// The install paths the examples' comments give: `#   kubectl apply -k ...`, and every snippet
/// (lines indented under `#   `) that starts as a kustomization does (`apiVersion:
/// kustomize...`, `resources:` or `components:`). Such a snippet must build as written.
fn comment_paths(file: &str) -> Vec<InstallPath> {
    let text = read(file);
    let lines: Vec<&str> = text.lines().collect();
    let mut paths = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let place = format!("{file}:{}", i + 1);
        let Some(rest) = lines[i].strip_prefix("#   ") else {
            i += 1;
            continue;
        };
        if let Some(path) = command(lines[i], &place) {
            paths.push(path);
            i += 1;
            continue;
        }
        let starts = ["apiVersion: kustomize", "resources:", "components:"];
        if !starts.iter().any(|s| rest.starts_with(s)) {
            i += 1;
            continue;
        }
        let mut snippet = String::new();
        while i < lines.len() {
            match lines[i].strip_prefix("#   ") {
                Some(rest) if !rest.trim_start().starts_with("kubectl") => {
                    snippet.push_str(rest);
                    snippet.push('\n');
                    i += 1;
                }
                _ => break,
            }
        }
        paths.push(InstallPath {
            kustomization: local(&snippet, &place),
            place,
        });
    }
    paths
}

/// Every YAML file under examples/ but examples/sylva/ (Sylva's units are the values of its chart).
fn example_files() -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<String>) {
        let mut entries: Vec<_> = fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                if !path.ends_with("examples/sylva") {
                    walk(&path, out);
                }
            } else if path.extension().is_some_and(|e| e == "yaml") {
                let relative = path.strip_prefix(root()).expect("under the root");
                out.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    let mut files = Vec::new();
    walk(&root().join("examples"), &mut files);
    files
}

/// Every documented install path.
fn documented_paths() -> Vec<InstallPath> {
    let mut paths: Vec<InstallPath> = DOCUMENTS.iter().flat_map(|d| markdown_paths(d)).collect();
    paths.extend(example_files().iter().flat_map(|f| comment_paths(f)));
    paths
}

/// The namespace and name of each ServiceAccount of a build.
fn accounts(built: &[Value]) -> BTreeSet<(String, String)> {
    built
        .iter()
        .filter(|d| d["kind"] == "ServiceAccount")
        .map(|d| {
            (
                d["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                d["metadata"]["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// The accounts the platform a path names brings: the `default` PolicyServer's, in Kubewarden's
/// namespace or, with examples/placement/rancher, in Rancher's (module documentation).
fn platform_accounts(path: &InstallPath) -> BTreeSet<(String, String)> {
    let namespace = if path.uses(RANCHER) {
        "cattle-kubewarden-system"
    } else {
        "kubewarden"
    };
    BTreeSet::from([(namespace.to_string(), "policy-server".to_string())])
}

fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What is wrong with the build of `path`: bindings to accounts that do not exist, and
/// exemptions no component of the path turned on.
fn problems(path: &InstallPath, built: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    let created = accounts(built);
    let platform = platform_accounts(path);
    for binding in built
        .iter()
        .filter(|d| d["kind"] == "RoleBinding" || d["kind"] == "ClusterRoleBinding")
    {
        let name = &binding["metadata"]["name"];
        for subject in binding["subjects"].as_array().into_iter().flatten() {
            let account = (
                subject["namespace"].as_str().unwrap_or("").to_string(),
                subject["name"].as_str().unwrap_or("").to_string(),
            );
            if subject["kind"] != "ServiceAccount" {
                problems.push(format!("{name} binds {subject}, not a service account"));
            } else if !created.contains(&account) && !platform.contains(&account) {
                problems.push(format!(
                    "{name} binds {}/{}, which neither the build nor the platform ({platform:?}) creates",
                    account.0, account.1
                ));
            }
        }
    }
    let exempts = Regex::new(
        r"^request\.userInfo\.username != 'system:serviceaccount:([a-z0-9.-]+):([a-z0-9.-]+)'$",
    )
    .expect("a regex");
    for policy in built
        .iter()
        .filter(|d| d["kind"] == "ClusterAdmissionPolicy" || d["kind"] == "AdmissionPolicy")
    {
        let policy_name = &policy["metadata"]["name"];
        let guard = &policy["metadata"]["labels"]["capi-template-guard.kubewarden.io/guard"];
        for condition in policy["spec"]["matchConditions"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let name = condition["name"].as_str().unwrap_or("");
            let expression = squash(condition["expression"].as_str().unwrap_or(""));
            if guard == "cleanup"
                && name == SELECTS_THE_CLEANUP.0
                && expression == SELECTS_THE_CLEANUP.1
            {
                continue;
            }
            if let Some(account) = exempts.captures(&expression) {
                let account = (account[1].to_string(), account[2].to_string());
                if !created.contains(&account) {
                    problems.push(format!(
                        "{policy_name}: matchCondition {name} exempts {}/{}, an account the build does not create",
                        account.0, account.1
                    ));
                }
                continue;
            }
            if name == "not-break-glass" && path.uses(BREAK_GLASS) {
                continue;
            }
            problems.push(format!(
                "{policy_name}: matchCondition {name} ({expression}) is a bypass no component of this path turned on"
            ));
        }
    }
    // template-cleanup's guard comes with the main guard's condition for its account: without it
    // the main guard judges template-cleanup's DELETEs too, and its refusals, which template-cleanup
    // does not take for its guard's, stop the passes.
    let label =
        |d: &Value| d["metadata"]["labels"]["capi-template-guard.kubewarden.io/guard"].clone();
    if built.iter().any(|d| label(d) == "cleanup") {
        let exempted = built.iter().filter(|d| label(d) == "main").any(|main| {
            main["spec"]["matchConditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["name"] == "not-capi-template-cleanup")
        });
        if !exempted {
            problems.push(
                "template-cleanup's guard without the main guard's condition for template-cleanup's account"
                    .to_string(),
            );
        }
    }
    problems
}

fn kubectl() -> bool {
    crate::kubectl_on_path("the documented install paths")
}

/// Each documented path builds; its bindings name accounts that exist, and its guards skip only
/// what a component of the path chose to skip.
#[test]
fn every_documented_install_path_builds_binds_and_exempts_only_its_own() {
    if !kubectl() {
        return;
    }
    let paths = documented_paths();
    for document in [
        "README.md",
        "artifacthub-pkg.yml",
        "docs/operations.md",
        "docs/cleanup.md",
        "examples/cleanup/helm/kustomization.yaml",
    ] {
        assert!(
            paths
                .iter()
                .any(|p| p.place.starts_with(&format!("{document}:"))),
            "no install path read in {document}"
        );
    }
    let mut failures = Vec::new();
    for path in &paths {
        match kustomize_text(&path.kustomization) {
            Err(e) => failures.push(format!("{}: does not build: {e}", path.place)),
            Ok(built) => failures.extend(
                problems(path, &built)
                    .into_iter()
                    .map(|p| format!("{}: {p}", path.place)),
            ),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The checks themselves catch what they are for.
#[test]
fn the_checks_see_a_stray_binding_and_a_bypass() {
    let path = InstallPath {
        place: "a test".into(),
        kustomization: "resources:\n  - examples\n".into(),
    };
    let built = vec![
        serde_json::json!({"kind": "ClusterRoleBinding", "metadata": {"name": "b"},
            "subjects": [{"kind": "ServiceAccount", "namespace": "kubewarden", "name": "policy-server"},
                         {"kind": "ServiceAccount", "namespace": "kubewarden", "name": "nobody"}]}),
        serde_json::json!({"kind": "ClusterAdmissionPolicy", "metadata": {"name": "p", "labels": {}},
            "spec": {"matchConditions": [
                {"name": "not-x", "expression": "request.userInfo.username != 'system:serviceaccount:ops:x'"},
                {"name": "not-break-glass", "expression": "true"},
                {"name": SELECTS_THE_CLEANUP.0, "expression": SELECTS_THE_CLEANUP.1}]}}),
    ];
    let found = problems(&path, &built);
    assert_eq!(found.len(), 4, "{found:#?}");
    assert!(found[0].contains("kubewarden/nobody"), "{found:#?}");
    assert!(found[1].contains("ops/x"), "{found:#?}");
    assert!(found[2].contains("not-break-glass"), "{found:#?}");
    assert!(
        found[3].contains(SELECTS_THE_CLEANUP.0),
        "only template-cleanup's guard may select: {found:#?}"
    );
    let rancher = InstallPath {
        place: "a test".into(),
        kustomization: format!("resources:\n  - examples\ncomponents:\n  - {RANCHER}\n"),
    };
    assert!(problems(&rancher, &built[..1])[0].contains("kubewarden/policy-server"));
    let alone = [serde_json::json!({"kind": "ClusterAdmissionPolicy",
        "metadata": {"name": "c", "labels": {"capi-template-guard.kubewarden.io/guard": "cleanup"}},
        "spec": {"matchConditions": [{"name": SELECTS_THE_CLEANUP.0, "expression": SELECTS_THE_CLEANUP.1}]}})];
    assert_eq!(
        problems(&path, &alone),
        [
            "template-cleanup's guard without the main guard's condition for template-cleanup's account"
        ]
    );
}

/// The guard as the main kustomization ships it judges every account: no matchCondition.
#[test]
fn the_guard_ships_with_no_bypass() {
    if !kubectl() {
        return;
    }
    let built = kustomize_text("resources:\n  - examples\n").unwrap_or_else(|e| panic!("{e}"));
    let guard = built
        .iter()
        .find(|d| {
            d["kind"] == "ClusterAdmissionPolicy" && d["metadata"]["name"] == "capi-template-guard"
        })
        .expect("the main guard");
    assert_eq!(
        guard["spec"]["matchConditions"],
        serde_json::json!([]),
        "the main guard of examples/"
    );
    let file = yaml_file("examples/guard/cluster-admission-policy-guard.yaml");
    assert_eq!(
        file["spec"]["matchConditions"],
        serde_json::json!([]),
        "the main guard for `kubectl apply -f`"
    );
}

/// template-cleanup's exemption comes with template-cleanup, names its account in its namespace
/// exactly, and lands on the main guard alone, whatever the other components and their order.
#[test]
fn the_cleanups_exemption_comes_with_it_and_names_its_account() {
    if !kubectl() {
        return;
    }
    let components = [
        "examples/cleanup/component",
        RANCHER,
        "examples/policy-server",
        BREAK_GLASS,
    ];
    for order in super::placement::orders(&components) {
        let kustomization = format!(
            "resources:\n  - examples\ncomponents:\n{}",
            order
                .iter()
                .map(|c| format!("  - {c}\n"))
                .collect::<String>()
        );
        let built = kustomize_text(&kustomization).unwrap_or_else(|e| panic!("{e}"));
        let conditions = |name: &str| -> Vec<(String, String)> {
            let policy = built
                .iter()
                .find(|d| d["kind"] == "ClusterAdmissionPolicy" && d["metadata"]["name"] == name)
                .unwrap_or_else(|| panic!("{order:?}: no {name}"));
            seq_at(policy, "/spec/matchConditions", name)
                .iter()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap_or("").to_string(),
                        squash(c["expression"].as_str().unwrap_or("")),
                    )
                })
                .collect()
        };
        let main = conditions("capi-template-guard");
        let cleanup = built
            .iter()
            .find(|d| {
                d["kind"] == "ServiceAccount" && d["metadata"]["name"] == "capi-template-cleanup"
            })
            .expect("template-cleanup's account");
        let exemption = format!(
            "request.userInfo.username != 'system:serviceaccount:{}:capi-template-cleanup'",
            str_at(cleanup, "/metadata/namespace", "template-cleanup's account")
        );
        assert!(
            main.contains(&("not-capi-template-cleanup".to_string(), exemption.clone())),
            "{order:?}: {main:?}"
        );
        assert_eq!(main.len(), 2, "{order:?}: {main:?}");
        assert_eq!(
            conditions("capi-template-guard-cleanup"),
            vec![(
                SELECTS_THE_CLEANUP.0.to_string(),
                SELECTS_THE_CLEANUP.1.to_string()
            )],
            "{order:?}: template-cleanup's guard keeps its one condition"
        );
    }
}

/// The README's paths in the part between `from` and `to`.
fn readme_paths_between(from: &str, to: &str) -> Vec<InstallPath> {
    let text = read("README.md");
    let start = text
        .find(from)
        .unwrap_or_else(|| panic!("README.md has no {from:?}"));
    let end = start
        + text[start..]
            .find(to)
            .unwrap_or_else(|| panic!("README.md has no {to:?} after {from:?}"));
    let (first, last) = (
        text[..start].lines().count(),
        text[..end].lines().count() + 1,
    );
    markdown_paths("README.md")
        .into_iter()
        .filter(|p| {
            let line: usize = p.place["README.md:".len()..]
                .split(':')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            (first..=last).contains(&line)
        })
        .collect()
}

/// A Rancher user finds in the README's install steps, and in Artifact Hub's install text (the
/// `install` of artifacthub-pkg.yml, the only part of that file with fenced blocks), a path that
/// builds for Rancher: every policy's binding names the account of Rancher's namespace.
#[test]
fn a_rancher_user_has_an_install_path_that_works_as_written() {
    if !kubectl() {
        return;
    }
    let readme: Vec<InstallPath> = readme_paths_between("## Install", "**4. Wait**")
        .into_iter()
        .filter(|p| p.uses(RANCHER))
        .collect();
    assert!(
        !readme.is_empty(),
        "README.md, install steps 2 and 3: no command or kustomization with {RANCHER}"
    );
    let artifacthub: Vec<InstallPath> = markdown_paths("artifacthub-pkg.yml")
        .into_iter()
        .filter(|p| p.uses(RANCHER))
        .collect();
    assert!(
        !artifacthub.is_empty(),
        "artifacthub-pkg.yml, install: no command or kustomization with {RANCHER}"
    );
    for path in readme.into_iter().chain(artifacthub) {
        let built =
            kustomize_text(&path.kustomization).unwrap_or_else(|e| panic!("{}: {e}", path.place));
        assert!(
            built.iter().any(|d| d["kind"] == "ClusterAdmissionPolicy"),
            "{}: installs no policy",
            path.place
        );
        for binding in built.iter().filter(|d| d["kind"] == "ClusterRoleBinding") {
            for subject in seq_at(binding, "/subjects", "a binding") {
                if subject["name"] == "policy-server" {
                    assert_eq!(
                        subject["namespace"], "cattle-kubewarden-system",
                        "{}: {binding}",
                        path.place
                    );
                }
            }
        }
    }
}

/// Step 6 gives Helm and Flux users the `helm` component in a path that builds.
#[test]
fn step_6_gives_the_helm_component() {
    if !kubectl() {
        return;
    }
    let helm: Vec<InstallPath> =
        readme_paths_between("**6. template-cleanup.**", "Upgrades, uninstalling")
            .into_iter()
            .filter(|p| p.uses("examples/cleanup/helm"))
            .collect();
    assert!(
        !helm.is_empty(),
        "README.md, install step 6: no command or kustomization with examples/cleanup/helm"
    );
    for path in helm {
        let built =
            kustomize_text(&path.kustomization).unwrap_or_else(|e| panic!("{}: {e}", path.place));
        let job = built
            .iter()
            .find(|d| d["kind"] == "CronJob")
            .unwrap_or_else(|| panic!("{}: no CronJob", path.place));
        assert!(
            seq_at(
                job,
                "/spec/jobTemplate/spec/template/spec/containers/0/args",
                "the CronJob"
            )
            .iter()
            .any(|a| a == "--helm-releases"),
            "{}: the CronJob reads no Helm release",
            path.place
        );
    }
}

/// What docs/operations.md says names the namespace on its own keeps its namespace when the
/// placement moves to Rancher's.
#[test]
fn what_names_its_namespace_on_its_own_does() {
    if !kubectl() {
        return;
    }
    let text = read("docs/operations.md");
    let sentence = text
        .split(". ")
        .map(squash)
        .find(|s| {
            s.contains("the namespace on their own") || s.contains("the namespace on its own")
        })
        .expect("docs/operations.md says what names its namespace on its own");
    let named = Regex::new(r"`(examples/[^`]+)`").expect("a regex");
    let paths: Vec<String> = named
        .captures_iter(&sentence)
        .map(|c| c[1].to_string())
        .collect();
    assert!(!paths.is_empty(), "{sentence}");
    for path in paths {
        let (default, rancher) = if path.ends_with(".yaml") {
            let own = yaml_documents(&path, &read(&path));
            (own.clone(), own)
        } else {
            let build = |components: &str| {
                kustomize_text(&format!(
                    "resources:\n  - {path}\ncomponents: [{components}]\n"
                ))
                .unwrap_or_else(|e| panic!("{e}"))
            };
            (build(""), build(RANCHER))
        };
        let namespaces = |built: &[Value]| -> Vec<Value> {
            built
                .iter()
                .map(|d| d["metadata"]["namespace"].clone())
                .collect()
        };
        assert_eq!(
            namespaces(&default),
            namespaces(&rancher),
            "docs/operations.md: `{path}` is said to name its namespace on its own, but it follows the placement"
        );
    }
}

/// The units of Sylva's values that build this project's kustomizations (`repo:
/// capi-template-guard`; examples/sylva/values.yaml): name and kustomization, the unit's
/// `_components` relative to its `path` as Flux reads them. Units whose path or components are
/// templated by the chart are left to `make sylva-render`.
fn sylva_units() -> Vec<(String, InstallPath)> {
    let file = "examples/sylva/values.yaml";
    let values = yaml_file(file);
    let normal = |path: &str| {
        let mut parts: Vec<&str> = Vec::new();
        for part in path.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                part => parts.push(part),
            }
        }
        parts.join("/")
    };
    let mut units = Vec::new();
    for (name, unit) in values["units"].as_object().into_iter().flatten() {
        if unit["repo"] != "capi-template-guard" {
            continue;
        }
        let spec = &unit["kustomization_spec"];
        let path = str_at(spec, "/path", file);
        let components: Vec<String> = spec["_components"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c.as_str().unwrap_or("{{").to_string())
            .collect();
        if path.contains("{{") || components.iter().any(|c| c.contains("{{")) {
            continue;
        }
        let path = normal(path);
        let mut kustomization = format!("resources:\n  - {path}\n");
        if !components.is_empty() {
            kustomization.push_str("components:\n");
            for component in &components {
                kustomization
                    .push_str(&format!("  - {}\n", normal(&format!("{path}/{component}"))));
            }
        }
        units.push((
            name.clone(),
            InstallPath {
                place: format!("{file}: unit {name}"),
                kustomization,
            },
        ));
    }
    units
}

/// Sylva's units build, bind existing accounts (Sylva's kubewarden unit installs the chart in
/// `kubewarden`, the default platform) and exempt only their own.
#[test]
fn sylvas_units_build_bind_and_exempt_only_their_own() {
    if !kubectl() {
        return;
    }
    let units = sylva_units();
    let names: Vec<&str> = units.iter().map(|(name, _)| name.as_str()).collect();
    for unit in ["capi-template-guard", "capi-template-guard-monitoring"] {
        assert!(names.contains(&unit), "no unit {unit}: {names:?}");
    }
    let mut failures = Vec::new();
    for (_, unit) in &units {
        match kustomize_text(&unit.kustomization) {
            Err(e) => failures.push(format!("{}: does not build: {e}", unit.place)),
            Ok(built) => failures.extend(
                problems(unit, &built)
                    .into_iter()
                    .map(|p| format!("{}: {p}", unit.place)),
            ),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// No object is applied by two of Sylva's units: two Flux Kustomizations that apply one object
/// undo each other's version of it at every reconcile. examples/cleanup applies the main guard
/// with template-cleanup's condition, examples/ without it, so Sylva has one unit for both
/// (examples/ with the components cleanup/component and cleanup/helm).
#[test]
fn no_object_is_applied_by_two_sylva_units() {
    if !kubectl() {
        return;
    }
    let mut owners: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, unit) in sylva_units() {
        let built = kustomize_text(&unit.kustomization).unwrap_or_else(|e| panic!("{e}"));
        for object in built {
            let id = format!(
                "{} {}/{}",
                object["kind"].as_str().unwrap_or(""),
                object["metadata"]["namespace"].as_str().unwrap_or(""),
                object["metadata"]["name"].as_str().unwrap_or("")
            );
            owners.entry(id).or_default().push(name.clone());
        }
    }
    let shared: Vec<String> = owners
        .into_iter()
        .filter(|(_, units)| units.len() > 1)
        .map(|(id, units)| format!("{id}: {units:?}"))
        .collect();
    assert!(shared.is_empty(), "{}", shared.join("\n"));
}
