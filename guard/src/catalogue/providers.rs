//! The provider table: every Cluster API provider's template resources, one row per provider
//! and group. The shipped rules are written from it (`make manifests`: xtask/src/manifests.rs
//! writes the marked blocks of metadata.yml and the examples), so a new provider is one row here.
//! The list follows Cluster API's provider registry (cluster-api v1.14.0
//! `cmd/clusterctl/client/config/providers_client.go`) and each provider's CRDs; docs/providers.md
//! names them. Webhook rules take exact plural names: every plural here must be one the guard
//! recognises (`template_class_of_plural`, a unit test checks it).

use super::*;

/// One provider's template resources in one API group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Provider {
    pub name: &'static str,
    pub group: &'static str,
    /// The plurals of its template kinds, as the API serves them.
    pub templates: &'static [&'static str],
}

const fn provider(
    name: &'static str,
    group: &'static str,
    templates: &'static [&'static str],
) -> Provider {
    Provider {
        name,
        group,
        templates,
    }
}

/// Every provider's templates, by group (infrastructure, vSphere's supervisor group, bootstrap,
/// control plane), then provider.
pub const PROVIDERS: &[Provider] = &[
    provider(
        "AWS",
        INFRASTRUCTURE_GROUP,
        &[
            "awsclustertemplates",
            "awsmachinetemplates",
            "awsmanagedclustertemplates",
        ],
    ),
    provider(
        "Azure",
        INFRASTRUCTURE_GROUP,
        &[
            "azureasomanagedclustertemplates",
            "azureasomanagedcontrolplanetemplates",
            "azureasomanagedmachinepooltemplates",
            "azureclustertemplates",
            "azuremachinetemplates",
            "azuremanagedclustertemplates",
            "azuremanagedcontrolplanetemplates",
            "azuremanagedmachinepooltemplates",
        ],
    ),
    provider(
        "Azure Stack HCI",
        INFRASTRUCTURE_GROUP,
        &[
            "azurestackhciclustertemplates",
            "azurestackhcimachinetemplates",
        ],
    ),
    provider(
        "BYOH",
        INFRASTRUCTURE_GROUP,
        &["byoclustertemplates", "byomachinetemplates"],
    ),
    provider(
        "CloudStack",
        INFRASTRUCTURE_GROUP,
        &["cloudstackmachinetemplates"],
    ),
    provider("Cox", INFRASTRUCTURE_GROUP, &["coxmachinetemplates"]),
    provider(
        "Docker",
        INFRASTRUCTURE_GROUP,
        &[
            "devclustertemplates",
            "devmachinepooltemplates",
            "devmachinetemplates",
            "dockerclustertemplates",
            "dockermachinepooltemplates",
            "dockermachinetemplates",
        ],
    ),
    provider(
        "DigitalOcean",
        INFRASTRUCTURE_GROUP,
        &["doclustertemplates", "domachinetemplates"],
    ),
    provider(
        "GCP",
        INFRASTRUCTURE_GROUP,
        &[
            "gcpclustertemplates",
            "gcpmachinetemplates",
            "gcpmanagedclustertemplates",
            "gcpmanagedcontrolplanetemplates",
            "gcpmanagedmachinepooltemplates",
        ],
    ),
    provider(
        "Harvester",
        INFRASTRUCTURE_GROUP,
        &["harvesterclustertemplates", "harvestermachinetemplates"],
    ),
    provider(
        "Hetzner",
        INFRASTRUCTURE_GROUP,
        &[
            "hcloudmachinetemplates",
            "hcloudremediationtemplates",
            "hetznerbaremetalmachinetemplates",
            "hetznerbaremetalremediationtemplates",
            "hetznerclustertemplates",
        ],
    ),
    provider(
        "Hivelocity",
        INFRASTRUCTURE_GROUP,
        &[
            "hivelocityclustertemplates",
            "hivelocitymachinetemplates",
            "hivelocityremediationtemplates",
        ],
    ),
    provider(
        "IBM Cloud",
        INFRASTRUCTURE_GROUP,
        &[
            "ibmpowervsclustertemplates",
            "ibmpowervsmachinetemplates",
            "ibmvpcclustertemplates",
            "ibmvpcmachinetemplates",
        ],
    ),
    provider(
        "IONOS Cloud",
        INFRASTRUCTURE_GROUP,
        &["ionoscloudclustertemplates", "ionoscloudmachinetemplates"],
    ),
    provider(
        "Kairos Fleet",
        INFRASTRUCTURE_GROUP,
        &["kairosfleetclustertemplates", "kairosfleetmachinetemplates"],
    ),
    provider("KubeKey", INFRASTRUCTURE_GROUP, &["kkmachinetemplates"]),
    provider(
        "Kubemark",
        INFRASTRUCTURE_GROUP,
        &["kubemarkmachinetemplates"],
    ),
    provider(
        "KubeSwift",
        INFRASTRUCTURE_GROUP,
        &["kubeswiftclustertemplates", "kubeswiftmachinetemplates"],
    ),
    provider(
        "KubeVirt",
        INFRASTRUCTURE_GROUP,
        &["kubevirtclustertemplates", "kubevirtmachinetemplates"],
    ),
    provider(
        "Linode",
        INFRASTRUCTURE_GROUP,
        &["linodeclustertemplates", "linodemachinetemplates"],
    ),
    provider(
        "Incus/LXC",
        INFRASTRUCTURE_GROUP,
        &["lxcclustertemplates", "lxcmachinetemplates"],
    ),
    provider("MAAS", INFRASTRUCTURE_GROUP, &["maasmachinetemplates"]),
    provider(
        "Metal3",
        INFRASTRUCTURE_GROUP,
        &[
            "metal3clustertemplates",
            "metal3datatemplates",
            "metal3machinetemplates",
            "metal3remediationtemplates",
        ],
    ),
    provider("Sidero", INFRASTRUCTURE_GROUP, &["metalmachinetemplates"]),
    provider(
        "metal-stack",
        INFRASTRUCTURE_GROUP,
        &["metalstackmachinetemplates"],
    ),
    provider(
        "MicroVM",
        INFRASTRUCTURE_GROUP,
        &["microvmmachinetemplates"],
    ),
    provider(
        "Nutanix",
        INFRASTRUCTURE_GROUP,
        &["nutanixclustertemplates", "nutanixmachinetemplates"],
    ),
    provider(
        "Oracle (OCI)",
        INFRASTRUCTURE_GROUP,
        &[
            "ociclustertemplates",
            "ocimachinetemplates",
            "ocimanagedclustertemplates",
            "ocimanagedcontrolplanetemplates",
            "ocimanagedmachinepooltemplates",
        ],
    ),
    provider("OpenNebula", INFRASTRUCTURE_GROUP, &["onemachinetemplates"]),
    provider(
        "OpenStack",
        INFRASTRUCTURE_GROUP,
        &["openstackclustertemplates", "openstackmachinetemplates"],
    ),
    provider(
        "Outscale",
        INFRASTRUCTURE_GROUP,
        &["oscclustertemplates", "oscmachinetemplates"],
    ),
    provider("Oxide", INFRASTRUCTURE_GROUP, &["oxidemachinetemplates"]),
    provider("Packet", INFRASTRUCTURE_GROUP, &["packetmachinetemplates"]),
    provider(
        "Proxmox",
        INFRASTRUCTURE_GROUP,
        &["proxmoxclustertemplates", "proxmoxmachinetemplates"],
    ),
    provider(
        "k0smotron remote machines",
        INFRASTRUCTURE_GROUP,
        &["remoteclustertemplates", "remotemachinetemplates"],
    ),
    provider(
        "Scaleway",
        INFRASTRUCTURE_GROUP,
        &["scalewayclustertemplates", "scalewaymachinetemplates"],
    ),
    provider(
        "Tinkerbell",
        INFRASTRUCTURE_GROUP,
        &["tinkerbellmachinetemplates"],
    ),
    provider(
        "Cloud Director",
        INFRASTRUCTURE_GROUP,
        &["vcdclustertemplates", "vcdmachinetemplates"],
    ),
    provider(
        "Virtink",
        INFRASTRUCTURE_GROUP,
        &["virtinkclustertemplates", "virtinkmachinetemplates"],
    ),
    provider("vcluster", INFRASTRUCTURE_GROUP, &["vnodemachinetemplates"]),
    provider(
        "vSphere",
        INFRASTRUCTURE_GROUP,
        &["vsphereclustertemplates", "vspheremachinetemplates"],
    ),
    provider(
        "Vultr",
        INFRASTRUCTURE_GROUP,
        &["vultrclustertemplates", "vultrmachinetemplates"],
    ),
    provider(
        "vSphere supervisor",
        "vmware.infrastructure.cluster.x-k8s.io",
        &["vsphereclustertemplates", "vspheremachinetemplates"],
    ),
    provider(
        "Canonical Kubernetes",
        BOOTSTRAP_GROUP,
        &["ck8sconfigtemplates"],
    ),
    provider("EKS", BOOTSTRAP_GROUP, &["eksconfigtemplates"]),
    provider("GKE", BOOTSTRAP_GROUP, &["gkeconfigtemplates"]),
    provider("k0s", BOOTSTRAP_GROUP, &["k0sworkerconfigtemplates"]),
    provider("Kairos", BOOTSTRAP_GROUP, &["kairosconfigtemplates"]),
    provider("k3s", BOOTSTRAP_GROUP, &["kthreesconfigtemplates"]),
    provider("Kubeadm", BOOTSTRAP_GROUP, &["kubeadmconfigtemplates"]),
    provider("MicroK8s", BOOTSTRAP_GROUP, &["microk8sconfigtemplates"]),
    provider("nodeadm", BOOTSTRAP_GROUP, &["nodeadmconfigtemplates"]),
    provider("OCNE", BOOTSTRAP_GROUP, &["ocneconfigtemplates"]),
    provider("RKE2", BOOTSTRAP_GROUP, &["rke2configtemplates"]),
    provider("Talos", BOOTSTRAP_GROUP, &["talosconfigtemplates"]),
    provider(
        "AWS managed",
        CONTROL_PLANE_GROUP,
        &["awsmanagedcontrolplanetemplates"],
    ),
    provider(
        "Canonical Kubernetes",
        CONTROL_PLANE_GROUP,
        &["ck8scontrolplanetemplates"],
    ),
    provider(
        "hosted control planes",
        CONTROL_PLANE_GROUP,
        &["hostedcontrolplanetemplates"],
    ),
    provider("k0s", CONTROL_PLANE_GROUP, &["k0scontrolplanetemplates"]),
    provider(
        "k0smotron",
        CONTROL_PLANE_GROUP,
        &["k0smotroncontrolplanetemplates"],
    ),
    provider(
        "Kairos",
        CONTROL_PLANE_GROUP,
        &["kairoscontrolplanetemplates"],
    ),
    provider(
        "Kamaji",
        CONTROL_PLANE_GROUP,
        &["kamajicontrolplanetemplates"],
    ),
    provider(
        "k3s",
        CONTROL_PLANE_GROUP,
        &["kthreescontrolplanetemplates"],
    ),
    provider(
        "Kubeadm",
        CONTROL_PLANE_GROUP,
        &["kubeadmcontrolplanetemplates"],
    ),
    provider("OCNE", CONTROL_PLANE_GROUP, &["ocnecontrolplanetemplates"]),
    provider("RKE2", CONTROL_PLANE_GROUP, &["rke2controlplanetemplates"]),
];
