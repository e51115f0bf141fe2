//! The engine every command shares: read a module and its metadata the way kwctl does, load it
//! into waPC on wasmtime with a host answering its calls, and call `validate_settings`,
//! `validate` and `protocol_version`.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{anyhow, bail, Result};
use clap::Args;
use serde_json::{json, Value};
use wasmtime_provider::wasmtime;

use crate::admission::{
    settings_from_value, AdmissionResponse, SettingsValidationResponse, ValidateRequest,
    ValidationResponse,
};
use crate::host::HostState;
use crate::metadata::{self, ContextAwareResource, MetadataSource};
use crate::session::Replayer;

/// Environment variable naming the metadata.yml of a module that is not annotated.
const METADATA_ENV: &str = "TESTHOST_METADATA";

/// The options of `run` (and of `bench`, which times the same evaluation).
#[derive(Debug, Args)]
pub struct RunArgs {
    /// File containing the Kubernetes admission request object in JSON format ('-' for stdin)
    #[arg(short = 'r', long, value_name = "PATH")]
    pub request_path: String,

    #[command(flatten)]
    pub settings: SettingsArgs,

    /// Grant access to the Kubernetes resources listed in the policy's `contextAwareResources`
    #[arg(long)]
    pub allow_context_aware: bool,

    /// Answer host capability calls from this session file (strictly in order)
    #[arg(long, value_name = "FILE")]
    pub replay_host_capabilities_interactions: Option<PathBuf>,

    /// Validate a raw request
    #[arg(long)]
    pub raw: bool,

    /// The runtime to use to execute this policy (testhost runs only 'kubewarden')
    #[arg(short = 'e', long, value_name = "MODE", value_parser = ["opa", "gatekeeper", "kubewarden", "wasi"])]
    pub execution_mode: Option<String>,

    /// Turn off usage of wasmtime cache
    #[arg(long)]
    pub disable_wasmtime_cache: bool,

    /// metadata.yml to use when the module is not annotated (default: env TESTHOST_METADATA, then ./metadata.yml if present)
    #[arg(long, value_name = "FILE")]
    pub metadata: Option<PathBuf>,

    /// Policy module: a path to a .wasm file (optionally with a file:// prefix)
    pub policy: String,
}

#[derive(Debug, Args)]
pub struct SettingsArgs {
    /// File containing the settings for this policy (YAML or JSON); wins over --settings-json
    #[arg(short = 's', long, value_name = "PATH")]
    pub settings_path: Option<String>,

    /// JSON string containing the settings for this policy
    #[arg(long, value_name = "VALUE")]
    pub settings_json: Option<String>,
}

/// Reads the settings like kwctl: a YAML/JSON file wins over inline JSON; nothing means `{}`;
/// anything but an object or `null` is refused.
pub fn load_settings(args: &SettingsArgs) -> Result<Value> {
    if let Some(path) = &args.settings_path {
        let contents = std::fs::read_to_string(path)
            .map_err(|e| anyhow!("Cannot open settings file {path}: {e}"))?;
        let value: Value = serde_yaml::from_str(&contents)
            .map_err(|e| anyhow!("Cannot parse settings file {path}: {e}"))?;
        settings_from_value(value).map_err(|e| anyhow!("{e} (settings file {path})"))
    } else if let Some(text) = &args.settings_json {
        let value: Value =
            serde_json::from_str(text).map_err(|e| anyhow!("Cannot parse settings JSON: {e}"))?;
        settings_from_value(value).map_err(|e| anyhow!("{e} (--settings-json)"))
    } else {
        Ok(json!({}))
    }
}

fn read_request(path: &str) -> Result<Value> {
    let text = if path == "-" {
        let mut buffer = String::new();
        std::io::stdin()
            .read_to_string(&mut buffer)
            .map_err(|e| anyhow!("Error reading request from stdin: {e}"))?;
        buffer
    } else {
        std::fs::read_to_string(path)
            .map_err(|e| anyhow!("Error opening request file {path}; {e}"))?
    };
    serde_json::from_str(&text)
        .map_err(|e| anyhow!("cannot parse request file {path} as JSON: {e}"))
}

