//! `testhost`: runs this project's compiled policy the way `kwctl run` does, answering its
//! Kubernetes calls from a kwctl session file, for machines without kwctl; benchmarks it on the
//! simulation's API server; simulates the controllers around it. The command line only; the engine is
//! [`engine`].

mod admission;
mod apiserver;
mod bench;
mod engine;
mod host;
mod session;
mod simulate;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::engine::RunArgs;

#[derive(Debug, Parser)]
#[command(
    name = "testhost",
    version,
    about = "Runs a Kubewarden policy (waPC, wasm32-wasip1) like `kwctl run`, replaying host capability sessions"
)]
struct Cli {
    /// Print host calls and the policy's debug log events on stderr
    #[arg(short, long, global = true)]
    verbose: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate the settings, then evaluate a request; prints the AdmissionResponse JSON
    Run(RunArgs),
    /// Print the waPC protocol version the policy reports (the check `kwctl annotate` makes)
    ProtocolVersion {
        /// Policy module: a path to a .wasm file
        policy: String,
    },
    /// Time the policy on namespaces of the simulation's objects and API server; prints a table
    Bench(bench::BenchArgs),
    /// Run seeded lifecycle simulations of the controllers around the policy and print the table
    Simulate(simulate::SimulateArgs),
    /// Serve a state file of objects as kube-apiserver does, DELETEs of templates judged by the
    /// policy as a validating webhook (template-cleanup's end to end)
    Apiserver(apiserver::http::ApiServerArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let verbose = cli.verbose;
    let result = match cli.command {
        Command::Run(args) => engine::run(&args, verbose).and_then(|response| {
            println!("{}", serde_json::to_string(&response)?);
            Ok(ExitCode::SUCCESS)
        }),
        Command::ProtocolVersion { policy } => {
            engine::protocol_version(&policy, verbose).map(|version| {
                println!("{version}");
                ExitCode::SUCCESS
            })
        }
        Command::Bench(args) => bench::bench(args),
        Command::Simulate(args) => simulate::run(args, verbose),
        Command::Apiserver(args) => apiserver::http::serve(args, verbose),
    };
    result.unwrap_or_else(|e| {
        // as a Rust `main` returning `anyhow::Result` prints it (kwctl's way), causes on one line
        eprintln!("Error: {e:#}");
        ExitCode::from(1)
    })
}
