//! Loading a policy module into a waPC host backed by wasmtime.

use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{anyhow, Result};
use wasmtime_provider::wasmtime;

use crate::host::HostState;

/// A loaded policy.
pub struct Policy {
    host: wapc::WapcHost,
    state: Arc<Mutex<HostState>>,
}

/// Compiles `wasm` and instantiates it (running its waPC/WASI start functions) with `callback`
/// answering its host calls. The module gets the same WASI context kwctl gives policies:
/// inherited stdio, no arguments, no environment, no directories. Every command that runs a
/// policy loads it here, whatever answers its host calls.
pub fn instantiate(
    wasm: &[u8],
    origin: &str,
    enable_cache: bool,
    callback: Box<wapc::HostCallback>,
) -> Result<wapc::WapcHost> {
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
    wapc::WapcHost::new(Box::new(provider), Some(callback))
        .map_err(|e| anyhow!("cannot initialise policy {origin}: {e}"))
}

/// What answers a module's host calls: `(state, binding, namespace, operation, payload)` to the
/// answer's bytes or an error text.
pub type Answer<S> = fn(&mut S, &str, &str, &str, &[u8]) -> std::result::Result<Vec<u8>, String>;

/// [`instantiate`] with `answer` called on the shared `state` for every host call.
pub fn instantiate_with<S: Send + 'static>(
    wasm: &[u8],
    origin: &str,
    enable_cache: bool,
    state: &Arc<Mutex<S>>,
    answer: Answer<S>,
) -> Result<wapc::WapcHost> {
    let state = state.clone();
    let callback =
        move |_id: u64,
              binding: &str,
              namespace: &str,
              operation: &str,
              payload: &[u8]|
              -> std::result::Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>> {
            let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
            answer(&mut state, binding, namespace, operation, payload).map_err(|e| e.into())
        };
    instantiate(wasm, origin, enable_cache, Box::new(callback))
}

impl Policy {
    /// Loads `wasm` (see [`instantiate`]) with `state` answering its host calls.
    pub fn load(wasm: &[u8], origin: &str, enable_cache: bool, state: HostState) -> Result<Self> {
        let state = Arc::new(Mutex::new(state));
        let host = instantiate_with(wasm, origin, enable_cache, &state, HostState::host_call)?;
        Ok(Self { host, state })
    }

    /// Calls a waPC function of the guest.
    pub fn call(&self, operation: &str, payload: &[u8]) -> Result<Vec<u8>, wapc::errors::Error> {
        self.host.call(operation, payload)
    }

    /// Runs `f` on the mutable host state (e.g. to load a fresh session).
    pub fn with_state_mut<T>(&self, f: impl FnOnce(&mut HostState) -> T) -> T {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut st)
    }

    /// Runs `f` on the host state (e.g. to inspect the session leftovers).
    pub fn with_state<T>(&self, f: impl FnOnce(&HostState) -> T) -> T {
        let st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        f(&st)
    }
}
