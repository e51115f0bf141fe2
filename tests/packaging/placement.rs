//! Where the policies run (examples/placement/): every supported combination of the examples,
//! built by `kubectl kustomize`, puts the guard, the mutation and template-cleanup's guard on one
//! PolicyServer whose service account holds the read binding, and the guards ask `can_i` about
//! that account. The combinations: the default PolicyServer or the dedicated one
//! (examples/policy-server), Kubewarden's namespace or Rancher's (examples/placement/rancher),
//! template-cleanup left out, included as a component, or applied later on its own with the same
//! components; every order of the components. template-cleanup's guard is the main guard renamed,
//! with its own matchConditions and protect mode, and nothing else changed.

use super::*;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

const SERVER: &str = "examples/policy-server";
pub(super) const RANCHER: &str = "examples/placement/rancher";
const CLEANUP: &str = "examples/cleanup/component";
const READER: &str = "capi-template-guard-reader";
const ACCESS_REVIEW: &str = "capi-template-guard-access-review";

/// Where one combination must put the policies: PolicyServer, namespace, service account.
#[derive(Debug, PartialEq, Eq)]
struct Placement {
    server: &'static str,
    namespace: &'static str,
    account: &'static str,
}

impl Placement {
    fn of(components: &[&str]) -> Self {
        let dedicated = components.contains(&SERVER);
        Placement {
            server: if dedicated {
                "capi-template-guard"
            } else {
                "default"
            },
            namespace: if components.contains(&RANCHER) {
                "cattle-kubewarden-system"
            } else {
                "kubewarden"
            },
            account: if dedicated {
                "capi-template-guard-policy-server"
            } else {
                "policy-server"
            },
        }
    }

    fn subject(&self) -> Value {
        serde_json::json!({"kind": "ServiceAccount", "name": self.account, "namespace": self.namespace})
    }

    fn asked_account(&self) -> String {
        format!("system:serviceaccount:{}:{}", self.namespace, self.account)
    }
}

/// Whether kubectl (which brings kustomize) is on PATH; in CI its absence fails.
fn kubectl() -> bool {
    crate::kubectl_on_path("the placements' builds")
}

/// `kubectl kustomize` of a kustomization of `resources` and `components` (paths under the
/// repository), as a user writes one beside a clone.
pub(super) fn build(resources: &[&str], components: &[&str]) -> Vec<Value> {
    kustomize(resources, components).unwrap_or_else(|e| panic!("{e}"))
}

/// The same build, its failure returned: the kustomization and kustomize's error.
pub(super) fn kustomize(resources: &[&str], components: &[&str]) -> Result<Vec<Value>, String> {
    kustomize_text(&format!(
        "resources: [{}]\ncomponents: [{}]\n",
        resources.join(", "),
        components.join(", ")
    ))
}

/// `kubectl kustomize` of `kustomization`, a kustomization.yaml written beside a clone: its paths
/// start with `examples/`. Its failure returned: the kustomization and kustomize's error.
pub(super) fn kustomize_text(kustomization: &str) -> Result<Vec<Value>, String> {
    static SCRATCH: AtomicUsize = AtomicUsize::new(0);
    let scratch = std::env::temp_dir().join(format!(
        "capi-template-guard-placement-{}-{}",
        std::process::id(),
        SCRATCH.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&scratch);
    fs::create_dir_all(&scratch).expect("a scratch directory");
    // kustomize refuses absolute paths and bases above the kustomization: link the examples in.
    std::os::unix::fs::symlink(root().join("examples"), scratch.join("examples"))
        .expect("a symlink");
    fs::write(scratch.join("kustomization.yaml"), kustomization).expect("a kustomization");
    let output = Command::new("kubectl")
        .arg("kustomize")
        .arg(&scratch)
        .output()
        .expect("kubectl runs");
    let _ = fs::remove_dir_all(&scratch);
    if !output.status.success() {
        return Err(format!(
            "kubectl kustomize of\n{kustomization}: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(yaml_documents(
        "kustomize output",
        &String::from_utf8_lossy(&output.stdout),
    ))
}

fn named<'a>(built: &'a [Value], kind: &str, name: &str) -> Option<&'a Value> {
    built
        .iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
}

fn policies(built: &[Value]) -> Vec<&Value> {
    built
        .iter()
        .filter(|d| d["kind"] == "ClusterAdmissionPolicy")
        .collect()
}