/// Resolves the policy argument to a local file and reads it.
pub fn read_policy(uri: &str) -> Result<(String, Vec<u8>)> {
    if uri.ends_with(".yml") || uri.ends_with(".yaml") {
        bail!("testhost cannot run policies defined in a Kubewarden CRD YAML file ({uri}); pass the .wasm module");
    }
    let path = uri.strip_prefix("file://").unwrap_or(uri);
    if path.contains("://") {
        bail!("testhost runs local .wasm files only, cannot fetch {uri}");
    }
    let bytes = std::fs::read(path).map_err(|e| anyhow!("cannot read policy file {path}: {e}"))?;
    if !bytes.starts_with(b"\0asm") {
        bail!("cannot load policy file {path}: not a WebAssembly binary (bad magic number)");
    }
    Ok((path.to_string(), bytes))
}

/// A policy module read and checked like kwctl does before running it: the file, its metadata
/// (annotated, or a metadata.yml) and its execution mode.
pub struct PolicyModule {
    pub origin: String,
    pub wasm: Vec<u8>,
    pub metadata: MetadataSource,
}

impl PolicyModule {
    /// Reads `uri`, finds its metadata (`metadata_flag`, else `$TESTHOST_METADATA`, else
    /// ./metadata.yml) and refuses anything but a waPC policy (`execution_mode`: the user's
    /// `--execution-mode`).
    pub fn open(
        uri: &str,
        metadata_flag: Option<&Path>,
        execution_mode: Option<&str>,
    ) -> Result<Self> {
        let (origin, wasm) = read_policy(uri)?;
        let env_path = std::env::var_os(METADATA_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let explicit = metadata_flag.map(Path::to_path_buf).or(env_path);
        let metadata = metadata::resolve(
            &wasm,
            &origin,
            explicit.as_deref(),
            Path::new("metadata.yml"),
        )?;
        if let Some(mode) = execution_mode.filter(|m| *m != "kubewarden") {
            bail!("testhost runs only waPC policies (execution mode 'kubewarden'), not '{mode}'");
        }
        match metadata.declared().and_then(|m| m.execution_mode.as_deref()) {
            None | Some("kubewarden-wapc") => {}
            Some(other) => bail!(
                "the policy metadata declares executionMode '{other}': testhost runs only waPC policies (kubewarden-wapc)"
            ),
        }
        Ok(Self {
            origin,
            wasm,
            metadata,
        })
    }

    pub fn is_raw(&self) -> bool {
        self.metadata.declared().is_some_and(|m| m.is_raw())
    }

    /// The Kubernetes resources the policy may read, with the messages kwctl prints.
    pub fn allow_list(&self, allow_context_aware: bool) -> BTreeSet<ContextAwareResource> {
        let declared = self.metadata.context_aware_resources();
        if !allow_context_aware {
            if !declared.is_empty() {
                eprintln!(" WARN testhost: Policy requires access to Kubernetes resources at evaluation time. During this execution the access to Kubernetes resources is denied. This can cause the policy to not behave properly");
                eprintln!(" WARN testhost: Carefully review which types of Kubernetes resources the policy needs via the `inspect` command, then run the policy using the `--allow-context-aware` flag.");
            }
            return BTreeSet::new();
        }
        match &self.metadata {
            MetadataSource::Annotated(_) => {}
            MetadataSource::File(path, _) => eprintln!(
                " INFO testhost: Policy is not annotated, context aware resources taken from {}",
                path.display()
            ),
            MetadataSource::None => eprintln!(
                " INFO testhost: Policy is not annotated, access to Kubernetes resources is not allowed"
            ),
        }
        declared
    }

    pub fn load(&self, enable_cache: bool, state: HostState) -> Result<Policy> {
        Policy::load(&self.wasm, &self.origin, enable_cache, state)
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
    /// directories.
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
        // required by policies built by the official Go compiler >= 1.26
        config.wasm_function_references(true);
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
                let mut state = shared.lock().unwrap_or_else(PoisonError::into_inner);
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
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner))
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

