//! The answers to a DELETE, as tables: which are the guard's, which stop the pass.

use rstest::rstest;
use template_cleanup_core::answer::{ErrorStatus, TemplateOutcome, classify, webhook_unreachable};

mod common;
use common::*;

#[rstest]
#[case::deleted(None, TemplateOutcome::Deleted)]
#[case::guard_refusal(Some(refused(409, "", &format!("{DENIED}t1 is referenced by MachineSet edge/md-abc"), &[])), TemplateOutcome::KeptByGuard("t1 is referenced by MachineSet edge/md-abc".into()))]
#[case::guard_refusal_with_spec_message(Some(refused(409, "", &format!("{DENIED}templates are protected"), &["t1 is referenced by MachineSet edge/md-abc"])), TemplateOutcome::KeptByGuard("t1 is referenced by MachineSet edge/md-abc".into()))]
#[case::another_webhooks_409(Some(refused(409, "", "admission webhook \"other.example\" denied the request: no", &[])), TemplateOutcome::Failed("409: admission webhook \"other.example\" denied the request: no".into()))]
#[case::another_guards_409(Some(refused(409, "", &DENIED.replace("capi-template-guard-cleanup", "capi-template-guard"), &[])), TemplateOutcome::Failed(format!("409: {}", DENIED.replace("capi-template-guard-cleanup", "capi-template-guard"))))]
#[case::precondition(Some(refused(409, "Conflict", "Operation cannot be fulfilled on metal3machinetemplates.infrastructure.cluster.x-k8s.io \"t1\": Precondition failed: UID in precondition: a, UID in object meta: b", &[])), TemplateOutcome::Changed("Operation cannot be fulfilled on metal3machinetemplates.infrastructure.cluster.x-k8s.io \"t1\": Precondition failed: UID in precondition: a, UID in object meta: b".into()))]
#[case::uid_precondition_before_delete(Some(refused(409, "Conflict", BEFORE_DELETE_UID, &[])), TemplateOutcome::Changed(BEFORE_DELETE_UID.into()))]
#[case::resource_version_precondition_before_delete(Some(refused(409, "Conflict", BEFORE_DELETE_RV, &[])), TemplateOutcome::Changed(BEFORE_DELETE_RV.into()))]
#[case::precondition_text_without_conflict(Some(refused(409, "", BEFORE_DELETE_UID, &[])), TemplateOutcome::Failed(format!("409: {BEFORE_DELETE_UID}")))]
#[case::another_conflict(Some(refused(409, "Conflict", "Operation cannot be fulfilled on metal3machinetemplates.infrastructure.cluster.x-k8s.io \"t1\": the object has been modified; please apply your changes to the latest version and try again", &[])), TemplateOutcome::Failed("409 Conflict: Operation cannot be fulfilled on metal3machinetemplates.infrastructure.cluster.x-k8s.io \"t1\": the object has been modified; please apply your changes to the latest version and try again".into()))]
#[case::gone(Some(refused(404, "NotFound", "not found", &[])), TemplateOutcome::Gone)]
#[case::forbidden(Some(refused(403, "Forbidden", "cannot delete", &[])), TemplateOutcome::Failed("403 Forbidden: cannot delete".into()))]
#[case::guard_error(Some(refused(500, "", &format!("{DENIED}could not check"), &[])), TemplateOutcome::Failed(format!("500: {DENIED}could not check")))]
fn answers(#[case] answer: Option<ErrorStatus>, #[case] outcome: TemplateOutcome) {
    assert_eq!(
        classify("capi-template-guard-cleanup", answer.as_ref()),
        outcome
    );
}

/// A DELETE that fails because the webhook could not be called stops the pass; the guard's own
/// answers, even a 500, do not.
#[rstest]
#[case::timeout(refused(500, "InternalError", "Internal error occurred: failed calling webhook \"clusterwide-capi-template-guard-cleanup.kubewarden.admission\": failed to call webhook: Post \"https://policy-server-default.kubewarden.svc:8443/validate/clusterwide-capi-template-guard-cleanup?timeout=10s\": context deadline exceeded", &[]), true)]
#[case::no_endpoints(refused(500, "InternalError", "Internal error occurred: failed calling webhook \"clusterwide-capi-template-guard-cleanup.kubewarden.admission\": failed to call webhook: Post \"https://policy-server-default.kubewarden.svc:8443/validate/clusterwide-capi-template-guard-cleanup?timeout=10s\": no endpoints available for service \"policy-server-default\"", &[]), true)]
#[case::the_guards_own_500(refused(500, "", &format!("{DENIED}could not check"), &[]), false)]
#[case::forbidden(refused(403, "Forbidden", "cannot delete", &[]), false)]
#[case::refused(refused(409, "", &format!("{DENIED}in use"), &[]), false)]
fn a_webhook_that_cannot_be_called_stops_the_pass(
    #[case] answer: ErrorStatus,
    #[case] stops: bool,
) {
    assert_eq!(webhook_unreachable(&answer), stops);
}
