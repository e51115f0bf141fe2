//! End-to-end tests through wasmtime and waPC, with tiny guests written in
//! WAT: they answer `validate_settings` / `validate` with canned bytes, an
//! error, a trap, or whatever a host call returns.

use serde_json::json;

use super::*;
use crate::host::{ContextAwareResource, HostState};
use crate::session::Replayer;

/// What a guest function does.
enum Behaviour<'a> {
    /// Return these bytes.
    Respond(&'a str),
    /// Fail with this waPC guest error.
    Fail(&'a str),
    /// Execute `unreachable`.
    Trap,
    /// Call the host (binding "kubewarden") and return its answer as the
    /// guest response, or its error as the guest error.
    HostCall {
        namespace: &'a str,
        operation: &'a str,
        payload: &'a str,
    },
}

fn wat_bytes(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_graphic() && b != b'"' && b != b'\\' || b == b' ' {
                (b as char).to_string()
            } else {
                format!("\\{b:02x}")
            }
        })
        .collect()
}

/// Emits the body of one guest function; `base` is where its data lives.
fn body(behaviour: &Behaviour, base: u32, data: &mut Vec<(u32, String)>) -> String {
    match behaviour {
        Behaviour::Respond(text) => {
            data.push((base, text.to_string()));
            format!(
                "(call $guest_response (i32.const {base}) (i32.const {})) (return (i32.const 1))",
                text.len()
            )
        }
        Behaviour::Fail(text) => {
            data.push((base, text.to_string()));
            format!(
                "(call $guest_error (i32.const {base}) (i32.const {})) (return (i32.const 0))",
                text.len()
            )
        }
        Behaviour::Trap => "unreachable".to_string(),
        Behaviour::HostCall {
            namespace,
            operation,
            payload,
        } => {
            let (bd, ns, op, pl) = (base, base + 100, base + 200, base + 400);
            data.push((bd, "kubewarden".to_string()));
            data.push((ns, namespace.to_string()));
            data.push((op, operation.to_string()));
            data.push((pl, payload.to_string()));
            format!(
                "(if (call $host_call (i32.const {bd}) (i32.const 10) (i32.const {ns}) (i32.const {}) (i32.const {op}) (i32.const {}) (i32.const {pl}) (i32.const {}))
                   (then (call $host_response (i32.const 262144))
                         (call $guest_response (i32.const 262144) (call $host_response_len))
                         (return (i32.const 1)))
                   (else (call $host_error (i32.const 262144))
                         (call $guest_error (i32.const 262144) (call $host_error_len))
                         (return (i32.const 0))))
                 (i32.const 0)",
                namespace.len(),
                operation.len(),
                payload.len()
            )
        }
    }
}

/// A waPC guest module (WAT text).
fn guest(settings: Behaviour, validate: Behaviour) -> Vec<u8> {
    let mut data = vec![(1024u32, "\"v1\"".to_string())];
    let settings_body = body(&settings, 4096, &mut data);
    let validate_body = body(&validate, 32768, &mut data);
    let data_segments: String = data
        .iter()
        .map(|(at, text)| format!("(data (i32.const {at}) \"{}\")\n", wat_bytes(text)))
        .collect();
    format!(
        r#"(module
  (import "wapc" "__guest_request" (func $guest_request (param i32 i32)))
  (import "wapc" "__guest_response" (func $guest_response (param i32 i32)))
  (import "wapc" "__guest_error" (func $guest_error (param i32 i32)))
  (import "wapc" "__host_call" (func $host_call (param i32 i32 i32 i32 i32 i32 i32 i32) (result i32)))
  (import "wapc" "__host_response_len" (func $host_response_len (result i32)))
  (import "wapc" "__host_response" (func $host_response (param i32)))
  (import "wapc" "__host_error_len" (func $host_error_len (result i32)))
  (import "wapc" "__host_error" (func $host_error (param i32)))
  (memory (export "memory") 8)
  {data_segments}
  (func $settings (result i32) {settings_body})
  (func $validate (result i32) {validate_body})
  (func (export "__guest_call") (param $op_len i32) (param $req_len i32) (result i32)
    (call $guest_request (i32.const 0) (i32.const 131072))
    (if (i32.eq (local.get $op_len) (i32.const 16))
      (then (call $guest_response (i32.const 1024) (i32.const 4)) (return (i32.const 1))))
    (if (i32.eq (local.get $op_len) (i32.const 17))
      (then (return (call $settings))))
    (call $validate))
)"#
    )
    .into_bytes()
}

