//! End-to-end tests through wasmtime and waPC, with tiny guests written in WAT: they answer
//! `validate_settings` / `validate` with canned bytes, an error or a trap, which the policy never
//! does. Host calls through a guest are checked by e2e.bats (every case replays a session), their
//! texts by host.rs and session.rs.

use serde_json::json;

use super::*;
use crate::host::HostState;

/// What a guest function does.
enum Behaviour<'a> {
    /// Return these bytes.
    Respond(&'a str),
    /// Fail with this waPC guest error.
    Fail(&'a str),
    /// Execute `unreachable`.
    Trap,
}

/// Emits the body of one guest function; `base` is where its data lives.
fn body(behaviour: &Behaviour, base: u32, data: &mut Vec<(u32, String)>) -> String {
    let (call, ret, text) = match behaviour {
        Behaviour::Respond(text) => ("guest_response", 1, text),
        Behaviour::Fail(text) => ("guest_error", 0, text),
        Behaviour::Trap => return "unreachable".to_string(),
    };
    data.push((base, text.to_string()));
    let len = text.len();
    format!("(call ${call} (i32.const {base}) (i32.const {len})) (return (i32.const {ret}))")
}

/// A waPC guest module (WAT text).
fn guest(settings: Behaviour, validate: Behaviour) -> Vec<u8> {
    let mut data = vec![(1024u32, "\"v1\"".to_string())];
    let settings_body = body(&settings, 4096, &mut data);
    let validate_body = body(&validate, 32768, &mut data);
    let data_segments: String = data
        .iter()
        // WAT strings read Rust's escapes (\n, \", \\, \u{..}), so escape_default writes them
        .map(|(at, text)| format!("(data (i32.const {at}) \"{}\")\n", text.escape_default()))
        .collect();
    format!(
        r#"(module
  (import "wapc" "__guest_request" (func $guest_request (param i32 i32)))
  (import "wapc" "__guest_response" (func $guest_response (param i32 i32)))
  (import "wapc" "__guest_error" (func $guest_error (param i32 i32)))
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

/// The guest `wasm`, loaded with a host that answers no calls.
fn load(wasm: &[u8]) -> Policy {
    Policy::load(wasm, "guest.wat", false, HostState::default()).unwrap()
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
        let policy = load(&guest(VALID, answer));
        assert_eq!(output(&policy), line);
    }
    let policy = load(&guest(VALID, Behaviour::Trap));
    let out = output(&policy);
    for part in [
        r#""message":"internal server error: Guest call failure: "#,
        "error while executing at wasm backtrace",
    ] {
        assert!(out.contains(part), "{out}");
    }
    assert_eq!(policy.protocol_version().unwrap(), "v1");
}

#[test]
fn settings_answers_and_failures() {
    let validate = |settings: Behaviour| {
        load(&guest(settings, Behaviour::Respond(ACCEPT)))
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
fn not_a_module() {
    let load = Policy::load(b"\0asm garbage", "x.wasm", false, HostState::default());
    let err = load.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        err.contains("cannot compile WebAssembly module x.wasm"),
        "{err}"
    );
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
    assert!(
        settings(Some("{"))
            .unwrap_err()
            .to_string()
            .starts_with("Cannot parse settings JSON: ")
    );
}