/// Every policy of `built` runs where `placement` says, the guards ask about its account, and,
/// on a PolicyServer of the build, that server runs as the account the bindings name.
fn check_placement(built: &[Value], placement: &Placement, what: &str) {
    assert!(
        built.iter().all(|d| d["kind"] != "ConfigMap"),
        "{what}: the placement object is local to kustomize and never applied"
    );
    for policy in policies(built) {
        let name = str_at(policy, "/metadata/name", what);
        assert_eq!(
            policy["spec"]["policyServer"], placement.server,
            "{what}: {name} spec.policyServer"
        );
        if policy["spec"]["mutating"] == false {
            assert_eq!(
                policy["spec"]["settings"]["policyServerServiceAccount"],
                placement.asked_account(),
                "{what}: {name} settings.policyServerServiceAccount"
            );
        }
    }
    let mut bindings = 0;
    for binding in built.iter().filter(|d| {
        d["kind"] == "ClusterRoleBinding"
            && d["metadata"]["labels"]["app.kubernetes.io/name"] == "capi-template-guard"
    }) {
        bindings += 1;
        assert_eq!(
            binding["subjects"],
            serde_json::json!([placement.subject()]),
            "{what}: the subjects of {}",
            binding["metadata"]["name"]
        );
    }
    match named(built, "PolicyServer", placement.server) {
        Some(server) => {
            assert_eq!(
                server["spec"]["serviceAccountName"], placement.account,
                "{what}: the PolicyServer's account"
            );
            let account = named(built, "ServiceAccount", placement.account)
                .unwrap_or_else(|| panic!("{what}: no ServiceAccount {}", placement.account));
            assert_eq!(
                account["metadata"]["namespace"], placement.namespace,
                "{what}: the PolicyServer's account"
            );
            assert!(
                named(built, "ClusterRoleBinding", ACCESS_REVIEW).is_some(),
                "{what}: the PolicyServer's account may create SubjectAccessReviews"
            );
            assert_eq!(
                server["spec"]["image"],
                yaml_file("examples/placement/placement.yaml")["data"]["policyServerImage"],
                "{what}: the PolicyServer's image is the placement's"
            );
        }
        None => {
            assert_eq!(
                placement.server, "default",
                "{what}: the PolicyServer is not built"
            );
            assert!(
                built.iter().all(|d| d["kind"] != "PolicyServer"),
                "{what}: a PolicyServer nothing runs on"
            );
        }
    }
    // The policies come with their RBAC (examples/); examples/cleanup writes the main guard again
    // after them, without it.
    if named(
        built,
        "ClusterAdmissionPolicy",
        "capi-template-guard-metal3machine-intent",
    )
    .is_some()
    {
        assert!(
            named(built, "ClusterRoleBinding", READER).is_some() && bindings > 0,
            "{what}: no binding of {READER} to the policy server's account"
        );
    }
}

/// Every order of `items`.
pub(super) fn orders<'a>(items: &[&'a str]) -> Vec<Vec<&'a str>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for (i, first) in items.iter().enumerate() {
        let mut rest = items.to_vec();
        rest.remove(i);
        for mut order in orders(&rest) {
            order.insert(0, first);
            out.push(order);
        }
    }
    out
}

/// Everything the examples install, every component included (the alerts' names, alerts.rs);
/// None without kubectl.
pub(super) fn build_everything() -> Option<Vec<Value>> {
    kubectl().then(|| build(&["examples"], &[SERVER, CLEANUP, "examples/cleanup/helm"]))
}

/// The names of the policies of a build, sorted.
fn policy_names(built: &[Value]) -> Vec<String> {
    let mut names: Vec<String> = policies(built)
        .iter()
        .map(|p| str_at(p, "/metadata/name", "a policy").to_string())
        .collect();
    names.sort();
    names
}

#[rstest::rstest]
#[case::default_server(&[])]
#[case::dedicated_server(&[SERVER])]
#[case::rancher(&[RANCHER])]
#[case::dedicated_server_in_rancher(&[SERVER, RANCHER])]
fn every_policy_runs_where_the_placement_says(#[case] placement_components: &[&str]) {
    if !kubectl() {
        return;
    }
    let placement = Placement::of(placement_components);
    let main = [
        "capi-template-guard",
        "capi-template-guard-metal3machine-intent",
    ];

    // template-cleanup left out, then included, in every order of the components
    let built = build(&["examples"], placement_components);
    check_placement(&built, &placement, &format!("{placement_components:?}"));
    assert_eq!(policy_names(&built), main);
    let mut with_cleanup = placement_components.to_vec();
    with_cleanup.push(CLEANUP);
    for order in orders(&with_cleanup) {
        let built = build(&["examples"], &order);
        let what = format!("examples with components {order:?}");
        check_placement(&built, &placement, &what);
        assert_eq!(
            policy_names(&built),
            [main[0], "capi-template-guard-cleanup", main[1]],
            "{what}"
        );
    }

    // template-cleanup applied later (with the main guard again), with the same components, in
    // every order
    for order in orders(placement_components) {
        let built = build(&["examples/cleanup"], &order);
        let what = format!("examples/cleanup with components {order:?}");
        check_placement(&built, &placement, &what);
        assert_eq!(
            policy_names(&built),
            [main[0], "capi-template-guard-cleanup"],
            "{what}"
        );
    }
}

