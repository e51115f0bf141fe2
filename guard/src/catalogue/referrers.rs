//! The referrer table: every kind that can keep a template, with the fields that name one. Each
//! entry's kind, versions and fields come from the provider's own API types, cited beside it.

use super::*;

/// A control plane (or etcdadm's etcd cluster): keeps its current machine template until it is
/// gone, also while it and its Cluster are being deleted. KubeadmControlPlane 1.12.0 to 1.12.5
/// hangs in deletion without it (cluster-api issue 13536, fixed by PR 13558 in 1.12.6 and 1.13.0,
/// `controlplane/kubeadm/internal/filters.go:208-211`@v1.12.6); CAPRKE2 0.25.0 the same
/// (cluster-api-provider-rke2 issue 1004, PR 1007). Nothing waits for a control plane's template
/// to be deleted, so keeping it cannot deadlock; the garbage collector deletes it once the
/// Cluster is gone.
const fn control_plane(
    kind: &'static str,
    plural: &'static str,
    group: &'static str,
    versions: &'static [&'static str],
    setting: Option<VersionSetting>,
    fields: &'static [&'static str],
) -> ReferrerKind {
    ReferrerKind {
        resource: resource(kind, plural, group, versions, setting, &META),
        fields,
        implied: &[],
        cloned_from: false,
        creates_machines: true,
        keeps: &[TemplateClass::Machine],
        only_node_reuse: false,
        while_deleting: WhileDeleting::Keeps,
        kept_through_cluster_deletion: true,
        by_revision: false,
        reference_namespace_only: false,
        follows_reference_namespace_at: &[],
        advice: Advice::Rollout,
    }
}

/// Health checks name remediation templates; nothing waits for one to be deleted. A
/// MachineHealthCheck has no finalizer and its reconcile no deletion branch, so one being deleted
/// is gone at once and keeps nothing.
const fn health_check(resource: Resource, fields: &'static [&'static str]) -> ReferrerKind {
    ReferrerKind {
        resource,
        fields,
        implied: &[],
        cloned_from: false,
        creates_machines: false,
        keeps: &[TemplateClass::Remediation],
        only_node_reuse: false,
        while_deleting: WhileDeleting::KeepsNothing,
        kept_through_cluster_deletion: false,
        by_revision: false,
        reference_namespace_only: false,
        follows_reference_namespace_at: &[],
        advice: Advice::HealthCheck,
    }
}

/// MachineDeployment, MachineSet: the templates of their machines.
const MACHINE_SET_FIELDS: &[&str] = &[
    "spec.template.spec.bootstrap.configRef",
    "spec.template.spec.infrastructureRef",
];

/// Cluster API 1.9 and 1.10 (v1beta1 only) read a MachineDeployment's and a MachineSet's
/// templates at the namespace their references give: `reconcileExternalTemplateReference`
/// defaults an empty one to the Cluster's, then `external.Get` reads `ref.Namespace`
/// (internal/controllers/machinedeployment/machinedeployment_controller.go and
/// internal/controllers/machineset/machineset_controller.go@v1.10.9, controllers/external/util.go
/// @v1.9.0), and the MachineSet clones its machines from there; their webhooks only default the
/// namespace (internal/webhooks/machinedeployment.go, machineset.go@v1.10.9). 1.8 and older, at
/// the same v1beta1, read the Cluster's namespace; from 1.11 the v1beta2 references carry none.
const CAPI_REFERENCE_NAMESPACE: &[&str] = &[V1BETA1];

