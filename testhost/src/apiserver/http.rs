//! `testhost apiserver`: [`Api`] over plain HTTP on loopback, answering the requests
//! template-cleanup (kube-rs) sends the way kube-apiserver v1.33 answers them: discovery, lists
//! (`limit` and `continue` pages, label selectors, metadata-only), gets, and DELETEs with dry run,
//! preconditions, finalizers and a validating webhook for templates, whose policy server is the
//! compiled policy run in process (its lookups answered from the same [`Api`]). One request at a
//! time (`tiny_http`): a test tool, not a server. No watch: the clean-up sends none.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, anyhow};
use clap::Args;
use percent_encoding::percent_decode_str;
use serde_json::{Value, json};
use tiny_http::{Header, Response, Server};

use super::{Api, ApiHost, Key, kube};
use crate::engine::{Policy, PolicyModule};
use crate::host::lock;

mod delete;
mod matching;
mod write;

/// The webhook kubewarden-controller writes for the ClusterAdmissionPolicy capi-template-guard.
const WEBHOOK: &str = "clusterwide-capi-template-guard.kubewarden.admission";

#[derive(Debug, Args)]
pub struct ApiServerArgs {
    /// The objects to serve: a JSON array of objects, each served at its apiVersion (the
    /// simulated providers' kinds are served too, at v1beta1)
    #[arg(long, value_name = "FILE")]
    state: PathBuf,

    /// Where to listen; port 0 picks a free one
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: String,

    /// Write a kubeconfig for this server here once listening
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,

    /// The policy (default settings) that the validating webhook, as Kubewarden's policy server,
    /// runs on the DELETEs its ValidatingWebhookConfiguration in the state sends it (rules,
    /// namespaceSelector, matchConditions), or on every DELETE of a kind ending in `Template` when
    /// the state holds none; without it, the webhook cannot be reached
    #[arg(long, value_name = "POLICY.wasm")]
    policy: Option<String>,

    /// The webhook's name in the API server's refusals
    #[arg(long, value_name = "NAME", default_value = WEBHOOK)]
    webhook: String,

    /// The webhook's failurePolicy: what a DELETE gets when the webhook cannot be reached
    #[arg(long, default_value = "Fail", value_parser = ["Fail", "Ignore"])]
    failure_policy: String,

    /// The policy server runs the policy in Kubewarden's monitor mode: it allows every request
    /// and logs what the policy would have refused
    #[arg(long)]
    monitor: bool,

    /// `delete:KIND=recreate`: a DELETE of a KIND finds it deleted and created again under the
    /// same name since the client read it (new uid, resourceVersion and creationTimestamp);
    /// `delete:KIND=no-namespace`: its Namespace is gone, and the DELETE gets kube-apiserver's
    /// 404 for the namespace
    #[arg(long = "fault", value_name = "delete:KIND=recreate|no-namespace")]
    faults: Vec<String>,

    /// The caller: SelfSubjectReview's answer and the AdmissionReview's userInfo.username
    #[arg(
        long,
        default_value = "system:serviceaccount:capi-system:capi-template-cleanup"
    )]
    user: String,

    /// The policy server switches to monitor mode after this many DELETEs of templates (a mode
    /// change during a pass)
    #[arg(long, value_name = "N")]
    monitor_after: Option<usize>,
}

/// A request's query parameters, decoded.
type Query = BTreeMap<String, String>;
/// The webhook's policy (default settings); `None`: its policy server cannot be reached.
type Webhook = Option<Policy>;

/// An answer: status code, body (a string is sent as plain text), what was done (logged).
#[derive(Debug)]
struct Reply(u16, Value, String);

/// A `Status` as kube-apiserver sends it (k8s.io/apimachinery v0.33, pkg/api/errors); an empty
/// reason or details is left out, as Go's `omitempty` does.
fn status(code: u16, reason: &str, message: String, details: Value) -> Reply {
    let mut body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "details": details, "code": code});
    if let Some(body) = body.as_object_mut() {
        body.retain(|k, v| !(k == "reason" && v == "" || k == "details" && v.is_null()));
    }
    Reply(code, body, format!("{reason} {code}").trim().to_string())
}