/// The directories themselves, as `kubectl apply -k` builds them: the default PolicyServer.
#[rstest::rstest]
#[case::policies("examples", 2)]
#[case::cleanup("examples/cleanup", 2)]
fn the_directories_run_on_the_default_policy_server(#[case] dir: &str, #[case] count: usize) {
    if !kubectl() {
        return;
    }
    let output = Command::new("kubectl")
        .args(["kustomize", dir])
        .current_dir(root())
        .output()
        .expect("kubectl runs");
    assert!(
        output.status.success(),
        "kubectl kustomize {dir}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let built = yaml_documents("kustomize output", &String::from_utf8_lossy(&output.stdout));
    assert_eq!(policies(&built).len(), count, "{dir}");
    check_placement(&built, &Placement::of(&[]), dir);
}

/// template-cleanup's guard is the main guard with another name, label, protect mode and the one
/// condition that selects template-cleanup's service account; the main guard's
/// `not-capi-template-cleanup` leaves it exactly that account, in its namespace; everything else
/// is the main guard's.
#[test]
fn the_cleanup_guard_is_the_main_guard_with_its_own_condition() {
    if !kubectl() {
        return;
    }
    let built = build(&["examples"], &[SERVER, CLEANUP]);
    let main =
        named(&built, "ClusterAdmissionPolicy", "capi-template-guard").expect("the main guard");
    let cleanup = named(
        &built,
        "ClusterAdmissionPolicy",
        "capi-template-guard-cleanup",
    )
    .expect("template-cleanup's guard");
    assert_eq!(cleanup["spec"]["mode"], "protect");
    let squash = |s: &Value| {
        s.as_str()
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let conditions = seq_at(cleanup, "/spec/matchConditions", "template-cleanup's guard");
    assert_eq!(conditions.len(), 1, "{conditions:?}");
    assert_eq!(conditions[0]["name"], "only-capi-template-cleanup");
    let excluded = seq_at(main, "/spec/matchConditions", "the main guard")
        .iter()
        .find(|c| c["name"] == "not-capi-template-cleanup")
        .expect("the main guard leaves template-cleanup's DELETEs to its own guard");
    let account = named(&built, "ServiceAccount", "capi-template-cleanup").expect("its account");
    assert_eq!(
        squash(&excluded["expression"]),
        format!(
            "request.userInfo.username != 'system:serviceaccount:{}:capi-template-cleanup'",
            str_at(account, "/metadata/namespace", "template-cleanup's account")
        )
    );
    let label = "capi-template-guard.kubewarden.io/guard";
    assert_eq!(main["metadata"]["labels"][label], "main");
    assert_eq!(cleanup["metadata"]["labels"][label], "cleanup");
    let without = |policy: &Value| {
        let mut policy = policy.clone();
        policy["metadata"]["labels"][label] = Value::Null;
        policy["metadata"]["name"] = Value::Null;
        policy["spec"]["mode"] = Value::Null;
        policy["spec"]["matchConditions"] = Value::Null;
        policy
    };
    assert_eq!(without(cleanup), without(main));
}

#[test]
fn every_order_is_built() {
    assert_eq!(orders(&["a", "b", "c"]).len(), 6);
    assert_eq!(orders(&[]), vec![Vec::<&str>::new()]);
}

/// The dedicated PolicyServer's image is set in one place, the placement's policyServerImage:
/// merged from a kustomization of the user's, it reaches the PolicyServer.
#[test]
fn the_policy_servers_image_follows_the_placement() {
    if !kubectl() {
        return;
    }
    let placement = yaml_file("examples/placement/placement.yaml");
    let image = str_at(&placement, "/data/policyServerImage", "the placement");
    let chart = image
        .rsplit_once(':')
        .map(|(path, _)| path)
        .expect("an image with a tag");
    assert_eq!(
        chart, "ghcr.io/kubewarden/adm-controller/policy-server",
        "the path of the admission-controller chart's policy-server image"
    );
    let built = build(&["examples"], &[SERVER]);
    let server = named(&built, "PolicyServer", "capi-template-guard").expect("the PolicyServer");
    assert_eq!(server["spec"]["image"], image);
    let file = "examples/policy-server/policy-server.yaml";
    let written = yaml_documents(file, &read(file))
        .into_iter()
        .find(|d| d["kind"] == "PolicyServer")
        .expect("the PolicyServer");
    assert_eq!(
        written["spec"]["image"], image,
        "{file}: the image kustomize replaces is the placement's, so that the file alone agrees"
    );
}
