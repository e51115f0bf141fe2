//! `testhost`: runs a Kubewarden waPC policy module the way `kwctl run`
//! does, for machines without kwctl.  Host capability calls are answered
//! from a recorded session file (kwctl's replay mode).

mod admission;
mod bench;
mod host;
mod logging;
mod metadata;
mod runtime;
mod session;
mod simulate;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use serde_json::json;

use crate::admission::{
    settings_from_value, AdmissionResponse, SettingsValidationResponse, ValidateRequest,
    ValidationResponse,
};
use crate::host::HostState;
use crate::metadata::{ContextAwareResource, MetadataSource};
use crate::runtime::Policy;
use crate::session::Replayer;

/// Environment variable naming the metadata.yml of a module that is not
/// annotated (same as `--metadata`).
const METADATA_ENV: &str = "TESTHOST_METADATA";
/// When set (to anything but `0` or the empty string), `run` exits with
/// [`GUEST_FAILURE_EXIT`] if calling `validate` failed inside of the guest.
/// kwctl exits 0 in that case, which is the default here too.
const FAIL_ON_GUEST_ERROR_ENV: &str = "TESTHOST_FAIL_ON_GUEST_ERROR";
const GUEST_FAILURE_EXIT: u8 = 3;

#[derive(Debug, Parser)]
#[command(
    name = "testhost",
    version,
    about = "Runs a Kubewarden policy (waPC, wasm32-wasip1) like `kwctl run`, replaying host capability sessions"
)]
struct Cli {
    /// Print host calls and debug policy log events on stderr
    #[arg(short, long, global = true)]
    verbose: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate the settings, then evaluate a request; prints the AdmissionResponse JSON
    Run(RunArgs),
    /// Validate the settings only; prints the SettingsValidationResponse JSON
    ValidateSettings(ValidateSettingsArgs),
    /// Print the waPC protocol version reported by the policy
    ProtocolVersion(ProtocolVersionArgs),
    /// Evaluate a request many times in one loaded module and print how long `validate` took
    Bench(bench::BenchArgs),
    /// Compare the policy with a baseline on namespaces from bench/make_namespace.py; prints a table
    BenchCompare(bench::CompareArgs),
    /// Run seeded lifecycle simulations of the controllers around the policy and print the table
    Simulate(simulate::SimulateArgs),
}

#[derive(Debug, Args)]
struct SettingsArgs {
    /// File containing the settings for this policy (YAML or JSON); wins over --settings-json
    #[arg(short = 's', long, value_name = "PATH")]
    settings_path: Option<String>,

    /// JSON string containing the settings for this policy
    #[arg(long, value_name = "VALUE")]
    settings_json: Option<String>,
}

#[derive(Debug, Args)]
struct RunArgs {
    /// File containing the Kubernetes admission request object in JSON format ('-' for stdin)
    #[arg(short = 'r', long, value_name = "PATH")]
    request_path: String,

    #[command(flatten)]
    settings: SettingsArgs,

    /// Grant access to the Kubernetes resources listed in the policy's `contextAwareResources`
    #[arg(long)]
    allow_context_aware: bool,

    /// Answer host capability calls from this session file (strictly in order)
    #[arg(long, value_name = "FILE")]
    replay_host_capabilities_interactions: Option<PathBuf>,

    /// Validate a raw request
    #[arg(long)]
    raw: bool,

    /// The runtime to use to execute this policy (testhost runs only 'kubewarden')
    #[arg(short = 'e', long, value_name = "MODE", value_parser = ["opa", "gatekeeper", "kubewarden", "wasi"])]
    execution_mode: Option<String>,

    /// Turn off usage of wasmtime cache
    #[arg(long)]
    disable_wasmtime_cache: bool,

    /// metadata.yml to use when the module is not annotated (default: env TESTHOST_METADATA, then ./metadata.yml if present)
    #[arg(long, value_name = "FILE")]
    metadata: Option<PathBuf>,

    /// Policy module: a path to a .wasm file (optionally with a file:// prefix)
    policy: String,
}

#[derive(Debug, Args)]
struct ValidateSettingsArgs {
    #[command(flatten)]
    settings: SettingsArgs,

    /// Turn off usage of wasmtime cache
    #[arg(long)]
    disable_wasmtime_cache: bool,

    /// Policy module: a path to a .wasm file
    policy: String,
}

