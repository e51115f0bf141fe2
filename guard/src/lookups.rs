//! What the deletion decision and the mutation need to know of the cluster: the [`Lookups`]
//! port. The policy answers it through the Kubewarden host (`HostLookups` in the policy crate);
//! tests and template-cleanup answer it from memory.

use crate::capi::Object;
use crate::catalogue::{ReferrerKind, TemplateClass};
use crate::error::LookupError;
use crate::references::Candidate;

/// What is known of one owning Cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterState {
    Live,
    Deleting,
    Gone,
}

/// The objects of one kind the catalogue does not know whole, listed for a scan.
#[derive(Debug, Clone, PartialEq)]
pub struct Scanned {
    pub kind: String,
    /// The catalogue's entry when the kind is one it knows, served only at versions it does not:
    /// the decision then applies the entry's implied kinds and keeper rules where the fields
    /// read the same.
    pub known: Option<&'static ReferrerKind>,
    pub objects: Vec<Object>,
}

/// The decision and the mutation ask through this trait; `HostLookups` answers from the host,
/// tests from memory. Every lookup is in the namespace of the request.
pub trait Lookups {
    /// The objects of `kind`; none when the kind is not installed, or when its CRD serves only
    /// versions the policy cannot read (then [`Lookups::scanned`] reads it).
    fn referrers(&mut self, kind: &'static ReferrerKind) -> Result<Vec<Candidate>, LookupError>;

    /// The installed kinds that may name a template of `class` and that the catalogue cannot
    /// read field by field, each listed whole for a scan: kinds it does not know in the class's
    /// scanned groups, known kinds served only at versions it does not know, and CRDs named like
    /// a catalogue entry that declare another kind. Sorted by kind.
    fn scanned(
        &mut self,
        class: TemplateClass,
        node_reuse: bool,
    ) -> Result<Vec<Scanned>, LookupError>;

    /// One object of `kind` by name (the owner of a new machine), as the decision would see it.
    fn referrer(
        &mut self,
        kind: &'static ReferrerKind,
        name: &str,
    ) -> Result<Option<Candidate>, LookupError>;

    /// The state of the Cluster `name`.
    fn cluster(&mut self, name: &str) -> Result<ClusterState, LookupError>;

    /// The Metal3MachineTemplate `name`, read past the cache: it may have been created a moment
    /// ago.
    fn metal3_machine_template(&mut self, name: &str) -> Result<Option<Object>, LookupError>;
}
