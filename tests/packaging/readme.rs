//! The README settings table and questions-ui.yml ask for the same settings.

use super::*;

// ---------------------------------------------------------------------------------------------
// README settings table and questions-ui.yml

/// The setting names in the first column of the README table whose header contains `| Setting`.
fn readme_settings() -> BTreeSet<String> {
    let path = root().join("README.md");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "README.md cannot be read ({e}). It must hold the settings table, with the header \
             `| Setting | Type | Default | Description |` and one row per setting, the setting \
             name in backticks in the first column."
        )
    });
    let lines: Vec<&str> = text.lines().collect();
    let header = lines
        .iter()
        .position(|line| line.contains("| Setting"))
        .unwrap_or_else(|| {
            panic!(
                "README.md has no settings table: no line contains `| Setting`. Add the table \
                 with the header `| Setting | Type | Default | Description |` and one row per \
                 setting, the setting name in backticks in the first column."
            )
        });
    let mut names = BTreeSet::new();
    for line in lines[header + 1..]
        .iter()
        .take_while(|line| !line.trim().is_empty())
    {
        let first = line
            .trim()
            .trim_start_matches('|')
            .split('|')
            .next()
            .unwrap_or("")
            .trim();
        let separator = !first.is_empty() && first.chars().all(|c| matches!(c, '-' | ':' | ' '));
        if separator || first.is_empty() {
            continue;
        }
        let name = match (first.find('`'), first.rfind('`')) {
            (Some(start), Some(end)) if end > start => &first[start + 1..end],
            _ => first,
        };
        assert!(
            names.insert(name.to_string()),
            "README.md settings table lists `{name}` twice"
        );
    }
    assert!(
        !names.is_empty(),
        "README.md settings table (after the `| Setting` header) has no rows"
    );
    names
}

fn questions() -> Vec<Value> {
    seq_at(
        &yaml_file("questions-ui.yml"),
        "/questions",
        "questions-ui.yml",
    )
    .clone()
}

pub(crate) fn question_variables() -> BTreeSet<String> {
    let mut variables = BTreeSet::new();
    for (i, question) in questions().iter().enumerate() {
        let variable = str_at(
            question,
            "/variable",
            &format!("questions-ui.yml questions[{i}]"),
        );
        assert!(
            variables.insert(variable.to_string()),
            "questions-ui.yml asks for `{variable}` twice"
        );
    }
    variables
}

#[test]
fn questions_ui_covers_exactly_the_readme_settings() {
    let readme = readme_settings();
    let questions = question_variables();
    let missing: Vec<_> = readme.difference(&questions).collect();
    let extra: Vec<_> = questions.difference(&readme).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "questions-ui.yml and the README settings table disagree. \
         In the README but not in questions-ui.yml: {missing:?}. \
         In questions-ui.yml but not in the README: {extra:?}."
    );
}

#[test]
fn every_question_is_complete() {
    for (i, question) in questions().iter().enumerate() {
        let what = format!("questions-ui.yml questions[{i}]");
        for key in ["variable", "label", "type", "group"] {
            str_at(question, &format!("/{key}"), &what);
        }
        assert!(
            question.get("default").is_some(),
            "{what} ({}) has no default",
            question["variable"]
        );
        if question["type"] == "enum" {
            let options = strings(
                question
                    .get("options")
                    .unwrap_or_else(|| panic!("{what} is an enum without options")),
                &format!("{what}.options"),
            );
            let default = question["default"].as_str().unwrap_or_default();
            assert!(
                options.iter().any(|o| o == default),
                "{what}: the default {default:?} is not one of the options {options:?}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The newcomer's path

/// The README is also the Artifact Hub page and is embedded in the module by `kwctl annotate`:
/// it stays short, and the rest lives in docs/ and CONTRIBUTING.md.
const README_MAX_LINES: usize = 250;

#[test]
fn the_readme_is_short() {
    let lines = read("README.md").lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines; keep it at most {README_MAX_LINES} and move detail to docs/"
    );
}

/// The words of `needles`, in this order, in `text`; the first one missing or out of order.
fn out_of_order<'a>(text: &str, needles: &[&'a str]) -> Option<&'a str> {
    let mut from = 0;
    for needle in needles {
        match text[from..].find(needle) {
            Some(at) => from += at + needle.len(),
            None => return Some(needle),
        }
    }
    None
}