#[derive(Debug, Args)]
struct ProtocolVersionArgs {
    /// Turn off usage of wasmtime cache
    #[arg(long)]
    disable_wasmtime_cache: bool,

    /// Policy module: a path to a .wasm file
    policy: String,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init(cli.verbose);
    let result = match cli.command {
        Command::Run(args) => run(args, cli.verbose),
        Command::ValidateSettings(args) => validate_settings_cmd(args, cli.verbose),
        Command::ProtocolVersion(args) => protocol_version_cmd(args, cli.verbose),
        Command::Bench(args) => bench::run(args, cli.verbose),
        Command::BenchCompare(args) => bench::compare(args, cli.verbose),
        Command::Simulate(args) => simulate::run(args, cli.verbose),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{}", render_error(&e));
            ExitCode::from(1)
        }
    }
}

/// Formats an error like a Rust `main` returning `anyhow::Result` (as
/// kwctl does), without the backtrace `RUST_BACKTRACE` would add.
fn render_error(e: &anyhow::Error) -> String {
    let mut text = format!("Error: {e}");
    let causes: Vec<String> = e.chain().skip(1).map(ToString::to_string).collect();
    if !causes.is_empty() {
        text.push_str("\n\nCaused by:");
        for (i, cause) in causes.iter().enumerate() {
            if causes.len() == 1 {
                text.push_str(&format!("\n    {cause}"));
            } else {
                text.push_str(&format!("\n    {i}: {cause}"));
            }
        }
    }
    text
}

/// Reads the settings like kwctl: a YAML/JSON file wins over inline JSON;
/// nothing means `{}`; anything but an object or `null` is refused.
fn load_settings(args: &SettingsArgs) -> Result<serde_json::Value> {
    if let Some(path) = &args.settings_path {
        let contents = std::fs::read_to_string(path)
            .map_err(|e| anyhow!("Cannot open settings file {path}: {e}"))?;
        let value: serde_json::Value = serde_yaml::from_str(&contents)
            .map_err(|e| anyhow!("Cannot parse settings file {path}: {e}"))?;
        settings_from_value(value).map_err(|e| anyhow!("{e} (settings file {path})"))
    } else if let Some(text) = &args.settings_json {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| anyhow!("Cannot parse settings JSON: {e}"))?;
        settings_from_value(value).map_err(|e| anyhow!("{e} (--settings-json)"))
    } else {
        Ok(json!({}))
    }
}

