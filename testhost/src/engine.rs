//! The engine every command shares: read the module and its metadata.yml, load it into waPC on
//! wasmtime with a host answering its calls, and call `validate_settings`, `validate` and
//! `protocol_version` the way kwctl does.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use serde::Deserialize;
use serde_json::{Value, json};
use wasmtime_provider::wasmtime;

use crate::admission::{
    AdmissionResponse, SettingsValidationResponse, ValidateRequest, ValidationResponse,
};
use crate::host::{ContextAwareResource, HostState, Responder, lock};
use crate::session::Replayer;

/// The options of `kwctl run` that this project's tests pass.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// File containing the Kubernetes admission request object in JSON format
    #[arg(short = 'r', long, value_name = "PATH")]
    request_path: PathBuf,

    /// JSON string containing the settings for this policy
    #[arg(long, value_name = "VALUE")]
    settings_json: Option<String>,

    /// Grant access to the Kubernetes resources listed in the policy's `contextAwareResources`
    #[arg(long)]
    allow_context_aware: bool,

    /// Answer host capability calls from this session file (strictly in order)
    #[arg(long, value_name = "FILE")]
    replay_host_capabilities_interactions: Option<PathBuf>,

    /// Policy module: a path to a .wasm file
    policy: String,
}

/// The part of metadata.yml the host enforces.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PolicyMetadata {
    #[serde(default)]
    context_aware_resources: BTreeSet<ContextAwareResource>,
}

/// A policy module and the metadata.yml it is run with.
pub struct PolicyModule {
    pub origin: String,
    pub wasm: Vec<u8>,
    /// The file `contextAwareResources` came from; `None` when there is none.
    metadata: Option<(PathBuf, BTreeSet<ContextAwareResource>)>,
}

impl PolicyModule {
    /// Reads the module at `path` and ./metadata.yml when it exists. kwctl reads the metadata
    /// `kwctl annotate` embedded instead; the test host runs the module `make` builds, which is
    /// not annotated.
    pub fn open(path: &str) -> Result<Self> {
        let wasm =
            std::fs::read(path).with_context(|| format!("cannot read policy file {path}"))?;
        if !wasm.starts_with(b"\0asm") {
            bail!("cannot load policy file {path}: not a WebAssembly binary (bad magic number)");
        }
        let file = Some(Path::new("metadata.yml")).filter(|f| f.is_file());
        let metadata = file
            .map(|file| -> Result<_> {
                let text = std::fs::read_to_string(file)
                    .with_context(|| format!("cannot read metadata file {}", file.display()))?;
                let parsed: PolicyMetadata = serde_yaml::from_str(&text)
                    .with_context(|| format!("cannot parse metadata file {}", file.display()))?;
                Ok((file.to_path_buf(), parsed.context_aware_resources))
            })
            .transpose()?;
        Ok(Self {
            origin: path.to_string(),
            wasm,
            metadata,
        })
    }

    /// The Kubernetes resources the policy may read, with the messages kwctl prints.
    pub fn allow_list(&self, allow_context_aware: bool) -> BTreeSet<ContextAwareResource> {
        if !allow_context_aware {
            if self.metadata.as_ref().is_some_and(|(_, r)| !r.is_empty()) {
                eprintln!(
                    " WARN testhost: Policy requires access to Kubernetes resources at evaluation time. During this execution the access to Kubernetes resources is denied. This can cause the policy to not behave properly"
                );
            }
            return BTreeSet::new();
        }
        match &self.metadata {
            Some((path, declared)) => {
                eprintln!(
                    " INFO testhost: Policy is not annotated, context aware resources taken from {}",
                    path.display()
                );
                declared.clone()
            }
            None => {
                eprintln!(
                    " INFO testhost: Policy is not annotated, access to Kubernetes resources is not allowed"
                );
                BTreeSet::new()
            }
        }
    }

    /// Loads the module with `state` answering its host calls, through wasmtime's cache.
    pub fn load(&self, state: HostState) -> Result<Policy> {
        Policy::load(&self.wasm, &self.origin, true, state)
    }

