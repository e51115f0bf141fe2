//! `template-cleanup`: deletes retired Cluster API templates once nothing needs them, through the
//! guard's refusals (docs/cleanup.md). The command line only; a pass is [`pass::run`].

mod api;
mod cli;
mod error;
mod events;
mod helm;
mod openreports;
mod pass;
mod probe;
mod report;
mod sources;

#[cfg(test)]
mod tests;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Args::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("template-cleanup: cannot start the async runtime: {e}");
            return ExitCode::from(report::CANNOT_RUN);
        }
    };
    ExitCode::from(runtime.block_on(pass::main(args)))
}
