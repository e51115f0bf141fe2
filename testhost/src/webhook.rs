//! `testhost webhook`: serves the policy as a validating admission webhook on loopback, the way a
//! policy server serves `/validate/<policy id>`: an AdmissionReview in, one `validate` call, the
//! AdmissionReview with the response out. The policy's Kubernetes calls are answered live by an
//! API server (`../shared/tools/fakeapi`), so that fakeapi's `--delete-webhook` has the compiled
//! policy judge the DELETEs the clean-up sends (collector/tests/e2e.sh). Plain HTTP on loopback,
//! served by `tiny_http` one review at a time, lookups sent by `ureq`: a test tool, not a server.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};
use clap::Args;
use serde_json::{json, Value};
use tiny_http::{Header, Response, Server};

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
    /// Straight to `address` (no proxy from the environment); a 4xx or 5xx is an answer, not an
    /// error.
    agent: ureq::Agent,
}

impl ApiServer {
    fn new(address: &str) -> ApiServer {
        let config = ureq::Agent::config_builder().proxy(None);
        ApiServer {
            address: address.to_string(),
            agent: config.http_status_as_error(false).build().into(),
        }
    }
}

/// `/api/v1` or `/apis/<group>/<version>`.
fn base(api_version: &str) -> String {
    if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    }
}

