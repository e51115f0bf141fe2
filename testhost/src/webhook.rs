//! `testhost webhook`: serves the policy as a validating admission webhook on loopback, the way a
//! policy server serves `/validate/<policy id>`: an AdmissionReview in, one `validate` call, the
//! AdmissionReview with the response out. The policy's Kubernetes calls are answered live by an
//! API server (`../shared/tools/fakeapi`), so that fakeapi's `--delete-webhook` has the compiled
//! policy judge the DELETEs the clean-up sends (collector/tests/e2e.sh). Plain HTTP/1.1 on std's
//! sockets, one connection at a time: a test tool, not a server.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use serde_json::{json, Value};

use crate::admission::ValidateRequest;
use crate::host::{HostState, Responder};
use crate::kube::{apply_masks, no_such_object, plural};
use crate::session::KubeRequest;

#[derive(Debug, Args)]
pub struct WebhookArgs {
    /// The API server that answers the policy's Kubernetes calls: host:port of a plain-HTTP
    /// server on loopback (fakeapi's `--port`)
    #[arg(long, value_name = "HOST:PORT")]
    api: String,

    /// Where to listen; port 0 picks a free one
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: String,

    /// Write the port listened on to this file once listening
    #[arg(long, value_name = "PATH")]
    port_file: Option<PathBuf>,

    /// JSON string containing the settings for this policy
    #[arg(long, value_name = "VALUE", default_value = "{}")]
    settings_json: String,

    /// Policy module: a path to a .wasm file
    policy: String,
}

/// The policy's Kubernetes calls, sent to the API server as the policy server's client sends
/// them; answers keep what the field masks keep, as the host's reflectors do.
struct ApiServer {
    address: String,
}

/// `%XX` for everything but RFC 3986's unreserved characters.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `/api/v1` or `/apis/<group>/<version>`.
fn base(api_version: &str) -> String {
    if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    }
}

fn selectors(label: &Option<String>, field: &Option<String>) -> String {
    let mut query = Vec::new();
    if let Some(label) = label {
        query.push(format!("labelSelector={}", encode(label)));
    }
    if let Some(field) = field {
        query.push(format!("fieldSelector={}", encode(field)));
    }
    query.join("&")
}

/// One GET, answered with its status code and body.
fn get(address: &str, path: &str) -> Result<(u16, Vec<u8>), String> {
    let mut stream = TcpStream::connect(address)
        .map_err(|e| format!("cannot reach the API server at {address}: {e}"))?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    );
    let mut answer = Vec::new();
    stream
        .write_all(request.as_bytes())
        .and_then(|()| stream.read_to_end(&mut answer))
        .map_err(|e| format!("GET {path}: {e}"))?;
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("GET {path}: the answer has no end of headers"))?;
    let head = String::from_utf8_lossy(&answer[..split]);
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("GET {path}: no status line in {head:?}"))?;
    Ok((code, answer[split + 4..].to_vec()))
}

impl Responder for ApiServer {
    fn respond(&mut self, request: &KubeRequest) -> Result<Vec<u8>, String> {
        let (api_version, kind) = request.resource();
        // the namespace, then what follows the resource: a list's selectors or a get's name
        let (namespace, tail, masks, missing) = match request {
            KubeRequest::KubernetesListResourceNamespace(r) => (
                Some(r.namespace.as_str()),
                format!("?{}", selectors(&r.label_selector, &r.field_selector)),
                r.field_masks.as_ref(),
                None,
            ),
            KubeRequest::KubernetesListResourceAll(r) => (
                None,
                format!("?{}", selectors(&r.label_selector, &r.field_selector)),
                r.field_masks.as_ref(),
                None,
            ),
            KubeRequest::KubernetesGetResource(r) => (
                r.namespace.as_deref(),
                format!("/{}", r.name),
                r.field_masks.as_ref(),
                Some(no_such_object(
                    api_version,
                    kind,
                    &r.name,
                    r.namespace.as_deref(),
                )),
            ),
        };
        let namespace = namespace.map_or(String::new(), |ns| format!("/namespaces/{ns}"));
        let path = format!("{}{namespace}/{}{tail}", base(api_version), plural(kind));
        let (code, body) = get(&self.address, &path)?;
        match (code, missing) {
            (200, _) => {}
            (404, Some(missing)) => return Err(missing),
            _ => {
                return Err(format!(
                    "ApiError: {}: {code}",
                    String::from_utf8_lossy(&body).trim()
                ))
            }
        }
        let mut answer: Value = serde_json::from_slice(&body)
            .map_err(|e| format!("the API server's answer to GET {path} is not JSON: {e}"))?;
        match answer.get_mut("items").and_then(Value::as_array_mut) {
            Some(items) => items.iter_mut().for_each(|i| *i = apply_masks(i, masks)),
            None => answer = apply_masks(&answer, masks),
        }
        serde_json::to_vec(&answer).map_err(|e| e.to_string())
    }
}

/// Reads one HTTP request: its body (by `Content-Length`).
fn read_request(stream: &TcpStream) -> Result<Vec<u8>> {
    let mut reader = BufReader::new(stream);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            bail!("the connection closed inside the headers");
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().context("bad Content-Length")?;
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(body)
}

fn reply(mut stream: &TcpStream, code: u16, body: &Value) -> Result<()> {
    let body = body.to_string();
    let text = if code == 200 { "OK" } else { "Bad Request" };
    write!(
        stream,
        "HTTP/1.1 {code} {text}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    Ok(stream.flush()?)
}

/// `testhost webhook`: loads the policy once, then answers AdmissionReviews until killed.
pub fn serve(args: WebhookArgs, verbose: bool) -> Result<ExitCode> {
    let settings: Value = serde_json::from_str(&args.settings_json)
        .map_err(|e| anyhow!("Cannot parse settings JSON: {e}"))?;
    let module = crate::engine::PolicyModule::open(&args.policy)?;
    let state = HostState {
        allow_list: module.allow_list(true),
        verbose,
        responder: Some(Box::new(ApiServer {
            address: args.api.clone(),
        })),
        ..Default::default()
    };
    let policy = module.load_with_settings(state, &settings)?;
    let listener = TcpListener::bind(&args.listen)
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let port = listener.local_addr()?.port();
    if let Some(file) = &args.port_file {
        std::fs::write(file, format!("{port}\n"))
            .with_context(|| format!("cannot write {}", file.display()))?;
    }
    eprintln!(
        " INFO testhost: webhook listening on 127.0.0.1:{port}, lookups to {}",
        args.api
    );
    for stream in listener.incoming() {
        let stream = stream?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        let review = read_request(&stream)
            .and_then(|body| Ok(serde_json::from_slice::<Value>(&body)?))
            .and_then(|review| ValidateRequest::build(&review));
        let (code, answer) = match review {
            Ok(request) => {
                let response = policy.validate(&request, &settings);
                if verbose {
                    eprintln!(
                        "DEBUG testhost: webhook response={}",
                        serde_json::to_string(&response)?
                    );
                }
                let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response});
                (200, review)
            }
            Err(e) => (400, json!({"error": format!("{e:#}")})),
        };
        if let Err(e) = reply(&stream, code, &answer) {
            eprintln!(" WARN testhost: webhook could not answer: {e:#}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