/// Every referrer kind, in the order lookups run and messages list them.
pub static REFERRERS: [ReferrerKind; 21] = [
    ReferrerKind {
        resource: resource(
            "MachineDeployment",
            "machinedeployments",
            CAPI_GROUP,
            CAPI_VERSIONS,
            Some(VersionSetting::Capi),
            &[
                "metadata.annotations",
                "metadata.deletionTimestamp",
                "metadata.labels",
                "metadata.name",
                "spec.clusterName",
            ],
        ),
        fields: MACHINE_SET_FIELDS,
        implied: &[],
        cloned_from: false,
        creates_machines: false,
        keeps: &[TemplateClass::Machine, TemplateClass::Bootstrap],
        only_node_reuse: false,
        while_deleting: WhileDeleting::KeepsNothing,
        kept_through_cluster_deletion: false,
        by_revision: false,
        reference_namespace_only: false,
        follows_reference_namespace_at: CAPI_REFERENCE_NAMESPACE,
        advice: Advice::Rollout,
    },
    // A MachineSet being deleted keeps its finalizer until its machines are gone, and CAPM3 >= 1.13
    // reads node reuse from the owning MachineSet's infrastructureRef when it deletes a
    // Metal3Machine (cluster-api-provider-metal3 PR 3168, `baremetal/metal3machine_manager.go`).
    // CAPI refreshes `status.replicas` while the MachineSet is being deleted.
    ReferrerKind {
        resource: resource(
            "MachineSet",
            "machinesets",
            CAPI_GROUP,
            CAPI_VERSIONS,
            Some(VersionSetting::Capi),
            &[
                "metadata.annotations",
                "metadata.deletionTimestamp",
                "metadata.labels",
                "metadata.name",
                "spec.clusterName",
                "spec.replicas",
                "status.replicas",
            ],
        ),
        fields: MACHINE_SET_FIELDS,
        implied: &[],
        cloned_from: false,
        creates_machines: true,
        keeps: &[TemplateClass::Machine, TemplateClass::Bootstrap],
        only_node_reuse: false,
        while_deleting: WhileDeleting::KeepsNodeReuseWhileItHasMachines,
        kept_through_cluster_deletion: false,
        by_revision: true,
        reference_namespace_only: false,
        follows_reference_namespace_at: CAPI_REFERENCE_NAMESPACE,
        advice: Advice::Rollout,
    },
    control_plane(
        "KubeadmControlPlane",
        "kubeadmcontrolplanes",
        CONTROL_PLANE_GROUP,
        CAPI_VERSIONS,
        Some(VersionSetting::ControlPlane),
        &[
            "spec.machineTemplate.infrastructureRef",
            "spec.machineTemplate.spec.infrastructureRef",
        ],
    ),
    // v1beta1 still has the deprecated `spec.infrastructureRef`: both are checked.
    control_plane(
        "RKE2ControlPlane",
        "rke2controlplanes",
        CONTROL_PLANE_GROUP,
        CAPI_VERSIONS,
        Some(VersionSetting::ControlPlane),
        &[
            "spec.infrastructureRef",
            "spec.machineTemplate.infrastructureRef",
            "spec.machineTemplate.spec.infrastructureRef",
        ],
    ),
    // Each control plane's kind, versions and field as its own API types give them.
    // siderolabs/cluster-api-control-plane-provider-talos@v0.5.12 api/v1alpha3/taloscontrolplane_types.go.
    // From 0.5.8 (built on Cluster API 1.9) its controller reads the template at the reference's
    // namespace on every reconcile (`reconcileExternalReference`,
    // controllers/taloscontrolplane_controller.go@v0.5.12); the webhook only fills an empty one.
    // Older releases read the Cluster's namespace.
    ReferrerKind {
        follows_reference_namespace_at: &["v1alpha3"],
        ..control_plane(
            "TalosControlPlane",
            "taloscontrolplanes",
            CONTROL_PLANE_GROUP,
            &["v1alpha3"],
            None,
            &["spec.infrastructureTemplate"],
        )
    },
    // canonical/cluster-api-control-plane-provider-microk8s@v0.6.11 api/v1beta1/microk8scontrolplane_types.go
    control_plane(
        "MicroK8sControlPlane",
        "microk8scontrolplanes",
        CONTROL_PLANE_GROUP,
        &[V1BETA1],
        None,
        &["spec.machineTemplate.infrastructureTemplate"],
    ),
    // canonical/cluster-api-k8s@v0.6.1 controlplane/api/v1beta2/ck8scontrolplane_types.go (the
    // provider's own v1beta2, an ObjectReference under `infrastructureTemplate`)
    control_plane(
        "CK8sControlPlane",
        "ck8scontrolplanes",
        CONTROL_PLANE_GROUP,
        &[V1BETA2],
        None,
        &["spec.machineTemplate.infrastructureTemplate"],
    ),
    // k0sproject/k0smotron@v2.1.0 api/controlplane/v1beta2/k0s_types.go (v1beta1 reuses the type)
    control_plane(
        "K0sControlPlane",
        "k0scontrolplanes",
        CONTROL_PLANE_GROUP,
        &[V1BETA2, V1BETA1],
        None,
        &["spec.machineTemplate.infrastructureRef"],
    ),
    // k3s-io/cluster-api-k3s@v0.3.1 controlplane/api/v1beta1 (top-level `infrastructureTemplate`)
    // and v1beta2 (`machineTemplate.infrastructureRef`) kthreescontrolplane_types.go
    control_plane(
        "KThreesControlPlane",
        "kthreescontrolplanes",
        CONTROL_PLANE_GROUP,
        &[V1BETA2, V1BETA1],
        None,
        &[
            "spec.infrastructureTemplate",
            "spec.machineTemplate.infrastructureRef",
        ],
    ),
    // verrazzano/cluster-api-provider-ocne@v1.7.0 controlplane/ocne/api/v1alpha1/ocne_control_plane_types.go
    control_plane(
        "OCNEControlPlane",
        "ocnecontrolplanes",
        CONTROL_PLANE_GROUP,
        &["v1alpha1"],
        None,
        &["spec.machineTemplate.infrastructureRef"],
    ),
    // kubesphere/kubekey@1ce69e92 controlplane/k3s/api/v1beta1/k3scontrolplane_types.go (KubeKey's
    // k3s control plane, in clusterctl's provider registry: cluster-api v1.14.0
    // cmd/clusterctl/client/config/providers_client.go)
    control_plane(
        "K3sControlPlane",
        "k3scontrolplanes",
        CONTROL_PLANE_GROUP,
        &[V1BETA1],
        None,
        &["spec.machineTemplate.infrastructureRef"],
    ),
    // openshift-assisted/cluster-api-provider-openshift-assisted@24cdcec8
    // controlplane/api/v1alpha3 (stored; a ContractVersionedObjectReference) and v1alpha2 (an
    // ObjectReference) openshiftassistedcontrolplane_types.go:37
    control_plane(
        "OpenshiftAssistedControlPlane",
        "openshiftassistedcontrolplanes",
        CONTROL_PLANE_GROUP,
        &["v1alpha3", "v1alpha2"],
        None,
        &["spec.machineTemplate.infrastructureRef"],
    ),
    // kairos-io/cluster-api-provider-kairos@v0.1.0-alpha.2 api/controlplane/v1beta2/
    // kairoscontrolplane_types.go: its machine template and its own bootstrap template. Its
    // `KairosConfigTemplateReference` makes apiVersion and kind optional and the examples write a
    // name only; the controller reads it as a KairosConfigTemplate, so the kind is implied. The
    // machine template is read at the namespace its reference gives (`getTemplateObject`,
    // internal/infrastructure/clone.go@46551fa), and only there: no Kairos release reads the
    // control plane's own namespace when the reference names another; nothing defaults or
    // validates it.
    ReferrerKind {
        keeps: &[TemplateClass::Machine, TemplateClass::Bootstrap],
        follows_reference_namespace_at: &[V1BETA2],
        reference_namespace_only: true,
        implied: &[Implied {
            field: "spec.kairosConfigTemplate",
            group: BOOTSTRAP_GROUP,
            kind: "KairosConfigTemplate",
        }],
        ..control_plane(
            "KairosControlPlane",
            "kairoscontrolplanes",
            CONTROL_PLANE_GROUP,
            &[V1BETA2],
            None,
            &[
                "spec.kairosConfigTemplate",
                "spec.machineTemplate.infrastructureRef",
            ],
        )
    },
    // aws/etcdadm-controller@v1.0.28 api/v1beta1 and api/v1alpha3 etcdadmcluster_types.go
    control_plane(
        "EtcdadmCluster",
        "etcdadmclusters",
        ETCD_GROUP,
        &[V1BETA1, "v1alpha3"],
        None,
        &["spec.infrastructureTemplate"],
    ),
    ReferrerKind {
        resource: resource(
            "ClusterClass",
            "clusterclasses",
            CAPI_GROUP,
            CAPI_VERSIONS,
            Some(VersionSetting::Capi),
            &META,
        ),
        // v1beta1 `ref` and `machineHealthCheck`, v1beta2 `templateRef` and `healthCheck`.
        fields: &[
            "spec.controlPlane.healthCheck.remediation.templateRef",
            "spec.controlPlane.machineHealthCheck.remediationTemplate",
            "spec.controlPlane.machineInfrastructure.ref",
            "spec.controlPlane.machineInfrastructure.templateRef",
            "spec.controlPlane.ref",
            "spec.controlPlane.templateRef",
            "spec.infrastructure.ref",
            "spec.infrastructure.templateRef",
            "spec.workers.machineDeployments[class].bootstrap.templateRef",
            "spec.workers.machineDeployments[class].healthCheck.remediation.templateRef",
            "spec.workers.machineDeployments[class].infrastructure.templateRef",
            "spec.workers.machineDeployments[class].machineHealthCheck.remediationTemplate",
            "spec.workers.machineDeployments[class].template.bootstrap.ref",
            "spec.workers.machineDeployments[class].template.infrastructure.ref",
            "spec.workers.machinePools[class].bootstrap.templateRef",
            "spec.workers.machinePools[class].infrastructure.templateRef",
            "spec.workers.machinePools[class].template.bootstrap.ref",
            "spec.workers.machinePools[class].template.infrastructure.ref",
        ],
        implied: &[],
        cloned_from: false,
        creates_machines: false,
        keeps: &[
            TemplateClass::Machine,
            TemplateClass::MachinePool,
            TemplateClass::Cluster,
            TemplateClass::ControlPlane,
            TemplateClass::Bootstrap,
            TemplateClass::Remediation,
        ],
        only_node_reuse: false,
        while_deleting: WhileDeleting::KeepsNothing,
        kept_through_cluster_deletion: false,
        by_revision: false,
        reference_namespace_only: false,
        follows_reference_namespace_at: &[],
        advice: Advice::ClusterClass,
    },
    // Without its remediation template the MachineHealthCheck controller stops remediating every
    // unhealthy machine of the check: `return errList` at the first target (cluster-api
    // `internal/controllers/machinehealthcheck/machinehealthcheck_controller.go:437-448`@v1.12.0,
    // patchUnhealthyTargets).
    health_check(
        resource(
            "MachineHealthCheck",
            "machinehealthchecks",
            CAPI_GROUP,
            CAPI_VERSIONS,
            Some(VersionSetting::Capi),
            &[
                "metadata.deletionTimestamp",
                "metadata.labels",
                "metadata.name",
                "spec.clusterName",
            ],
        ),
        &["spec.remediation.templateRef", "spec.remediationTemplate"],
    ),
    // A Cluster's topology overrides its class's health checks; the topology controller resolves
    // their templates in the Cluster's namespace.
    health_check(
        CLUSTER,
        &[
            "spec.topology.controlPlane.healthCheck.remediation.templateRef",
            "spec.topology.controlPlane.machineHealthCheck.remediationTemplate",
            "spec.topology.workers.machineDeployments[name].healthCheck.remediation.templateRef",
            "spec.topology.workers.machineDeployments[name].machineHealthCheck.remediationTemplate",
        ],
    ),
    // CAPM3 <= 1.12 reads node reuse from the template named by the machine's cloned-from
    // annotation when it deletes the machine; the machine's deletion never waits for the template.
    // Its `spec.dataTemplate` names the Metal3DataTemplate its claim is rendered from
    // (cluster-api-provider-metal3@v1.14.0-rc.0 api/v1beta1/metal3machine_types.go, an
    // ObjectReference; api/v1beta2/metal3machine_types.go, a Metal3ObjectRef: name and namespace).
    ReferrerKind {
        resource: METAL3_MACHINE,
        fields: &["spec.dataTemplate"],
        implied: DATA_TEMPLATE_IMPLIED_AT_DATA_TEMPLATE,
        cloned_from: true,
        creates_machines: false,
        keeps: &[TemplateClass::Machine, TemplateClass::Data],
        only_node_reuse: true,
        while_deleting: WhileDeleting::Keeps,
        kept_through_cluster_deletion: false,
        by_revision: false,
        reference_namespace_only: false,
        follows_reference_namespace_at: &[],
        advice: Advice::NodeReuse,
    },
    // The Metal3DataTemplate's keepers. CAPM3 gives a data template only a finalizer: one being
    // deleted still renders the claims it has, and drops its finalizer once no claim or data names
    // it (cluster-api-provider-metal3@v1.14.0-rc.0 controllers/metal3datatemplate_controller.go
    // reconcileDelete, lines 158-185; baremetal/metal3datatemplate_manager.go UpdateDatas). A
    // Metal3Machine cloned after that from a Metal3MachineTemplate that names it waits forever
    // ("waiting for Metal3DataTemplate to be available", baremetal/metal3machine_manager.go;
    // sylva-core issue 2820). v1beta1 references are ObjectReferences, v1beta2 ones
    // Metal3ObjectRefs of a name and a namespace (api/v1beta2/common_types.go), so the kind is
    // implied. `failureDomainDataTemplates` is CAPM3 PR 3589 (v1beta2, not merged
    // in v1.14.0-rc.0), read so that it is kept from the first release that has it. Once it is
    // merged, a Metal3Machine not rendered yet also reads its cloned-from Metal3MachineTemplate to
    // pick that data template (overrideDataTemplateForPlacement, PR head 5af9a5c1), which the
    // Metal3Machine entry's `only_node_reuse` does not cover: revisit it then.
    // A Metal3MachineTemplate carries no CAPM3 finalizer, so one being deleted is gone at once
    // unless another finalizer holds it (cluster-api's MachineSet controller does not check a
    // template's deletion, core/reconcilers/machineset/machineset_controller.go@v1.14.0): it keeps nothing
    // then.
    data_user(
        METAL3_MACHINE_TEMPLATE,
        &[
            "spec.failureDomainDataTemplates[failureDomain].dataTemplate",
            "spec.template.spec.dataTemplate",
        ],
        &[
            Implied {
                field: "spec.failureDomainDataTemplates[failureDomain].dataTemplate",
                ..DATA_TEMPLATE
            },
            Implied {
                field: "spec.template.spec.dataTemplate",
                ..DATA_TEMPLATE
            },
        ],
    ),
    // api/v1beta1 and v1beta2 metal3dataclaim_types.go `spec.template`; the template's controller
    // matches claims by that name alone (UpdateDatas).
    data_user(
        METAL3_DATA_CLAIM,
        &["spec.template"],
        DATA_TEMPLATE_IMPLIED_AT_TEMPLATE,
    ),
    // api/v1beta1 and v1beta2 metal3data_types.go `spec.template`.
    data_user(
        METAL3_DATA,
        &["spec.template"],
        DATA_TEMPLATE_IMPLIED_AT_TEMPLATE,
    ),
];

