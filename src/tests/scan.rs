//! `validate()` end to end on the scan of kinds the catalogue does not know: kinds declared to
//! name no template are never listed, and a kind the shipped RBAC cannot grant is asked about
//! (`can_i`) before its list.
use super::*;

/// A kind the catalogue does not know, ungranted, fails closed naming the grant and, as its
/// alternative, `kindsNamingNoTemplate`; declared there, it is not listed at all. Kinds known to
/// name no template (teutonet's, the nested provider's) are never listed.
#[test]
fn an_unknown_kind_can_be_declared_to_name_no_template() {
    const CP_GROUP: &str = guard::catalogue::CONTROL_PLANE_GROUP;
    let foo = "controlplane.cluster.x-k8s.io/v1alpha1";
    let installed = |host: FakeHost| {
        empty_v1_namespace(
            host.install_crd(
                CP_GROUP,
                "FooControlPlane",
                "foocontrolplanes",
                &[("v1alpha1", true)],
            )
            .install_crd(
                CP_GROUP,
                "HostedControlPlane",
                "hostedcontrolplanes",
                &[("v1alpha1", true)],
            )
            .install_crd(
                CP_GROUP,
                "NestedControlPlane",
                "nestedcontrolplanes",
                &[("v1alpha4", true)],
            )
            .install_crd(CP_GROUP, "NestedEtcd", "nestedetcds", &[("v1alpha4", true)]),
        )
    };
    let denied = installed(FakeHost::v1beta1_only()).fail_list(foo, "FooControlPlane", "Policy has not been granted access to Kubernetes controlplane.cluster.x-k8s.io/v1alpha1/FooControlPlane resources. The violation has been reported.");
    let message = refusal(run("guard-lookup-failure", json!({}), &denied), 500);
    assert!(
        message.contains("Or, if FooControlPlane names no machine or bootstrap template (a control plane that runs no machines), add \"FooControlPlane.controlplane.cluster.x-k8s.io\" to the policy's kindsNamingNoTemplate setting instead."),
        "{message}"
    );
    let host = installed(FakeHost::v1beta1_only());
    let settings =
        json!({"kindsNamingNoTemplate": ["FooControlPlane.controlplane.cluster.x-k8s.io"]});
    let response = run("guard-lookup-failure", settings, &host);
    assert!(response.accepted, "{:?}", response.message);
    assert!(
        host.calls()
            .iter()
            .all(|c| !["FooControlPlane", "HostedControlPlane", "Nested"]
                .iter()
                .any(|k| c.contains(k))),
        "{:?}",
        host.calls()
    );
}

/// Before listing a kind the shipped RBAC does not grant, the policy asks `can_i`: refused, it
/// fails closed at once, naming the rule to add, and lists nothing (a refused list would never
/// answer on the real host). A kind the shipped RBAC grants at any version (Talos at a future
/// version) is not asked about.
#[test]
fn an_ungranted_scan_is_refused_before_its_list() {
    let foo = "controlplane.cluster.x-k8s.io/v1alpha1";
    let group = guard::catalogue::CONTROL_PLANE_GROUP;
    // A namespace with no objects, in a cluster with FooControlPlane installed.
    let with_foo = || {
        empty_v1_namespace(FakeHost::v1beta1_only().install_crd(
            group,
            "FooControlPlane",
            "foocontrolplanes",
            &[("v1alpha1", true)],
        ))
    };
    let host = empty_v1_namespace(
        FakeHost::v1beta1_only()
            .install_crd(
                group,
                "FooControlPlane",
                "foocontrolplanes",
                &[("v1alpha1", true)],
            )
            .install("TalosControlPlane", &["v1alpha4"]),
    )
    .answer_can_i(
        group,
        "foocontrolplanes",
        Ok(r#"{"allowed":false,"reason":"no RBAC policy matched"}"#),
    )
    .answer_list(
        foo,
        "FooControlPlane",
        &list_of(foo, "FooControlPlane", &[]),
    );
    let settings = json!({"policyServerServiceAccount": "system:serviceaccount:guard:ps"});
    let message = refusal(run("guard-lookup-failure", settings, &host), 500);
    assert!(
        message.contains("failed: system:serviceaccount:guard:ps may not list foocontrolplanes.controlplane.cluster.x-k8s.io in namespace edge-sites, says a SubjectAccessReview (no RBAC policy matched). A list the API server refuses never answers the policy, and the evaluation timeout cannot stop it: it would hold a policy-server worker until the API server gives up on the webhook, and a thread until the RBAC is fixed, so the policy asked first: add a rule with apiGroups [\"controlplane.cluster.x-k8s.io\"], resources [\"foocontrolplanes\"] and verbs [\"get\", \"list\", \"watch\"] to the ClusterRole capi-template-guard-reader"),
        "{message}"
    );
    let calls = host.calls();
    assert!(
        calls.contains(&"can-i list controlplane.cluster.x-k8s.io/foocontrolplanes edge-sites as system:serviceaccount:guard:ps".to_string())
            && !calls.iter().any(|c| c.starts_with("list ") && c.contains("FooControlPlane"))
            && !calls.iter().any(|c| c.contains("taloscontrolplanes")),
        "{calls:?}"
    );
    // A host that cannot answer the question fails closed too (Kubewarden 1.36 without the
    // kubernetes/can_i capability), with the capability's hint.
    let host = with_foo().answer_can_i(group, "foocontrolplanes", Err("Policy has not been granted access to the 'kubernetes/can_i' host capability. The violation has been reported."));
    let message = refusal(run("guard-lookup-failure", json!({}), &host), 500);
    assert!(
        message.contains("kubernetes/can_i are the ones it uses"),
        "{message}"
    );
    // A SubjectAccessReview the API server refuses gets the refusal's hint, with its words.
    let host = with_foo().answer_can_i(group, "foocontrolplanes", Err("Callback evaluation failure: ApiError: subjectaccessreviews.authorization.k8s.io is forbidden: User \"system:serviceaccount:kubewarden:ps\" cannot create resource \"subjectaccessreviews\": Forbidden"));
    let message = refusal(run("guard-lookup-failure", json!({}), &host), 500);
    assert!(
        message.contains("failed: the host could not ask whether system:serviceaccount:kubewarden:policy-server may list foocontrolplanes.controlplane.cluster.x-k8s.io: Callback evaluation failure: ApiError: subjectaccessreviews.authorization.k8s.io is forbidden")
            && message.contains("which needs create on subjectaccessreviews.authorization.k8s.io to ask"),
        "{message}"
    );
}