fn ok(body: Value) -> Reply {
    Reply(200, body, String::new())
}

fn bad_request(message: String) -> Reply {
    status(400, "BadRequest", message, Value::Null)
}

/// kube-apiserver's answer to a path it does not serve: plain text.
fn page_not_found() -> Reply {
    Reply(404, json!("404 page not found\n"), "not served".into())
}

/// Now, RFC 3339 to the second.
fn now() -> Value {
    json!(format!("{:.0}", jiff::Timestamp::now()))
}

/// The resource a request names: `/api/v1` or `/apis/{group}/{version}`, then
/// `[namespaces/{namespace}/]{plural}[/{name}]`.
#[derive(Clone)]
struct Target {
    api_version: String,
    kind: String,
    plural: String,
    namespace: Option<String>,
    name: String,
}

impl Target {
    fn group(&self) -> &str {
        self.api_version.split_once('/').map_or("", |(g, _)| g)
    }

    /// `plural.group` (`plural` in the core group), as kube-apiserver names a resource.
    fn resource(&self) -> String {
        [self.plural.as_str(), self.group()]
            .join(".")
            .trim_end_matches('.')
            .to_string()
    }

    fn key(&self) -> Key {
        let namespace = self.namespace.clone().unwrap_or_default();
        (
            self.api_version.clone(),
            self.kind.clone(),
            namespace,
            self.name.clone(),
        )
    }

    fn status(&self, code: u16, reason: &str, message: String) -> Reply {
        let details = json!({"name": self.name, "group": self.group(), "kind": self.plural});
        status(code, reason, message, details)
    }

    fn not_found(&self) -> Reply {
        let message = format!("{} \"{}\" not found", self.resource(), self.name);
        self.status(404, "NotFound", message)
    }
}

struct Front {
    api: Arc<Mutex<Api>>,
    policy: Webhook,
    args: ApiServerArgs,
    /// Kinds whose DELETE finds the object re-created, or its Namespace gone.
    recreate: Vec<String>,
    no_namespace: Vec<String>,
    /// Template DELETEs the webhook has judged.
    judged: Mutex<usize>,
}

impl Front {
    fn new(api: Arc<Mutex<Api>>, policy: Webhook, args: ApiServerArgs) -> Result<Front> {
        let (mut recreate, mut no_namespace) = (Vec::new(), Vec::new());
        for fault in &args.faults {
            let fault_kind = fault
                .strip_prefix("delete:")
                .and_then(|f| f.split_once('='));
            match fault_kind {
                Some((kind, "recreate")) => recreate.push(kind.to_string()),
                Some((kind, "no-namespace")) => no_namespace.push(kind.to_string()),
                _ => {
                    return Err(anyhow!(
                        "--fault {fault}: the faults served are delete:KIND=recreate and delete:KIND=no-namespace"
                    ));
                }
            }
        }
        let judged = Mutex::new(0);
        Ok(Front {
            api,
            policy,
            args,
            recreate,
            no_namespace,
            judged,
        })
    }

