//! What capi-template-guard knows, written once: the policy's wasm shell, template-cleanup and
//! the tests that write the manifests all build on this crate. Everything here is pure: no host,
//! no client, no clock.
//!
//! decision | mutation -> lookups (the port they ask through) -> references (what an object
//! names) -> capi (object views) -> metadata (the object metadata and nullable reading).
//! catalogue (kinds and providers), crds (reading CRDs), settings, message (every sentence) and
//! error serve them. No module imports one that imports it back.

pub mod capi;
pub mod catalogue;
pub mod crds;
pub mod decision;
pub mod error;
pub mod lookups;
pub mod message;
pub mod metadata;
pub mod mutation;
pub mod references;
pub mod settings;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