    /// Loads the module with `responder` answering the calls `allow_list` lets through, and
    /// checks that it accepts the default settings (`{}`): how `bench`, `simulate` and
    /// `apiserver` evaluate it.
    pub fn load_answered_by(
        &self,
        allow_list: &BTreeSet<ContextAwareResource>,
        verbose: bool,
        responder: Box<dyn Responder>,
    ) -> Result<Policy> {
        let policy = self.load(HostState {
            allow_list: allow_list.clone(),
            verbose,
            responder: Some(responder),
            ..Default::default()
        })?;
        let validation = policy.validate_settings(&json!({}));
        if !validation.valid {
            bail!(
                "Provided settings are not valid: {}",
                validation.message.unwrap_or_default()
            );
        }
        Ok(policy)
    }
}

/// A loaded policy and the host state answering its calls.
pub struct Policy {
    host: wapc::WapcHost,
    state: Arc<Mutex<HostState>>,
}

impl Policy {
    /// Compiles `wasm` and instantiates it with `state` answering its host calls. The module gets
    /// the WASI context kwctl gives policies: inherited stdio, no arguments, no environment, no
    /// directories. Compiled modules are cached by wasmtime (`~/.cache/wasmtime`), as by kwctl.
    pub fn load(wasm: &[u8], origin: &str, enable_cache: bool, state: HostState) -> Result<Self> {
        let mut config = wasmtime::Config::new();
        if enable_cache {
            match wasmtime::Cache::new(wasmtime::CacheConfig::new()) {
                Ok(cache) => {
                    config.cache(Some(cache));
                }
                Err(e) => eprintln!(" WARN testhost: wasmtime cache disabled: {e}"),
            }
        }
        let engine = wasmtime::Engine::new(&config)
            .map_err(|e| anyhow!("cannot create the wasmtime engine: {e:?}"))?;
        let module = wasmtime::Module::new(&engine, wasm)
            .map_err(|e| anyhow!("cannot compile WebAssembly module {origin}: {e:?}"))?;
        let provider = wasmtime_provider::WasmtimeEngineProviderBuilder::new()
            .engine(engine)
            .module(module)
            .build()
            .map_err(|e| anyhow!("cannot build the waPC engine for {origin}: {e}"))?;
        let state = Arc::new(Mutex::new(state));
        let shared = state.clone();
        let callback =
            move |_id: u64, binding: &str, namespace: &str, operation: &str, payload: &[u8]| {
                let mut state = lock(&shared);
                state
                    .host_call(binding, namespace, operation, payload)
                    .map_err(|e| -> Box<dyn std::error::Error + Send + Sync> { e.into() })
            };
        let host = wapc::WapcHost::new(Box::new(provider), Some(Box::new(callback)))
            .map_err(|e| anyhow!("cannot initialise policy {origin}: {e}"))?;
        Ok(Self { host, state })
    }

    pub fn call(&self, operation: &str, payload: &[u8]) -> Result<Vec<u8>, wapc::errors::Error> {
        self.host.call(operation, payload)
    }

    pub fn with_state<T>(&self, f: impl FnOnce(&mut HostState) -> T) -> T {
        f(&mut lock(&self.state))
    }

    /// Calls `validate_settings`; a failure of the call is an invalid answer, as with kwctl.
    pub fn validate_settings(&self, settings: &Value) -> SettingsValidationResponse {
        let invalid = |message: String| SettingsValidationResponse {
            valid: false,
            message: Some(message),
        };
        match self.call("validate_settings", settings.to_string().as_bytes()) {
            Ok(res) => serde_json::from_slice(&res)
                .unwrap_or_else(|e| invalid(format!("error: InvalidResponseWithError({e:?})"))),
            Err(err) => invalid(format!(
                "Error invoking settings validation callback: {err:?}"
            )),
        }
    }

