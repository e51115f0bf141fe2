//! A MachineDeployment of another namespace that names one of this namespace's templates, on
//! Cluster API 1.10 (v1beta1 only): its controller reads the template at the namespace the
//! reference gives (`reconcileExternalTemplateReference`, external.Get of `ref.Namespace`,
//! internal/controllers/machinedeployment/machinedeployment_controller.go@v1.10.9) whenever it
//! reconciles, and a MachineSet of it clones its machines from there. The API server holds it
//! as v1beta1 JSON in `edge-east`; the template is applied by an operator with the cleanup label,
//! so template-cleanup collects it once the guard lets it go.

use anyhow::Result;
use serde_json::json;

use super::world::{Actor, World};
use crate::apiserver::objects::*;
use crate::host::lock;

/// Where the MachineDeployment lives, and its name.
pub const REMOTE: (&str, &str) = ("edge-east", "edge-b-md0");

/// Its controller: reads the template every 20 to 40 minutes.
#[derive(Debug)]
pub struct RemoteDeployment(pub Ref);

impl Actor for RemoteDeployment {
    fn step(&mut self, w: &mut World) -> Result<Option<u64>> {
        let (namespace, name) = REMOTE;
        w.fetch(&format!("MachineDeployment {namespace}/{name}"), &self.0);
        Ok(Some(w.rng.range(1200, 2400)))
    }
}

impl World<'_> {
    /// The template, and the MachineDeployment of `edge-east` that names it.
    pub fn build_remote(&mut self) -> Result<Ref> {
        let template = self.operator_template(Kind::Metal3MachineTemplate, "edge-b-workers", false);
        let (namespace, name) = REMOTE;
        let md = json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
            "metadata": {"name": name, "namespace": namespace,
                "labels": {CLUSTER_NAME_LABEL: "edge-b"}},
            "spec": {"clusterName": "edge-b", "replicas": 1, "template": {"spec": {
                "clusterName": "edge-b",
                "infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                    "kind": "Metal3MachineTemplate", "name": template.name,
                    "namespace": NAMESPACE}}}}});
        lock(&self.api).hold(md).map_err(anyhow::Error::msg)?;
        Ok(template)
    }
}

#[cfg(test)]
mod tests {
    use super::super::sim::testing::{run, scenario};

    /// Accepting the template's deletion breaks the MachineDeployment of the other namespace;
    /// refusing it costs it nothing.
    #[test]
    fn a_machine_deployment_of_another_namespace_needs_its_template() {
        let seed = (0..200)
            .find(|s| scenario(*s).remote_md)
            .expect("a seed with a MachineDeployment in another namespace");
        let (kept, _) = run(seed, true);
        assert_eq!(kept.missing, 0);
        let (lost, trace) = run(seed, false);
        assert!(lost.missing > 0, "{trace:#?}");
        assert!(
            trace.iter().any(|e| e.contains("edge-east/edge-b-md0")),
            "{trace:#?}"
        );
    }
}
