//! `testhost`: runs a Kubewarden waPC policy module the way `kwctl run` does, for machines
//! without kwctl, answering its Kubernetes calls from a recorded session file (kwctl's replay
//! mode). The command line only; the engine is [`engine`].

mod admission;
mod bench;
mod engine;
mod host;
mod kube;
mod logging;
mod metadata;
mod session;
mod simulate;

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::engine::{load_settings, read_policy, Policy, RunArgs, SettingsArgs};
use crate::host::HostState;

/// When set (to anything but `0` or the empty string), `run` exits with [`GUEST_FAILURE_EXIT`]
/// if calling `validate` failed inside of the guest. kwctl exits 0 then, the default here too.
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
    ProtocolVersion(ModuleArgs),
    /// Compare the policy with a baseline on namespaces from bench/make_namespace.py; prints a table
    BenchCompare(bench::CompareArgs),
    /// Run seeded lifecycle simulations of the controllers around the policy and print the table
    Simulate(simulate::SimulateArgs),
}

#[derive(Debug, Args)]
struct ValidateSettingsArgs {
    #[command(flatten)]
    settings: SettingsArgs,

    #[command(flatten)]
    module: ModuleArgs,
}

#[derive(Debug, Args)]
struct ModuleArgs {
    /// Turn off usage of wasmtime cache
    #[arg(long)]
    disable_wasmtime_cache: bool,

    /// Policy module: a path to a .wasm file
    policy: String,
}

impl ModuleArgs {
    /// The module with no host calls to answer (settings and protocol version need none).
    fn load(&self, verbose: bool) -> Result<Policy> {
        let (origin, wasm) = read_policy(&self.policy)?;
        let state = HostState {
            verbose,
            ..Default::default()
        };
        Policy::load(&wasm, &origin, !self.disable_wasmtime_cache, state)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init(cli.verbose);
    let verbose = cli.verbose;
    let result = match cli.command {
        Command::Run(args) => run(&args, verbose),
        Command::ValidateSettings(args) => (|| {
            let settings = load_settings(&args.settings)?;
            let response = args.module.load(verbose)?.validate_settings(&settings);
            print_line(&serde_json::to_string(&response)?)?;
            Ok(if response.valid {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        })(),
        Command::ProtocolVersion(args) => (|| {
            print_line(&args.load(verbose)?.protocol_version()?)?;
            Ok(ExitCode::SUCCESS)
        })(),
        Command::BenchCompare(args) => bench::compare(args),
        Command::Simulate(args) => simulate::run(args, verbose),
    };
    result.unwrap_or_else(|e| {
        eprintln!("{}", render_error(&e));
        ExitCode::from(1)
    })
}

/// Formats an error like a Rust `main` returning `anyhow::Result` (as kwctl does), without the
/// backtrace `RUST_BACKTRACE` would add.
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

pub fn print_line(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|_| out.flush())
        .context("cannot write to stdout")
}

fn run(args: &RunArgs, verbose: bool) -> Result<ExitCode> {
    let prepared = engine::prepare(args, verbose)?;
    let (response, guest_failed) = prepared
        .policy
        .validate(&prepared.request, &prepared.settings)?;
    prepared.policy.warn_leftovers();
    print_line(&serde_json::to_string(&response)?)?;
    let fail_on_guest_error =
        std::env::var(FAIL_ON_GUEST_ERROR_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
    Ok(if guest_failed && fail_on_guest_error {
        ExitCode::from(GUEST_FAILURE_EXIT)
    } else {
        ExitCode::SUCCESS
    })
}
