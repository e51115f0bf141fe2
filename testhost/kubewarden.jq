# jq definitions the end-to-end scripts put before their programs, for `testhost apiserver`'s state
# (template-cleanup/tests/e2e.sh, tests/sylva/e2e.sh): a ClusterAdmissionPolicy as
# kubewarden-controller v1.36.0-beta.1 leaves it once active, and the ValidatingWebhookConfiguration
# it writes of it (internal/controller/policy_subreconciler_webhook.go: the controller's namespace,
# here `kubewarden`, left out by its namespaceSelector and holding the policy server's service).

# The policy, active, with both conditions True.
def active_policy:
  .status = {mode: "protect", policyStatus: "active", conditions: [
    {type: "PolicyActive", status: "True", reason: "PolicyActive", message: "The policy webhook has been created"},
    {type: "PolicyUniquelyReachable", status: "True", reason: "LatestReplicaSetIsUniquelyReachable",
     message: "The latest replica set is uniquely reachable"}]};

# The policy's ValidatingWebhookConfiguration, clusterwide-<policy>.
def webhook_configuration:
  . as $policy
  | ("clusterwide-" + $policy.metadata.name) as $name
  | {apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingWebhookConfiguration",
     metadata: {name: $name},
     webhooks: [{name: ($name + ".kubewarden.admission"), rules: $policy.spec.rules,
                 clientConfig: {service: {namespace: "kubewarden", name: "policy-server-default",
                                          path: ("/validate/" + $name), port: 8443}},
                 failurePolicy: "Fail", sideEffects: "None", admissionReviewVersions: ["v1"],
                 matchConditions: $policy.spec.matchConditions,
                 namespaceSelector: {matchExpressions: [{key: "kubernetes.io/metadata.name",
                                                         operator: "NotIn", values: ["kubewarden"]}]}}]};