/// The install order that works: deploy tool, RBAC, policies, wait, smoke test, template-cleanup.
#[test]
fn the_readme_installs_in_the_order_that_works() {
    let readme = read("README.md");
    let install = readme
        .split("\n## Install\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("README.md has an `## Install` section");
    let steps = [
        "Prepare your deploy tool",
        "helm.sh/resource-policy: keep",
        "capi-template-guard.kubewarden.io/cleanup",
        "kubectl apply -k",
        "examples/rbac.yaml",
        "examples/guard/cluster-admission-policy-guard.yaml",
        "--for=condition=PolicyUniquelyReachable",
        "--dry-run=server",
        "(409)",
        "(500)",
        "examples/cleanup",
    ];
    if let Some(step) = out_of_order(install, &steps) {
        panic!("README.md ## Install: `{step}` is missing or out of order; the order is {steps:?}");
    }
    assert_eq!(out_of_order("a b c", &["a", "c"]), None);
    assert_eq!(out_of_order("c b a", &["a", "c"]), Some("c"));
}

/// The two commands: set-up and `make evaluate` / `make test` in CONTRIBUTING.md, and a pointer
/// to them in the README.
#[test]
fn the_two_commands_are_in_contributing_and_pointed_to_by_the_readme() {
    let contributing = read("CONTRIBUTING.md");
    let section = contributing
        .split("\n## Two commands\n")
        .nth(1)
        .expect("CONTRIBUTING.md has a `## Two commands` section");
    for needle in [
        "rustup target add wasm32-wasip1",
        "make evaluate",
        "make test",
    ] {
        assert!(
            section.contains(needle),
            "CONTRIBUTING.md ## Two commands lacks `{needle}`"
        );
    }
    let readme = read("README.md");
    for needle in ["CONTRIBUTING.md#two-commands", "make evaluate", "make test"] {
        assert!(readme.contains(needle), "README.md lacks `{needle}`");
    }
}

/// The smoke test works for any provider and shows what kubectl really prints; the README says
/// what a single-policy install gives; the maturity statement comes first.
#[test]
fn the_readme_tells_the_truth_about_the_first_run() {
    let readme = read("README.md");
    let webhook = "admission webhook \"clusterwide-capi-template-guard.kubewarden.admission\" denied the request";
    for needle in [
        "infrastructureRef.kind",
        "Error from server: ",
        webhook,
        "metadata.annotations.capi-template-guard",
        "kwctl scaffold manifest",
        "`failurePolicy: Fail`",
        "split",
        "`--rollback-on-failure`",
    ] {
        assert!(readme.contains(needle), "README.md lacks `{needle}`");
    }
    let maturity = readme
        .find("Maturity")
        .expect("README.md states its maturity");
    let why = readme.find("\n## Why").expect("README.md has `## Why`");
    assert!(
        maturity < why,
        "the maturity statement comes before `## Why`"
    );
    let requirements = readme
        .split("\n## Requirements\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("README.md has `## Requirements`");
    assert!(
        !requirements.contains("older clusters"),
        "Requirements name one Kubernetes minimum, not a way around it"
    );
}

/// Missing RBAC hangs the webhook; it is never promised as a 500 (the host waits for a first
/// successful list with no timeout: policy-evaluator callback_handler/kubernetes/reflector.rs).
#[rstest::rstest]
#[case::readme("README.md")]
#[case::operations("docs/operations.md")]
#[case::rbac_comments("examples/rbac.yaml")]
fn missing_rbac_is_a_timeout_not_a_500(#[case] file: &str) {
    let text = read(file);
    for line in text.lines() {
        let lower = line.to_lowercase();
        let about_rbac =
            lower.contains("rbac") || lower.contains("forbidden") || lower.contains("without it");
        let promises_500 = lower.contains("(500)")
            || lower.contains("refused with code 500")
            || lower.contains("in a 500");
        assert!(
            !(about_rbac && promises_500),
            "{file}: a line promises a 500 for missing RBAC, which hangs until the webhook times out: {line}"
        );
    }
    assert!(
        text.contains("timeout") || text.contains("times out") || text.contains("timed out"),
        "{file} must say that missing RBAC ends in a webhook timeout"
    );
}

/// The prerequisites of a rule of the Makefile, as written (variables unexpanded); `|` kept.
fn make_prerequisites(makefile: &str, target: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = makefile.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(rest) = line.strip_prefix(&format!("{target}:")) else {
            continue;
        };
        if rest.trim_start().starts_with("export ") || rest.starts_with('=') {
            continue;
        }
        let mut text = rest.to_string();
        while text.ends_with('\\') {
            text.pop();
            text.push(' ');
            text.push_str(lines.next().unwrap_or(""));
        }
        out.extend(text.split_whitespace().map(str::to_string));
    }
    out
}

/// On a fresh machine the two commands set up what they need (the Rust target and components,
/// bats and jq pinned under target/tools/), and CI relies on that rather than installing them.
#[rstest::rstest]
#[case::evaluate_builds_with_the_wasm_target("policy.wasm", "rust-wasm-target")]
#[case::evaluate_has_jq("evaluate", "$(TOOLS_BIN)/jq")]
#[case::fmt_has_rustfmt("fmt", "rust-components")]
#[case::lint_has_clippy("lint", "rust-components")]
#[case::e2e_has_bats("e2e-tests", "$(TOOLS_BIN)/bats")]
#[case::e2e_has_jq("e2e-tests", "$(TOOLS_BIN)/jq")]
#[case::alerts_have_promtool("alert-tests", "$(TOOLS_BIN)/promtool")]
#[case::size_builds_the_module("size-test", "policy.wasm")]
fn the_two_commands_set_themselves_up(#[case] target: &str, #[case] prerequisite: &str) {
    let makefile = read("Makefile");
    let prerequisites = make_prerequisites(&makefile, target);
    assert!(
        prerequisites.iter().any(|p| p == prerequisite),
        "Makefile: `{target}` must depend on `{prerequisite}` (found {prerequisites:?})"
    );
    assert!(
        makefile.contains("export PATH := $(TOOLS_BIN):$(PATH)"),
        "Makefile: the pinned tools must be on PATH for every recipe"
    );
}

#[test]
fn ci_relies_on_the_makefile_for_the_set_up() {
    let ci = read(".ci/run");
    let commands: Vec<&str> = ci
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .collect();
    for line in &commands {
        assert!(
            !line.starts_with("rustup "),
            ".ci/run runs rustup itself: {line}"
        );
        let installs = line.contains("apt-get install");
        for tool in [" bats", " jq", " binaryen"] {
            assert!(
                !(installs && line.contains(tool)),
                ".ci/run installs{tool} itself instead of the Makefile: {line}"
            );
        }
    }
    assert!(
        commands.contains(&"make setup"),
        ".ci/run must run `make setup`"
    );
    assert_eq!(
        make_prerequisites("a: b \\\n c | d\n\tx\n", "a"),
        ["b", "c", "|", "d"]
    );
}

/// Kubewarden's reusable workflow (reusable-test-policy-rust.yml, kubewarden/github-actions
/// v7.0.1) gates the release on these four commands, run on a fresh checkout with no `make`
/// before them: CI runs them as written, before `make setup` builds anything.
#[test]
fn ci_runs_the_release_workflows_commands_before_make() {
    let ci = read(".ci/run");
    let lines: Vec<&str> = ci.lines().map(str::trim).collect();
    let setup = lines
        .iter()
        .position(|l| *l == "make setup")
        .expect(".ci/run runs `make setup`");
    for command in [
        "cargo check --workspace --locked",
        "cargo test --workspace --locked",
        "cargo fmt --all -- --check",
        "cargo clippy --workspace --locked -- -D warnings",
    ] {
        let at = lines.iter().position(|l| *l == command);
        assert!(
            at.is_some_and(|at| at < setup),
            ".ci/run must run `{command}` as a line of its own before `make setup`"
        );
    }
}

/// `make -n` of the two commands exits 0 on this checkout, whatever is built, where make is on
/// PATH. (GNU make runs a recipe line that calls `$(MAKE)` even under -n, and the rest of the line
/// with it: the recipes of both commands call none.)
#[test]
fn a_dry_run_of_the_two_commands_only_prints() {
    for target in ["evaluate", "test"] {
        let Ok(output) = std::process::Command::new("make")
            .args(["-n", target])
            .current_dir(root())
            .env_remove("MAKEFLAGS")
            .env_remove("MFLAGS")
            .env_remove("MAKELEVEL")
            .output()
        else {
            eprintln!("make is not on PATH: `make -n {target}` not run");
            return;
        };
        assert!(
            output.status.success(),
            "make -n {target}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