    /// Calls `validate` and builds the AdmissionResponse like kwctl: a failing guest call (a trap,
    /// a waPC error, a host error the policy passes on) or an answer that cannot be read is a
    /// 500 response, not an error of the host.
    pub fn validate(&self, request: &ValidateRequest, settings: &Value) -> AdmissionResponse {
        let uid = request.uid();
        let answer = self
            .call("validate", &request.payload(settings))
            .map_err(|e| e.to_string())
            .and_then(|res| {
                serde_json::from_slice::<ValidationResponse>(&res)
                    .map_err(|e| format!("invalid response from policy: {e}"))
            })
            .and_then(|pvr| {
                AdmissionResponse::from_policy(uid, request.object(), &pvr)
                    .map_err(|e| format!("invalid response format: {e}"))
            });
        answer.unwrap_or_else(|e| {
            eprintln!("ERROR testhost: validate failed error={e}");
            AdmissionResponse::reject_internal_server_error(uid, e)
        })
    }

    /// Calls `protocol_version` like `kwctl annotate`, which accepts only `v1` for a waPC policy.
    pub fn protocol_version(&self) -> Result<String> {
        let res = self
            .call("protocol_version", &[])
            .map_err(|e| anyhow!("cannot invoke 'protocol_version' waPC function: {e}"))?;
        match serde_json::from_slice::<String>(&res) {
            Ok(version) if version == "v1" => Ok(version),
            _ => bail!(
                "Cannot compute ProtocolVersion used by the policy: {:?} is not v1",
                String::from_utf8_lossy(&res)
            ),
        }
    }

    /// Warns, as kwctl does, about recorded exchanges the policy did not ask for.
    pub fn warn_leftovers(&self) {
        self.with_state(|st| {
            let leftovers = st.replayer.as_ref().map(Replayer::leftovers).unwrap_or_default();
            if !leftovers.is_empty() {
                eprintln!(
                    " WARN testhost: Some of the recorded exchanges have not been replayed count={} leftovers={leftovers:?}",
                    leftovers.len()
                );
            }
        });
    }
}

/// The settings of `--settings-json` as kwctl reads them: none or `null` is `{}`, anything but an
/// object is refused.
fn settings(json: Option<&str>) -> Result<Value> {
    let Some(text) = json else {
        return Ok(json!({}));
    };
    match serde_json::from_str(text).map_err(|e| anyhow!("Cannot parse settings JSON: {e}"))? {
        Value::Null => Ok(json!({})),
        object @ Value::Object(_) => Ok(object),
        _ => bail!("Invalid settings in CRD, not an object (--settings-json)"),
    }
}

/// `testhost run`, in kwctl's order: settings, request, module and metadata, the session,
/// loading the module, validating the settings, then `validate`. Errors before the evaluation
/// are the host's (exit 1); everything after it is in the printed response.
pub fn run(args: &RunArgs, verbose: bool) -> Result<AdmissionResponse> {
    let settings = settings(args.settings_json.as_deref())?;
    let path = args.request_path.display();
    let text = std::fs::read_to_string(&args.request_path)
        .with_context(|| format!("Error opening request file {path}"))?;
    let request: Value = serde_json::from_str(&text)
        .with_context(|| format!("cannot parse request file {path} as JSON"))?;
    let request = ValidateRequest::build(&request)?;
    let module = PolicyModule::open(&args.policy)?;
    let allow_list = module.allow_list(args.allow_context_aware);
    // kwctl reads the session lazily (and panics on a bad file); the test host reads it up front
    // and says which file is wrong and why
    let replayer = args
        .replay_host_capabilities_interactions
        .as_deref()
        .map(Replayer::load)
        .transpose()?;
    let state = HostState {
        allow_list,
        replayer,
        verbose,
        ..Default::default()
    };
    let policy = module.load(state)?;
    let validation = policy.validate_settings(&settings);
    if !validation.valid {
        policy.warn_leftovers();
        bail!(
            "Provided settings are not valid: {}",
            validation.message.unwrap_or_default()
        );
    }
    let response = policy.validate(&request, &settings);
    policy.warn_leftovers();
    Ok(response)
}

/// `testhost protocol-version`: what the module reports, checked as `kwctl annotate` checks it.
pub fn protocol_version(policy: &str, verbose: bool) -> Result<String> {
    let state = HostState {
        verbose,
        ..Default::default()
    };
    PolicyModule::open(policy)?.load(state)?.protocol_version()
}

#[cfg(test)]
#[path = "e2e_tests.rs"]
mod e2e_tests;