impl Responder for ApiServer {
    fn respond(&mut self, request: &KubeRequest) -> Result<Vec<u8>, String> {
        let (api_version, kind) = request.resource();
        // the namespace, a get's name, a list's label and field selectors, the masks
        let (namespace, name, [label, field], masks) = match request {
            KubeRequest::KubernetesListResourceNamespace(r) => (
                Some(r.namespace.as_str()),
                None,
                [&r.label_selector, &r.field_selector],
                r.field_masks.as_ref(),
            ),
            KubeRequest::KubernetesListResourceAll(r) => (
                None,
                None,
                [&r.label_selector, &r.field_selector],
                r.field_masks.as_ref(),
            ),
            KubeRequest::KubernetesGetResource(r) => (
                r.namespace.as_deref(),
                Some(r.name.as_str()),
                [&None, &None],
                r.field_masks.as_ref(),
            ),
        };
        let path = format!(
            "{}{}/{}{}",
            base(api_version),
            namespace.map_or(String::new(), |ns| format!("/namespaces/{ns}")),
            plural(kind),
            name.map_or(String::new(), |name| format!("/{name}"))
        );
        let address = &self.address;
        let query = [("labelSelector", label), ("fieldSelector", field)];
        let query = query
            .into_iter()
            .filter_map(|(k, v)| Some((k, v.as_deref()?)));
        let mut answer = self
            .agent
            .get(format!("http://{address}{path}"))
            .query_pairs(query)
            .header("Accept", "application/json")
            .call()
            .map_err(|e| format!("cannot GET {path} from the API server at {address}: {e}"))?;
        let code = answer.status().as_u16();
        let body = answer
            .body_mut()
            .with_config()
            .limit(u64::MAX)
            .read_to_vec()
            .map_err(|e| format!("GET {path}: {e}"))?;
        match (code, name) {
            (200, _) => {}
            (404, Some(name)) => return Err(no_such_object(api_version, kind, name, namespace)),
            _ => {
                let body = String::from_utf8_lossy(&body);
                return Err(format!("ApiError: {}: {code}", body.trim()));
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

/// `testhost webhook`: loads the policy once, then answers AdmissionReviews until killed.
pub fn serve(args: WebhookArgs, verbose: bool) -> Result<ExitCode> {
    let settings: Value = serde_json::from_str(&args.settings_json)
        .map_err(|e| anyhow!("Cannot parse settings JSON: {e}"))?;
    let module = crate::engine::PolicyModule::open(&args.policy)?;
    let state = HostState {
        allow_list: module.allow_list(true),
        verbose,
        responder: Some(Box::new(ApiServer::new(&args.api))),
        ..Default::default()
    };
    let policy = module.load_with_settings(state, &settings)?;
    let server = Server::http(args.listen.as_str())
        .map_err(|e| anyhow!("cannot listen on {}: {e}", args.listen))?;
    let port = server
        .server_addr()
        .to_ip()
        .map(|address| address.port())
        .with_context(|| format!("{} is not an IP address to listen on", args.listen))?;
    if let Some(file) = &args.port_file {
        std::fs::write(file, format!("{port}\n"))
            .with_context(|| format!("cannot write {}", file.display()))?;
    }
    eprintln!(
        " INFO testhost: webhook listening on 127.0.0.1:{port}, lookups to {}",
        args.api
    );
    let json_type = Header::from_bytes("Content-Type", "application/json")
        .map_err(|()| anyhow!("Content-Type: application/json is not a header"))?;
    for mut request in server.incoming_requests() {
        let review = serde_json::from_reader::<_, Value>(request.as_reader())
            .map_err(anyhow::Error::from)
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
        let answer = Response::from_string(answer.to_string())
            .with_status_code(code)
            .with_header(json_type.clone());
        if let Err(e) = request.respond(answer) {
            eprintln!(" WARN testhost: webhook could not answer: {e:#}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubewarden_policy_sdk::host_capabilities::kubernetes::{
        GetResourceRequest, ListAllResourcesRequest,
    };
    use std::thread::{spawn, JoinHandle};

    /// An API server on loopback that answers the GETs in turn with `answers` (code, body); its
    /// thread gives back the path and query of each GET.
    fn api(answers: Vec<(u16, &'static str)>) -> (ApiServer, JoinHandle<Vec<String>>) {
        let server = Server::http("127.0.0.1:0").unwrap();
        let address = server.server_addr().to_ip().unwrap().to_string();
        let urls = spawn(move || {
            let answer = |(code, body)| {
                let request = server.recv().unwrap();
                let url = request.url().to_string();
                let response = Response::from_string(body).with_status_code(code);
                request.respond(response).unwrap();
                url
            };
            answers.into_iter().map(answer).collect()
        });
        (ApiServer::new(&address), urls)
    }

    fn list_all(label: &str, field: &str) -> KubeRequest {
        KubeRequest::KubernetesListResourceAll(ListAllResourcesRequest {
            api_version: "cluster.x-k8s.io/v1beta1".to_string(),
            kind: "MachineDeployment".to_string(),
            label_selector: Some(label.to_string()),
            field_selector: Some(field.to_string()),
            field_masks: Some(["spec.x".to_string()].into()),
        })
    }

    #[test]
    fn a_list_sends_its_selectors_and_keeps_what_the_masks_keep() {
        let (label, field) = ("tier in (a, b),x!=y+z", "metadata.name=a&b=%c");
        let body = r#"{"items": [{"metadata": {"name": "a"}, "spec": {"x": 1, "y": 2}}]}"#;
        let (mut api, urls) = api(vec![(200, body)]);
        let answer = api.respond(&list_all(label, field)).unwrap();
        let answer: Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(answer["items"][0]["spec"], json!({"x": 1}));
        let url = urls.join().unwrap().remove(0);
        let (path, query) = url.split_once('?').unwrap();
        assert_eq!(path, "/apis/cluster.x-k8s.io/v1beta1/machinedeployments");
        let decode = |pair: &str| {
            let (key, value) = pair.split_once('=').unwrap();
            let value = percent_encoding::percent_decode_str(value).decode_utf8();
            (key.to_string(), value.unwrap().to_string())
        };
        let sent: Vec<_> = query.split('&').map(decode).collect();
        let expected = [("labelSelector", label), ("fieldSelector", field)];
        assert_eq!(sent, expected.map(|(k, v)| (k.to_string(), v.to_string())));
    }

    #[test]
    fn failures_keep_the_texts_the_policy_reads() {
        let get = KubeRequest::KubernetesGetResource(GetResourceRequest {
            api_version: "v1".to_string(),
            kind: "Namespace".to_string(),
            name: "edge".to_string(),
            namespace: None,
            disable_cache: false,
            field_masks: None,
        });
        let answers = vec![
            (404, "gone"),
            (500, " boom\n"),
            (404, "404 page not found"),
            (200, "{"),
        ];
        let (mut api, urls) = api(answers);
        let missing = no_such_object("v1", "Namespace", "edge", None);
        assert_eq!(api.respond(&get), Err(missing));
        assert_eq!(api.respond(&get), Err("ApiError: boom: 500".to_string()));
        let list = list_all("a=b", "c=d");
        let not_served = "ApiError: 404 page not found: 404".to_string();
        assert_eq!(api.respond(&list), Err(not_served));
        let not_json = api.respond(&get).unwrap_err();
        assert!(not_json
            .starts_with("the API server's answer to GET /api/v1/namespaces/edge is not JSON: "));
        assert_eq!(urls.join().unwrap()[0], "/api/v1/namespaces/edge");
        let gone = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let unreachable = ApiServer::new(&gone.to_string()).respond(&get).unwrap_err();
        let text = format!("cannot GET /api/v1/namespaces/edge from the API server at {gone}: ");
        assert!(unreachable.starts_with(&text), "{unreachable}");
    }
}