const ACCEPT: &str = r#"{"accepted":true,"message":null,"code":null,"mutated_object":null,"audit_annotations":null,"warnings":null}"#;
const VALID: Behaviour = Behaviour::Respond(r#"{"valid":true}"#);

fn load(wasm: &[u8], state: HostState) -> Policy {
    Policy::load(wasm, "guest.wat", false, state).unwrap()
}

/// The AdmissionResponse line of a CREATE of a Pod.
fn output(policy: &Policy) -> String {
    let req = json!({
        "uid": "uid-1",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "operation": "CREATE",
        "userInfo": {"username": "alice"},
        "object": {"metadata": {"name": "p", "labels": {"a": "1"}}}
    });
    let request = ValidateRequest::build(&req).unwrap();
    serde_json::to_string(&policy.validate(&request, &json!({}))).unwrap()
}

#[test]
fn validate_answers_become_kwctls_response_line() {
    for (answer, line) in [
        (
            Behaviour::Respond(ACCEPT),
            r#"{"uid":"uid-1","allowed":true,"auditAnnotations":null,"warnings":null}"#,
        ),
        // [{"op":"add","path":"/metadata/labels/b","value":"2"}]
        (
            Behaviour::Respond(
                r#"{"accepted":true,"mutated_object":{"metadata":{"name":"p","labels":{"a":"1","b":"2"}}},"warnings":["careful"]}"#,
            ),
            r#"{"uid":"uid-1","allowed":true,"patchType":"JSONPatch","patch":"W3sib3AiOiJhZGQiLCJwYXRoIjoiL21ldGFkYXRhL2xhYmVscy9iIiwidmFsdWUiOiIyIn1d","auditAnnotations":null,"warnings":["careful"]}"#,
        ),
        (
            Behaviour::Respond(
                r#"{"accepted":false,"message":"nope","code":403,"audit_annotations":{"x":"y"}}"#,
            ),
            r#"{"uid":"uid-1","allowed":false,"status":{"message":"nope","code":403},"auditAnnotations":{"x":"y"},"warnings":null}"#,
        ),
        (
            Behaviour::Fail("boom"),
            r#"{"uid":"uid-1","allowed":false,"status":{"message":"internal server error: Guest call failure: boom","code":500},"auditAnnotations":null,"warnings":null}"#,
        ),
        (
            Behaviour::Respond("[]"),
            r#"{"uid":"uid-1","allowed":false,"status":{"message":"internal server error: invalid response from policy: invalid length 0, expected struct ValidationResponse with 6 elements at line 1 column 2","code":500},"auditAnnotations":null,"warnings":null}"#,
        ),
    ] {
        let policy = load(&guest(VALID, answer), HostState::default());
        assert_eq!(output(&policy), line);
    }
    let policy = load(&guest(VALID, Behaviour::Trap), HostState::default());
    let out = output(&policy);
    assert!(
        out.contains(r#""message":"internal server error: Guest call failure: "#),
        "{out}"
    );
    assert!(
        out.contains("error while executing at wasm backtrace"),
        "{out}"
    );
    assert_eq!(policy.protocol_version().unwrap(), "v1");
}

#[test]
fn settings_answers_and_failures() {
    let validate = |settings: Behaviour| {
        load(
            &guest(settings, Behaviour::Respond(ACCEPT)),
            HostState::default(),
        )
        .validate_settings(&json!({"replicas": -1}))
    };
    assert!(validate(VALID).valid);
    let refused = validate(Behaviour::Respond(r#"{"valid":false,"message":"no"}"#));
    assert_eq!(
        (refused.valid, refused.message.as_deref()),
        (false, Some("no"))
    );
    let failed = validate(Behaviour::Fail("bad settings"));
    assert_eq!(
        failed.message.as_deref(),
        Some(r#"Error invoking settings validation callback: GuestCallFailure("bad settings")"#)
    );
}

#[test]
fn host_calls_are_replayed_checked_and_refused_like_kwctl() {
    let session = |response: &str, masks: &str| {
        let text = format!(
            "- type: Exchange\n  request: \"!KubernetesListResourceAll\\napi_version: v1\\nkind: Namespace\\nlabel_selector: null\\nfield_selector: null\\nfield_masks: {masks}\\n\"\n  response:\n{response}"
        );
        Some(Replayer::from_yaml_str(&text, "session.yml").unwrap())
    };
    let from_session = r#"{"accepted":false,"message":"from session"}"#;
    let success = format!("    type: Success\n    payload: '{from_session}'\n");
    let error = "    type: Error\n    message: 'namespaces is forbidden'\n";
    let namespaces: std::collections::BTreeSet<ContextAwareResource> = [ContextAwareResource {
        api_version: "v1".to_string(),
        kind: "Namespace".to_string(),
    }]
    .into();
    let prefix = r#"{"uid":"uid-1","allowed":false,"status":{"message":"#;
    for (allow_list, replayer, message, leftovers) in [
        (
            namespaces.clone(),
            session(&success, "[metadata.name]"),
            r#""from session"}"#,
            0,
        ),
        (
            namespaces.clone(),
            session(error, "[metadata.name]"),
            r#""internal server error: Guest call failure: Callback evaluation failure: namespaces is forbidden","code":500}"#,
            0,
        ),
        // denied: bare text, nothing consumed
        (
            Default::default(),
            session(&success, "[metadata.name]"),
            r#""internal server error: Guest call failure: Policy has not been granted access to Kubernetes v1/Namespace resources. The violation has been reported.","code":500}"#,
            1,
        ),
        // masks differ: kwctl's mismatch text, the exchange consumed
        (
            namespaces,
            session(&success, "null"),
            r#""internal server error: Guest call failure: Callback evaluation failure: Replay error: unexpected request. Was expecting KubernetesListResourceAll { api_version: \"v1\", kind: \"Namespace\", label_selector: None, field_selector: None, field_masks: None }, got KubernetesListResourceAll { api_version: \"v1\", kind: \"Namespace\", label_selector: None, field_selector: None, field_masks: Some({\"metadata.name\"}) } instead","code":500}"#,
            0,
        ),
    ] {
        let payload = r#"{"api_version":"v1","kind":"Namespace","label_selector":null,"field_selector":null,"field_masks":["metadata.name"]}"#;
        let call = Behaviour::HostCall {
            namespace: "kubernetes",
            operation: "list_resources_all",
            payload,
        };
        let state = HostState {
            allow_list,
            replayer,
            ..Default::default()
        };
        let policy = load(&guest(VALID, call), state);
        let out = output(&policy);
        assert_eq!(
            out,
            format!("{prefix}{message},\"auditAnnotations\":null,\"warnings\":null}}")
        );
        assert_eq!(
            policy.with_state(|st| st.replayer.as_ref().map(|r| r.leftovers().len())),
            Some(leftovers)
        );
    }
}

#[test]
fn not_a_module() {
    let err = Policy::load(b"\0asm garbage", "x.wasm", false, HostState::default())
        .err()
        .map(|e| e.to_string());
    assert!(err
        .unwrap_or_default()
        .contains("cannot compile WebAssembly module x.wasm"));
}

#[test]
fn settings_json_is_read_like_kwctl() {
    assert_eq!(settings(None).unwrap(), json!({}));
    assert_eq!(settings(Some("null")).unwrap(), json!({}));
    assert_eq!(settings(Some(r#"{"a":1}"#)).unwrap(), json!({"a": 1}));
    assert_eq!(
        settings(Some("[1]")).unwrap_err().to_string(),
        "Invalid settings in CRD, not an object (--settings-json)"
    );
    assert!(settings(Some("{"))
        .unwrap_err()
        .to_string()
        .starts_with("Cannot parse settings JSON: "));
}