/// What a Metal3 reference to a data template implies when it gives no kind.
const DATA_TEMPLATE: Implied = Implied {
    field: "",
    group: INFRASTRUCTURE_GROUP,
    kind: METAL3_DATA_TEMPLATE,
};

const DATA_TEMPLATE_IMPLIED_AT_DATA_TEMPLATE: &[Implied] = &[Implied {
    field: "spec.dataTemplate",
    ..DATA_TEMPLATE
}];

const DATA_TEMPLATE_IMPLIED_AT_TEMPLATE: &[Implied] = &[Implied {
    field: "spec.template",
    ..DATA_TEMPLATE
}];

/// The keepers of a Metal3DataTemplate but Metal3Machines. Metal3DataClaims and Metal3Datas exist
/// while a Metal3Machine uses the template; one being deleted keeps nothing (the template's own
/// finalizer waits for it).
const fn data_user(
    resource: Resource,
    fields: &'static [&'static str],
    implied: &'static [Implied],
) -> ReferrerKind {
    ReferrerKind {
        resource,
        fields,
        implied,
        cloned_from: false,
        creates_machines: false,
        keeps: &[TemplateClass::Data],
        only_node_reuse: false,
        while_deleting: WhileDeleting::KeepsNothing,
        kept_through_cluster_deletion: false,
        by_revision: false,
        reference_namespace_only: false,
        follows_reference_namespace_at: &[],
        advice: Advice::DataTemplate,
    }
}
