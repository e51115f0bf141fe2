//! Prints `log` records of the waPC/wasmtime crates on stderr (for example
//! the full trap of a failed guest call, which includes its cause), like
//! kwctl's log subscriber at its default `info` level.

use log::{Level, LevelFilter, Log, Metadata, Record};

struct StderrLogger {
    max: Level,
}

/// Targets that are chatty and of no use to a policy author (kwctl turns
/// them off too).
fn is_noisy(target: &str) -> bool {
    [
        "cranelift",
        "regalloc",
        "wasmtime_cache",
        "wasmtime_internal_cache",
        "walrus",
    ]
    .iter()
    .any(|prefix| target.starts_with(prefix))
}

impl Log for StderrLogger {
    fn enabled(&self, metadata: &Metadata) -> bool {
        let target = metadata.target();
        // wasmtime's own debug records are about its internals
        let wasmtime_debug = metadata.level() > Level::Info
            && target.starts_with("wasmtime")
            && !target.starts_with("wasmtime_provider");
        metadata.level() <= self.max && !is_noisy(target) && !wasmtime_debug
    }

    fn log(&self, record: &Record) {
        if self.enabled(record.metadata()) {
            eprintln!(
                "{:>5} {}: {}",
                record.level(),
                record.target(),
                record.args()
            );
        }
    }

    fn flush(&self) {}
}

/// Installs the logger; `verbose` adds debug records.
pub fn init(verbose: bool) {
    let max = if verbose { Level::Debug } else { Level::Info };
    if log::set_boxed_logger(Box::new(StderrLogger { max })).is_ok() {
        log::set_max_level(if verbose {
            LevelFilter::Debug
        } else {
            LevelFilter::Info
        });
    }
}