fn read_request(path: &str) -> Result<serde_json::Value> {
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
fn read_policy(uri: &str) -> Result<(String, Vec<u8>)> {
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

fn check_execution_mode(user: Option<&str>, metadata: &MetadataSource) -> Result<()> {
    if let Some(mode) = user {
        if mode != "kubewarden" {
            bail!("testhost runs only waPC policies (execution mode 'kubewarden'), not '{mode}'");
        }
    }
    let declared = match metadata {
        MetadataSource::Annotated(m) | MetadataSource::File(_, m) => m.execution_mode.as_deref(),
        MetadataSource::None => None,
    };
    match declared {
        None | Some("kubewarden-wapc") => Ok(()),
        Some(other) => bail!(
            "the policy metadata declares executionMode '{other}': testhost runs only waPC policies (kubewarden-wapc)"
        ),
    }
}

/// The Kubernetes resources the policy may read during this run, with the
/// messages kwctl prints.
fn context_aware_allow_list(
    allow_context_aware: bool,
    metadata: &MetadataSource,
) -> BTreeSet<ContextAwareResource> {
    let declared = metadata.context_aware_resources();
    if !allow_context_aware {
        if !declared.is_empty() {
            eprintln!(" WARN testhost: Policy requires access to Kubernetes resources at evaluation time. During this execution the access to Kubernetes resources is denied. This can cause the policy to not behave properly");
            eprintln!(" WARN testhost: Carefully review which types of Kubernetes resources the policy needs via the `inspect` command, then run the policy using the `--allow-context-aware` flag.");
        }
        return BTreeSet::new();
    }
    match metadata {
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

fn resolve_metadata(wasm: &[u8], origin: &str, flag: Option<&Path>) -> Result<MetadataSource> {
    let env_path = std::env::var_os(METADATA_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let explicit = flag.map(Path::to_path_buf).or(env_path);
    metadata::resolve(wasm, origin, explicit.as_deref(), Path::new("metadata.yml"))
}

/// A policy module read and checked like kwctl does before running it: the file, its metadata
/// (annotated, or a metadata.yml) and its execution mode.
pub(crate) struct PolicyModule {
    pub origin: String,
    pub wasm: Vec<u8>,
    pub metadata: MetadataSource,
}

impl PolicyModule {
    /// Reads `uri`, finds its metadata (`metadata_flag`, else `$TESTHOST_METADATA`, else
    /// ./metadata.yml) and refuses anything but a waPC policy (`execution_mode` is the user's
    /// `--execution-mode`).
    pub fn open(
        uri: &str,
        metadata_flag: Option<&Path>,
        execution_mode: Option<&str>,
    ) -> Result<Self> {
        let (origin, wasm) = read_policy(uri)?;
        let metadata = resolve_metadata(&wasm, &origin, metadata_flag)?;
        check_execution_mode(execution_mode, &metadata)?;
        Ok(Self {
            origin,
            wasm,
            metadata,
        })
    }

    /// Whether the metadata says `policyType: raw`.
    pub fn is_raw(&self) -> bool {
        match &self.metadata {
            MetadataSource::Annotated(m) | MetadataSource::File(_, m) => m.is_raw(),
            MetadataSource::None => false,
        }
    }

    /// Loads the module with `state` answering its host calls.
    pub fn load(&self, enable_cache: bool, state: HostState) -> Result<Policy> {
        Policy::load(&self.wasm, &self.origin, enable_cache, state)
    }
}

/// What `run` and `bench` evaluate: the policy loaded with its host state, settings that it
/// accepted, the request and the session it is answered from.
pub(crate) struct Prepared {
    pub policy: Policy,
    pub settings: serde_json::Value,
    pub request: ValidateRequest,
    pub session: Option<Replayer>,
}

/// Everything `run` does before calling `validate`, in kwctl's order: settings, request, policy,
/// metadata (execution mode, policyType, contextAwareResources), the session, loading the module,
/// validating the settings.
pub(crate) fn prepare(args: &RunArgs, verbose: bool) -> Result<Prepared> {
    let settings = load_settings(&args.settings)?;
    let request_json = read_request(&args.request_path)?;
    let module = PolicyModule::open(
        &args.policy,
        args.metadata.as_deref(),
        args.execution_mode.as_deref(),
    )?;
    let allow_list = context_aware_allow_list(args.allow_context_aware, &module.metadata);
    let request = ValidateRequest::build(&request_json, args.raw || module.is_raw())?;

    // kwctl reads the session lazily (and panics on a bad file); testhost
    // reads it up front and reports which file is wrong and why
    let session = args
        .replay_host_capabilities_interactions
        .as_deref()
        .map(Replayer::load)
        .transpose()?;
    if session.is_none() && !allow_list.is_empty() {
        // kwctl would connect to the cluster of the current kubeconfig here
        bail!(
            "testhost cannot connect to a Kubernetes cluster: with --allow-context-aware, \
             pass the recorded answers with --replay-host-capabilities-interactions FILE"
        );
    }

    let state = HostState {
        allow_list,
        replayer: session.clone(),
        verbose,
        responder: None,
    };
    let policy = module.load(!args.disable_wasmtime_cache, state)?;

    let settings_validation = call_validate_settings(&policy, &settings);
    if !settings_validation.valid {
        warn_leftovers(&policy);
        bail!(
            "Provided settings are not valid: {}",
            settings_validation.message.unwrap_or_default()
        );
    }
    Ok(Prepared {
        policy,
        settings,
        request,
        session,
    })
}

fn call_validate_settings(
    policy: &Policy,
    settings: &serde_json::Value,
) -> SettingsValidationResponse {
    let settings_str = match serde_json::to_string(settings) {
        Ok(s) => s,
        Err(err) => {
            return SettingsValidationResponse {
                valid: false,
                message: Some(format!("could not marshal settings: {err}")),
            }
        }
    };
    match policy.call("validate_settings", settings_str.as_bytes()) {
        Ok(res) => serde_json::from_slice(&res).unwrap_or_else(|e| SettingsValidationResponse {
            valid: false,
            message: Some(format!("error: InvalidResponseWithError({e:?})")),
        }),
        Err(err) => SettingsValidationResponse {
            valid: false,
            message: Some(format!(
                "Error invoking settings validation callback: {err:?}"
            )),
        },
    }
}

/// Calls `validate` and builds the AdmissionResponse like kwctl.  The
/// boolean tells whether the guest call itself failed.
fn call_validate(
    policy: &Policy,
    request: &ValidateRequest,
    settings: &serde_json::Value,
) -> Result<(AdmissionResponse, bool)> {
    let uid = request.uid();
    let req_obj = request.object_for_diff()?;
    let params = json!({
        "request": request.to_value()?,
        "settings": settings,
    });
    let payload = serde_json::to_string(&params)?;

    Ok(match policy.call("validate", payload.as_bytes()) {
        Ok(res) => {
            let response = match serde_json::from_slice::<ValidationResponse>(&res) {
                Ok(pvr) => {
                    AdmissionResponse::from_policy_validation_response(uid, req_obj.as_ref(), &pvr)
                        .unwrap_or_else(|e| {
                            AdmissionResponse::reject_internal_server_error(
                                uid,
                                format!("invalid response format: {e}"),
                            )
                        })
                }
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

fn warn_leftovers(policy: &Policy) {
    policy.with_state(|st| {
        if let Some(replayer) = &st.replayer {
            let leftovers = replayer.leftovers();
            if !leftovers.is_empty() {
                let requests: Vec<_> = leftovers.iter().map(|x| &x.request).collect();
                eprintln!(
                    " WARN testhost: Some of the recorded exchanges have not been replayed count={} leftovers={requests:?}",
                    leftovers.len()
                );
            }
        }
    });
}

fn print_line(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|_| out.flush())
        .context("cannot write to stdout")
}

fn fail_on_guest_error() -> bool {
    std::env::var(FAIL_ON_GUEST_ERROR_ENV)
        .map(|v| !v.is_empty() && v != "0")
        .unwrap_or(false)
}

fn run(args: RunArgs, verbose: bool) -> Result<ExitCode> {
    let Prepared {
        policy,
        settings,
        request,
        ..
    } = prepare(&args, verbose)?;
    let (response, guest_failed) = call_validate(&policy, &request, &settings)?;
    warn_leftovers(&policy);
    print_line(&serde_json::to_string(&response)?)?;

    if guest_failed && fail_on_guest_error() {
        return Ok(ExitCode::from(GUEST_FAILURE_EXIT));
    }
    Ok(ExitCode::SUCCESS)
}

fn validate_settings_cmd(args: ValidateSettingsArgs, verbose: bool) -> Result<ExitCode> {
    let settings = load_settings(&args.settings)?;
    let (origin, wasm) = read_policy(&args.policy)?;
    let state = HostState {
        verbose,
        ..Default::default()
    };
    let policy = Policy::load(&wasm, &origin, !args.disable_wasmtime_cache, state)?;
    let response = call_validate_settings(&policy, &settings);
    print_line(&serde_json::to_string(&response)?)?;
    Ok(if response.valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn protocol_version_cmd(args: ProtocolVersionArgs, verbose: bool) -> Result<ExitCode> {
    let (origin, wasm) = read_policy(&args.policy)?;
    let state = HostState {
        verbose,
        ..Default::default()
    };
    let policy = Policy::load(&wasm, &origin, !args.disable_wasmtime_cache, state)?;
    print_line(&protocol_version(&policy)?)?;
    Ok(ExitCode::SUCCESS)
}

/// Calls `protocol_version` like `kwctl annotate` does; only `v1` is a
/// version annotate accepts for a waPC policy.
fn protocol_version(policy: &Policy) -> Result<String> {
    let res = policy.call("protocol_version", &[]).map_err(|e| {
        anyhow!(
            "Cannot compute ProtocolVersion used by the policy: cannot invoke 'protocol_version' waPC function : {e}"
        )
    })?;
    let version: String = serde_json::from_slice(&res).map_err(|e| {
        anyhow!(
            "Cannot compute ProtocolVersion used by the policy: cannot create ProtocolVersion object from {:?}: {e}",
            String::from_utf8_lossy(&res)
        )
    })?;
    match version.as_str() {
        "v1" => Ok(version),
        "Unknown" => bail!(
            "the policy reports protocol version 'Unknown': kwctl annotate refuses it (Must specify a valid protocol version)"
        ),
        other => bail!(
            "Cannot compute ProtocolVersion used by the policy: unknown variant `{other}`, expected `Unknown` or `v1`"
        ),
    }
}

#[cfg(test)]
mod e2e_tests;