    /// Calls `validate` and builds the AdmissionResponse like kwctl; the boolean tells whether
    /// the guest call itself failed.
    pub fn validate(
        &self,
        request: &ValidateRequest,
        settings: &Value,
    ) -> Result<(AdmissionResponse, bool)> {
        let uid = request.uid();
        let payload = json!({"request": request.value(), "settings": settings}).to_string();
        Ok(match self.call("validate", payload.as_bytes()) {
            Ok(res) => {
                let response = match serde_json::from_slice::<ValidationResponse>(&res) {
                    Ok(pvr) => AdmissionResponse::from_policy(uid, request.object_for_diff(), &pvr)
                        .unwrap_or_else(|e| {
                            AdmissionResponse::reject_internal_server_error(
                                uid,
                                format!("invalid response format: {e}"),
                            )
                        }),
                    Err(e) => {
                        eprintln!("ERROR testhost: cannot build validation response from policy result error={e}");
                        AdmissionResponse::reject_internal_server_error(
                            uid,
                            format!("invalid response from policy: {e}"),
                        )
                    }
                };
                (response, false)
            }
            Err(e) => {
                eprintln!("ERROR testhost: waPC communication error error={e}");
                (
                    AdmissionResponse::reject_internal_server_error(uid, e.to_string()),
                    true,
                )
            }
        })
    }

    /// Calls `protocol_version` like `kwctl annotate`; only `v1` is accepted for a waPC policy.
    pub fn protocol_version(&self) -> Result<String> {
        let res = self.call("protocol_version", &[]).map_err(|e| {
            anyhow!("Cannot compute ProtocolVersion used by the policy: cannot invoke 'protocol_version' waPC function : {e}")
        })?;
        let version: String = serde_json::from_slice(&res).map_err(|e| {
            anyhow!(
                "Cannot compute ProtocolVersion used by the policy: cannot create ProtocolVersion object from {:?}: {e}",
                String::from_utf8_lossy(&res)
            )
        })?;
        match version.as_str() {
            "v1" => Ok(version),
            "Unknown" => bail!("the policy reports protocol version 'Unknown': kwctl annotate refuses it (Must specify a valid protocol version)"),
            other => bail!("Cannot compute ProtocolVersion used by the policy: unknown variant `{other}`, expected `Unknown` or `v1`"),
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

/// What `run` and `bench` evaluate: the policy loaded with its session, settings that it
/// accepted, and the request.
pub struct Prepared {
    pub policy: Policy,
    pub settings: Value,
    pub request: ValidateRequest,
}

/// Everything `run` does before calling `validate`, in kwctl's order: settings, request, policy,
/// metadata (execution mode, policyType, contextAwareResources), the session, loading the module,
/// validating the settings.
pub fn prepare(args: &RunArgs, verbose: bool) -> Result<Prepared> {
    let settings = load_settings(&args.settings)?;
    let request_json = read_request(&args.request_path)?;
    let module = PolicyModule::open(
        &args.policy,
        args.metadata.as_deref(),
        args.execution_mode.as_deref(),
    )?;
    let allow_list = module.allow_list(args.allow_context_aware);
    let request = ValidateRequest::build(&request_json, args.raw || module.is_raw())?;
    // kwctl reads the session lazily (and panics on a bad file); testhost reads it up front and
    // reports which file is wrong and why
    let replayer = args
        .replay_host_capabilities_interactions
        .as_deref()
        .map(Replayer::load)
        .transpose()?;
    if replayer.is_none() && !allow_list.is_empty() {
        // kwctl would connect to the cluster of the current kubeconfig here
        bail!(
            "testhost cannot connect to a Kubernetes cluster: with --allow-context-aware, \
             pass the recorded answers with --replay-host-capabilities-interactions FILE"
        );
    }
    let state = HostState {
        allow_list,
        replayer,
        verbose,
        responder: None,
    };
    let policy = module.load(!args.disable_wasmtime_cache, state)?;
    let validation = policy.validate_settings(&settings);
    if !validation.valid {
        policy.warn_leftovers();
        bail!(
            "Provided settings are not valid: {}",
            validation.message.unwrap_or_default()
        );
    }
    Ok(Prepared {
        policy,
        settings,
        request,
    })
}

#[cfg(test)]
#[path = "e2e_tests.rs"]
mod e2e_tests;
