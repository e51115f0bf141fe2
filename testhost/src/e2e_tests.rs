//! End-to-end tests through wasmtime and waPC, with tiny guests written in
//! WAT: they answer `validate_settings` / `validate` with canned bytes, an
//! error, a trap, or whatever a host call returns.

use serde_json::json;

use super::*;
use crate::host::HostState;
use crate::metadata::ContextAwareResource;
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

fn load(wasm: &[u8], state: HostState) -> Policy {
    Policy::load(wasm, "guest.wat", false, state).unwrap()
}

fn request() -> ValidateRequest {
    let req = json!({
        "uid": "uid-1",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "operation": "CREATE",
        "userInfo": {"username": "alice"},
        "object": {"metadata": {"name": "p", "labels": {"a": "1"}}}
    });
    ValidateRequest::build(&req, false).unwrap()
}

fn output(policy: &Policy) -> (String, bool) {
    let (resp, failed) = policy.validate(&request(), &json!({})).unwrap();
    (serde_json::to_string(&resp).unwrap(), failed)
}

#[test]
fn accepts() {
    let policy = load(
        &guest(
            Behaviour::Respond(r#"{"valid":true}"#),
            Behaviour::Respond(ACCEPT),
        ),
        HostState::default(),
    );
    let settings = policy.validate_settings(&json!({}));
    assert!(settings.valid);
    assert_eq!(settings.message, None);
    assert_eq!(
        output(&policy),
        (
            r#"{"uid":"uid-1","allowed":true,"auditAnnotations":null,"warnings":null}"#.to_string(),
            false
        )
    );
    assert_eq!(policy.protocol_version().unwrap(), "v1");
}

#[test]
fn mutation_becomes_patch() {
    let resp = r#"{"accepted":true,"mutated_object":{"metadata":{"name":"p","labels":{"a":"1","b":"2"}}},"warnings":["careful"]}"#;
    let policy = load(
        &guest(
            Behaviour::Respond(r#"{"valid":true}"#),
            Behaviour::Respond(resp),
        ),
        HostState::default(),
    );
    let (out, _) = output(&policy);
    // [{"op":"add","path":"/metadata/labels/b","value":"2"}]
    assert_eq!(
        out,
        r#"{"uid":"uid-1","allowed":true,"patchType":"JSONPatch","patch":"W3sib3AiOiJhZGQiLCJwYXRoIjoiL21ldGFkYXRhL2xhYmVscy9iIiwidmFsdWUiOiIyIn1d","auditAnnotations":null,"warnings":["careful"]}"#
    );
}

#[test]
fn rejection_with_status() {
    let resp = r#"{"accepted":false,"message":"nope","code":403,"audit_annotations":{"x":"y"}}"#;
    let policy = load(
        &guest(
            Behaviour::Respond(r#"{"valid":true}"#),
            Behaviour::Respond(resp),
        ),
        HostState::default(),
    );
    assert_eq!(
        output(&policy).0,
        r#"{"uid":"uid-1","allowed":false,"status":{"message":"nope","code":403},"auditAnnotations":{"x":"y"},"warnings":null}"#
    );
}

#[test]
fn invalid_settings() {
    let policy = load(
        &guest(
            Behaviour::Respond(r#"{"valid":false,"message":"replicas must be positive"}"#),
            Behaviour::Respond(ACCEPT),
        ),
        HostState::default(),
    );
    let resp = policy.validate_settings(&json!({"replicas": -1}));
    assert!(!resp.valid);
    assert_eq!(resp.message.as_deref(), Some("replicas must be positive"));
}

#[test]
fn settings_garbage_and_trap() {
    let policy = load(
        &guest(Behaviour::Respond("{}"), Behaviour::Respond(ACCEPT)),
        HostState::default(),
    );
    let resp = policy.validate_settings(&json!({}));
    assert_eq!(
        resp.message.as_deref(),
        Some(
            r#"error: InvalidResponseWithError(Error("missing field `valid`", line: 1, column: 2))"#
        )
    );

    let policy = load(
        &guest(Behaviour::Fail("bad settings"), Behaviour::Respond(ACCEPT)),
        HostState::default(),
    );
    let resp = policy.validate_settings(&json!({}));
    assert_eq!(
        resp.message.as_deref(),
        Some(r#"Error invoking settings validation callback: GuestCallFailure("bad settings")"#)
    );

    let policy = load(
        &guest(Behaviour::Trap, Behaviour::Respond(ACCEPT)),
        HostState::default(),
    );
    let resp = policy.validate_settings(&json!({}));
    assert!(!resp.valid);
    let msg = resp.message.unwrap_or_default();
    assert!(
        msg.starts_with("Error invoking settings validation callback: GuestCallFailure("),
        "{msg}"
    );
}

#[test]
fn guest_failures_become_500() {
    let policy = load(
        &guest(
            Behaviour::Respond(r#"{"valid":true}"#),
            Behaviour::Fail("boom"),
        ),
        HostState::default(),
    );
    assert_eq!(
        output(&policy),
        (
            r#"{"uid":"uid-1","allowed":false,"status":{"message":"internal server error: Guest call failure: boom","code":500},"auditAnnotations":null,"warnings":null}"#.to_string(),
            true
        )
    );

    let policy = load(
        &guest(Behaviour::Respond(r#"{"valid":true}"#), Behaviour::Trap),
        HostState::default(),
    );
    let (out, failed) = output(&policy);
    assert!(failed);
    assert!(
        out.contains(r#""message":"internal server error: Guest call failure: "#),
        "{out}"
    );
    assert!(
        out.contains("error while executing at wasm backtrace"),
        "{out}"
    );

    let policy = load(
        &guest(
            Behaviour::Respond(r#"{"valid":true}"#),
            Behaviour::Respond("[]"),
        ),
        HostState::default(),
    );
    assert_eq!(
        output(&policy),
        (
            r#"{"uid":"uid-1","allowed":false,"status":{"message":"internal server error: invalid response from policy: invalid length 0, expected struct ValidationResponse with 6 elements at line 1 column 2","code":500},"auditAnnotations":null,"warnings":null}"#.to_string(),
            false
        )
    );
}

const LIST_NS: &str = r#"{"api_version":"v1","kind":"Namespace","label_selector":null,"field_selector":null,"field_masks":["metadata.name"]}"#;

fn session(payload_or_error: Result<&str, &str>, masks: &str) -> Replayer {
    let response = match payload_or_error {
        Ok(payload) => format!("    type: Success\n    payload: '{payload}'\n"),
        Err(message) => format!("    type: Error\n    message: '{message}'\n"),
    };
    let text = format!(
        "- type: Exchange\n  request: \"!KubernetesListResourceAll\\napi_version: v1\\nkind: Namespace\\nlabel_selector: null\\nfield_selector: null\\nfield_masks: {masks}\\n\"\n  response:\n{response}"
    );
    Replayer::from_yaml_str(&text, "session.yml").unwrap()
}

fn namespaces_allowed() -> std::collections::BTreeSet<ContextAwareResource> {
    [ContextAwareResource {
        api_version: "v1".to_string(),
        kind: "Namespace".to_string(),
    }]
    .into()
}

fn host_call_guest() -> Vec<u8> {
    guest(
        Behaviour::Respond(r#"{"valid":true}"#),
        Behaviour::HostCall {
            namespace: "kubernetes",
            operation: "list_resources_all",
            payload: LIST_NS,
        },
    )
}

#[test]
fn host_call_replayed() {
    let state = HostState {
        allow_list: namespaces_allowed(),
        replayer: Some(session(
            Ok(r#"{"accepted":false,"message":"from session"}"#),
            "[metadata.name]",
        )),
        verbose: false,
        responder: None,
    };
    let policy = load(&host_call_guest(), state);
    assert_eq!(
        output(&policy).0,
        r#"{"uid":"uid-1","allowed":false,"status":{"message":"from session"},"auditAnnotations":null,"warnings":null}"#
    );
    assert!(policy.with_state(|st| st.replayer.as_ref().map(|r| r.leftovers().len())) == Some(0));
}

#[test]
fn host_call_recorded_error() {
    let state = HostState {
        allow_list: namespaces_allowed(),
        replayer: Some(session(Err("namespaces is forbidden"), "[metadata.name]")),
        verbose: false,
        responder: None,
    };
    let policy = load(&host_call_guest(), state);
    assert_eq!(
        output(&policy).0,
        r#"{"uid":"uid-1","allowed":false,"status":{"message":"internal server error: Guest call failure: Callback evaluation failure: namespaces is forbidden","code":500},"auditAnnotations":null,"warnings":null}"#
    );
}

#[test]
fn host_call_denied_and_mismatch() {
    let state = HostState {
        allow_list: Default::default(),
        replayer: Some(session(Ok(ACCEPT), "[metadata.name]")),
        verbose: false,
        responder: None,
    };
    let policy = load(&host_call_guest(), state);
    assert_eq!(
        output(&policy).0,
        r#"{"uid":"uid-1","allowed":false,"status":{"message":"internal server error: Guest call failure: Policy has not been granted access to Kubernetes v1/Namespace resources. The violation has been reported.","code":500},"auditAnnotations":null,"warnings":null}"#
    );
    // the denied call did not consume the exchange
    assert!(policy.with_state(|st| st.replayer.as_ref().map(|r| r.leftovers().len())) == Some(1));

    let state = HostState {
        allow_list: namespaces_allowed(),
        replayer: Some(session(Ok(ACCEPT), "null")),
        verbose: false,
        responder: None,
    };
    let policy = load(&host_call_guest(), state);
    let (out, failed) = output(&policy);
    assert!(failed);
    assert!(out.contains(r#"internal server error: Guest call failure: Callback evaluation failure: Replay error: unexpected request. Was expecting KubernetesListResourceAll { api_version: \"v1\", kind: \"Namespace\", label_selector: None, field_selector: None, field_masks: None }, got KubernetesListResourceAll { api_version: \"v1\", kind: \"Namespace\", label_selector: None, field_selector: None, field_masks: Some({\"metadata.name\"}) } instead"#), "{out}");
}

#[test]
fn not_a_module() {
    let err = Policy::load(b"\0asm garbage", "x.wasm", false, HostState::default())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("cannot compile WebAssembly module x.wasm"),
        "{err}"
    );
}
