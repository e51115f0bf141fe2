//! The lookups the decision and the mutation need, answered through a [`Cluster`], with the API
//! version of each kind chosen as the settings say.
//!
//! With `auto` (the default) a kind is read at v1beta2 and, when the API server does not serve it
//! there, at v1beta1; the version found is tried first for the other kinds of the same provider
//! within the request. With an explicit version, a kind not served there is looked up at the other
//! version too, so that a wrong setting is a failed lookup naming the setting, never "none".

use std::collections::BTreeMap;

use crate::capi::Object;
use crate::catalogue::{self, ReferrerKind, Resource, Version};
use crate::cluster::{self, Cluster, Get, Read};
use crate::decision::{ClusterState, Lookups};
use crate::error::{Failure, LookupError};
use crate::references::{self, Candidate};
use crate::settings::{Settings, VersionChoice};

/// Lookups in one namespace, for one request.
pub struct HostLookups<'a> {
    cluster: &'a dyn Cluster,
    settings: &'a Settings,
    namespace: &'a str,
    /// The version each provider answered at so far.
    found: BTreeMap<&'static str, Version>,
}

impl<'a> HostLookups<'a> {
    pub fn new(cluster: &'a dyn Cluster, settings: &'a Settings, namespace: &'a str) -> Self {
        HostLookups {
            cluster,
            settings,
            namespace,
            found: BTreeMap::new(),
        }
    }

    /// Runs `read` at the version the settings choose, then at the other one when the first is
    /// not served (see the module's documentation).
    fn at_served_version<T>(
        &mut self,
        resource: &Resource,
        mut read: impl FnMut(&dyn Cluster, Version) -> Result<T, LookupError>,
    ) -> Result<T, LookupError> {
        let choice = self.settings.version(resource.setting);
        let first = match choice {
            VersionChoice::Auto => self
                .found
                .get(resource.provider)
                .copied()
                .unwrap_or(Version::V1beta2),
            VersionChoice::Fixed(version) => version,
        };
        let not_served = match read(self.cluster, first) {
            Ok(answer) => {
                self.found.insert(resource.provider, first);
                return Ok(answer);
            }
            Err(error) if error.failure == Failure::NotServed => error,
            Err(error) => return Err(error),
        };
        let second = first.other();
        match (read(self.cluster, second), choice) {
            (Ok(answer), VersionChoice::Auto) => {
                self.found.insert(resource.provider, second);
                Ok(answer)
            }
            (Ok(_), VersionChoice::Fixed(_)) => Err(LookupError {
                failure: Failure::WrongVersion {
                    setting: resource.setting,
                    served: second,
                },
                ..not_served
            }),
            // Served at neither: the first answer says so.
            (Err(error), _) if error.failure == Failure::NotServed => Err(not_served),
            (Err(error), _) => Err(error),
        }
    }

    fn list(&mut self, resource: &'static Resource) -> Result<Vec<Object>, LookupError> {
        let namespace = self.namespace;
        self.at_served_version(resource, |cluster, version| {
            cluster::list(cluster, resource, version, namespace)
        })
    }

    fn get(
        &mut self,
        resource: &'static Resource,
        name: &str,
        read: Read,
    ) -> Result<Option<Object>, LookupError> {
        let namespace = self.namespace;
        self.at_served_version(resource, |cluster, version| {
            cluster::get(
                cluster,
                &Get {
                    resource,
                    version,
                    namespace,
                    name,
                    read,
                },
            )
        })
    }

    /// One referrer by name (the owner of a new machine), as the decision would see it.
    pub fn referrer(
        &mut self,
        kind: &'static ReferrerKind,
        name: &str,
    ) -> Result<Option<Candidate>, LookupError> {
        let found = self.get(&kind.resource, name, Read::Cached)?;
        Ok(found.map(|object| references::candidate_of(kind.shape, &object)))
    }

    /// The Metal3MachineTemplate `name`, read directly: it may have been created a moment ago,
    /// after the cache's last refresh.
    pub fn metal3_machine_template(&mut self, name: &str) -> Result<Option<Object>, LookupError> {
        self.get(&catalogue::METAL3_MACHINE_TEMPLATE, name, Read::Direct)
    }
}

impl Lookups for HostLookups<'_> {
    fn referrers(&mut self, kind: &'static ReferrerKind) -> Result<Vec<Candidate>, LookupError> {
        let listed = self.list(&kind.resource)?;
        Ok(listed
            .iter()
            .map(|object| references::candidate_of(kind.shape, object))
            .collect())
    }

    /// A cached read is enough: a Cluster deleted a moment ago only delays the garbage collector,
    /// which retries denied deletions.
    fn cluster(&mut self, name: &str) -> Result<ClusterState, LookupError> {
        let found = self.get(&catalogue::CLUSTER, name, Read::Cached)?;
        Ok(match found {
            None => ClusterState::Gone,
            Some(c) if c.metadata.is_deleting() => ClusterState::Deleting,
            Some(_) => ClusterState::Live,
        })
    }
}