    /// `headers`: the request's Accept and Content-Type.
    fn answer(&self, method: &str, url: &str, headers: [&str; 2], body: &str) -> Reply {
        let [accept, content_type] = headers;
        let decode =
            |s: &str| String::from(percent_decode_str(&s.replace('+', " ")).decode_utf8_lossy());
        let (path, query) = url.split_once('?').unwrap_or((url, ""));
        let pairs = query.split('&').filter_map(|pair| pair.split_once('='));
        let query: Query = pairs.map(|(k, v)| (decode(k), decode(v))).collect();
        let parts: Vec<String> = path
            .split('/')
            .filter(|p| !p.is_empty())
            .map(decode)
            .collect();
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        let served = lock(&self.api).served();
        let (api_version, rest) = match (method, parts.as_slice()) {
            ("GET", ["api"]) => return ok(json!({"kind": "APIVersions", "versions": ["v1"]})),
            ("GET", ["apis"]) => return ok(groups(&served)),
            ("POST", ["apis", "authentication.k8s.io", "v1", "selfsubjectreviews"]) => {
                let user = json!({"username": self.args.user, "groups": ["system:authenticated"]});
                return ok(
                    json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
                    "metadata": {}, "status": {"userInfo": user}}),
                );
            }
            (_, ["api", version, rest @ ..]) => (version.to_string(), rest),
            (_, ["apis", group, version, rest @ ..]) => (format!("{group}/{version}"), rest),
            _ => return page_not_found(),
        };
        let Some(kinds) = served.get(&api_version) else {
            return page_not_found();
        };
        let (namespace, rest) = match rest {
            ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(ns.to_string()), rest),
            _ => (None, rest),
        };
        let (plural, name) = match rest {
            [] if method == "GET" => return ok(self.resources(&api_version, kinds)),
            [plural] => (*plural, String::new()),
            [plural, name] => (*plural, name.to_string()),
            _ => return page_not_found(),
        };
        let Some(kind) = kinds.iter().find(|k| kube::plural(k) == plural).cloned() else {
            return page_not_found();
        };
        let plural = plural.into();
        let target = Target {
            api_version,
            kind,
            plural,
            namespace,
            name,
        };
        let api = lock(&self.api);
        let resource = (target.api_version.as_str(), target.kind.as_str());
        match (method, target.name.is_empty()) {
            ("GET", true) => self.list(&api, &target, &query, accept),
            ("GET", false) => match api.get(resource, &target.name, target.namespace.as_deref()) {
                Ok(object) => ok(object),
                Err(_) => target.not_found(),
            },
            ("DELETE", false) => {
                drop(api);
                self.delete(&target, &query, body)
            }
            ("POST", true) => {
                drop(api);
                self.create(&target, body)
            }
            ("PATCH", false) => {
                drop(api);
                self.patch(&target, content_type, body)
            }
            _ => page_not_found(),
        }
    }

    fn resources(&self, api_version: &str, kinds: &BTreeSet<String>) -> Value {
        let api = lock(&self.api);
        let resources: Vec<Value> = kinds.iter().map(|kind| {
            let mut resource = json!({
                "name": kube::plural(kind), "singularName": kind.to_lowercase(), "kind": kind,
                "namespaced": api.namespaced(api_version, kind),
                "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            });
            let short = kube::short_names(kind);
            if !short.is_empty() {
                // left out when empty, as Go's `omitempty` does
                resource["shortNames"] = json!(short);
            }
            resource
        }).collect();
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": api_version, "resources": resources})
    }

    /// One page of a list: `limit` items from the `continue` token (here the index of the next
    /// item), whole objects or, when `Accept` asks for a PartialObjectMetadataList (kube-rs
    /// `Api::list_metadata`), their metadata only.
    fn list(&self, api: &Api, target: &Target, query: &Query, accept: &str) -> Reply {
        let selector = query.get("labelSelector").map_or("", String::as_str);
        let resource = (target.api_version.as_str(), target.kind.as_str());
        let items = match api.list(resource, target.namespace.as_deref(), selector) {
            Ok(items) => items,
            Err(e) => return bad_request(e),
        };
        let Ok(start) = query.get("continue").map_or(Ok(0), |c| c.parse::<usize>()) else {
            return bad_request("continue key is not valid".into());
        };
        let limit = query
            .get("limit")
            .and_then(|l| l.parse::<usize>().ok())
            .filter(|&l| l > 0);
        let end = limit.map_or(items.len(), |l| items.len().min(start + l));
        let mut page = items.get(start..end).unwrap_or_default().to_vec();
        let note = format!("{} of {} items", page.len(), items.len());
        let revision = api.revision.to_string();
        let mut answer = kube::list_answer(resource.0, resource.1, &revision, Vec::new());
        if end < items.len() {
            answer["metadata"]["continue"] = json!(end.to_string());
            answer["metadata"]["remainingItemCount"] = json!(items.len() - end);
        }
        if accept.contains("as=PartialObjectMetadataList") {
            for item in &mut page {
                *item = json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": item["metadata"].take()});
            }
            answer["apiVersion"] = json!("meta.k8s.io/v1");
            answer["kind"] = json!("PartialObjectMetadataList");
        }
        answer["items"] = json!(page);
        Reply(200, answer, note)
    }
}

/// The APIGroupList of the served groups, each with its versions by priority.
fn groups(served: &BTreeMap<String, BTreeSet<String>>) -> Value {
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (group, version) in served.keys().filter_map(|v| v.split_once('/')) {
        groups.entry(group).or_default().push(version);
    }
    let group = |(group, mut versions): (&str, Vec<&str>)| {
        versions.sort_by_key(|v| kube::priority(v));
        let version = |v: &&str| json!({"groupVersion": format!("{group}/{v}"), "version": v});
        let versions: Vec<Value> = versions.iter().map(version).collect();
        json!({"name": group, "versions": versions, "preferredVersion": versions[0]})
    };
    let groups: Vec<Value> = groups.into_iter().map(group).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `testhost apiserver`: serves the state until killed.
pub fn serve(args: ApiServerArgs, verbose: bool) -> Result<ExitCode> {
    let state = std::fs::read_to_string(&args.state)
        .with_context(|| format!("cannot read the state file {}", args.state.display()))?;
    let file = args.state.display();
    let not_json = || format!("{file} must be a JSON array of Kubernetes objects");
    let objects: Vec<Value> = serde_json::from_str(&state).with_context(not_json)?;
    let mut api = Api::default();
    for object in objects {
        api.hold(object).map_err(|e| anyhow!("{file}: {e}"))?;
    }
    let api = Arc::new(Mutex::new(api));
    let policy = match &args.policy {
        Some(path) => {
            let module = PolicyModule::open(path)?;
            let host = Box::new(ApiHost { api: api.clone() });
            Some(module.load_answered_by(&module.allow_list(true), verbose, host)?)
        }
        None => None,
    };
    let server = Server::http(args.listen.as_str())
        .map_err(|e| anyhow!("cannot listen on {}: {e}", args.listen))?;
    let address = server
        .server_addr()
        .to_ip()
        .with_context(|| format!("{} is not an IP address to listen on", args.listen))?;
    if let Some(path) = &args.kubeconfig {
        let config = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: testhost\n  cluster:\n    server: http://{address}\nusers:\n- name: testhost\n  user: {{}}\ncontexts:\n- name: testhost\n  context:\n    cluster: testhost\n    user: testhost\n    namespace: default\ncurrent-context: testhost\n"
        );
        // written whole under another name first, so that a reader never sees half of it
        let partial = path.with_extension("partial");
        std::fs::write(&partial, config)
            .and_then(|()| std::fs::rename(&partial, path))
            .with_context(|| format!("cannot write the kubeconfig {}", path.display()))?;
    }
    eprintln!(" INFO testhost: API server listening on http://{address}");
    let json_type = Header::from_bytes("Content-Type", "application/json")
        .map_err(|()| anyhow!("Content-Type: application/json is not a header"))?;
    let front = Front::new(api, policy, args)?;
    for mut request in server.incoming_requests() {
        let mut body = String::new();
        let header = |name| {
            let found = request.headers().iter().find(|h| h.field.equiv(name));
            found.map_or(String::new(), |h| h.value.to_string())
        };
        let (accept, content_type) = (header("Accept"), header("Content-Type"));
        let (method, url) = (request.method().to_string(), request.url().to_string());
        let Reply(code, answer, note) = match request.as_reader().read_to_string(&mut body) {
            Ok(_) => front.answer(&method, &url, [&accept, &content_type], &body),
            Err(e) => bad_request(format!("cannot read the request body: {e}")),
        };
        eprintln!("{method} {url} {code} {note}");
        let response = match answer {
            Value::String(text) => Response::from_string(text),
            body => Response::from_string(body.to_string()).with_header(json_type.clone()),
        };
        if let Err(e) = request.respond(response.with_status_code(code)) {
            eprintln!(" WARN testhost: cannot answer {method} {url}: {e}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use clap::{Command, FromArgMatches};

    /// A front without a policy (its webhook unreachable) on two templates, one with a finalizer,
    /// and a cluster-scoped policy.
    pub(super) fn front(flags: &[&str]) -> Front {
        let mut api = Api::default();
        for (name, finalizers) in [("a", json!([])), ("b", json!(["keep"]))] {
            let meta = json!({"name": name, "namespace": "edge", "labels": {"tier": name}, "finalizers": finalizers});
            let template = json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "Metal3MachineTemplate", "metadata": meta});
            api.hold(template).unwrap();
        }
        let policy = json!({"apiVersion": "policies.kubewarden.io/v1", "kind": "ClusterAdmissionPolicy", "metadata": {"name": "guard"}});
        api.hold(policy).unwrap();
        let flags = [&["apiserver", "--state", "-"], flags].concat();
        let matches =
            ApiServerArgs::augment_args(Command::new("apiserver")).get_matches_from(flags);
        let args = ApiServerArgs::from_arg_matches(&matches).unwrap();
        Front::new(Arc::new(Mutex::new(api)), None, args).unwrap()
    }

    pub(super) const M3MT: &str =
        "/apis/infrastructure.cluster.x-k8s.io/v1beta1/namespaces/edge/metal3machinetemplates";

    pub(super) fn get(front: &Front, url: &str) -> Reply {
        front.answer("GET", url, ["application/json", ""], "")
    }

    #[test]
    fn discovery_names_groups_versions_and_resources() {
        let Reply(_, groups, _) = get(&front(&[]), "/apis");
        let capi = groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == "policies.kubewarden.io");
        assert_eq!(capi.unwrap()["preferredVersion"]["version"], "v1");
        let Reply(_, list, _) = get(&front(&[]), "/apis/policies.kubewarden.io/v1");
        assert_eq!(list["resources"][0]["name"], "clusteradmissionpolicies");
        assert_eq!(list["resources"][0]["namespaced"], false);
        assert_eq!(get(&front(&[]), "/apis/nothing.io/v1").0, 404);
        let Reply(_, infra, _) = get(&front(&[]), "/apis/infrastructure.cluster.x-k8s.io/v1beta1");
        let m3mt = infra["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["kind"] == "Metal3MachineTemplate");
        assert_eq!(m3mt.map(|r| &r["shortNames"]), Some(&json!(["m3mt"])));
        let mut versions = ["v1beta1", "v1", "v1alpha2", "v2", "v1beta2"];
        versions.sort_by_key(|v| kube::priority(v));
        assert_eq!(versions, ["v2", "v1", "v1beta2", "v1beta1", "v1alpha2"]);
    }

    #[test]
    fn lists_page_select_and_strip_to_metadata() {
        let front = front(&[]);
        let Reply(code, page, _) = get(&front, &format!("{M3MT}?limit=1"));
        let name = |page: &Value| page["items"][0]["metadata"]["name"].clone();
        assert_eq!((code, name(&page)), (200, json!("a")));
        let next = page["metadata"]["continue"].as_str().unwrap();
        let Reply(_, page, _) = get(&front, &format!("{M3MT}?limit=1&continue={next}"));
        assert_eq!(name(&page), "b");
        assert_eq!(page["metadata"]["continue"], Value::Null);
        let Reply(_, page, _) = get(&front, &format!("{M3MT}?labelSelector=tier%3Db"));
        assert_eq!(page["items"].as_array().unwrap().len(), 1);
        let Reply(_, page, _) = get(&front, &format!("{M3MT}?labelSelector=tier%21%3Db,%21x"));
        assert_eq!(name(&page), "a");
        let accept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
        let Reply(_, page, _) = front.answer("GET", M3MT, [accept, ""], "");
        assert_eq!(page["kind"], "PartialObjectMetadataList");
        assert_eq!(page["items"][0]["kind"], "PartialObjectMetadata");
        assert_eq!(page["items"][0].get("spec"), None);
    }
}
