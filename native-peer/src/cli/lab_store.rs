//! `--store URL` and `--peer-name NAME` (also `PERFPEER_STORE`, `PERFPEER_NAME`) of `serve`,
//! `test` and `plan run`: a lab's shared PostgreSQL store beside the local one (see
//! `store::lab`). A build without it (a DUT build) has no such flags: a usage error (exit 2).

use std::sync::Arc;

use clap::Args;

use super::UsageError;
use crate::store::Store;

/// The lab store's flags.
#[cfg(feature = "postgres")]
#[derive(Debug, Clone, Args)]
pub(super) struct LabStoreArgs {
    /// Also keep results in a lab's shared PostgreSQL database (postgres://user@host/db; TLS as
    /// libpq reads ?sslmode= and &sslrootcert=), and list the whole lab's results from it. The
    /// local history stays; results wait there while the database cannot be reached.
    #[arg(
        long = "store",
        env = "PERFPEER_STORE",
        value_name = "URL",
        global = true
    )]
    url: Option<String>,
    /// The name this peer's results carry in the lab store (default: the host name).
    #[arg(
        long = "peer-name",
        env = "PERFPEER_NAME",
        value_name = "NAME",
        global = true
    )]
    peer_name: Option<String>,
}

/// No lab store flags in a build without PostgreSQL (a DUT build, whose size budget has no room
/// for them): `--store` is an unknown flag there (exit 2); its results reach a lab's database
/// through the PC end of each test.
#[cfg(not(feature = "postgres"))]
#[derive(Debug, Clone, Args)]
pub(super) struct LabStoreArgs {}

/// The lab store, as a command holds it (nothing in a build without one).
#[cfg(feature = "postgres")]
pub(super) type Lab = Arc<crate::store::lab::LabStore>;
#[cfg(not(feature = "postgres"))]
pub(super) type Lab = std::convert::Infallible;

impl LabStoreArgs {
    /// The lab store the flags name, not yet connected; a usage error for a URL that is not
    /// one.
    #[cfg(feature = "postgres")]
    pub(super) fn lab(&self) -> Result<Option<Lab>, UsageError> {
        let Some(url) = &self.url else {
            return Ok(None);
        };
        let name = self
            .peer_name
            .clone()
            .unwrap_or_else(crate::hostinfo::hostname);
        crate::store::lab::LabStore::new(url, &name)
            .map(|lab| Some(Arc::new(lab)))
            .map_err(|e| UsageError(e.to_string()))
    }

    /// None: this build has no lab store.
    #[cfg(not(feature = "postgres"))]
    pub(super) fn lab(&self) -> Result<Option<Lab>, UsageError> {
        Ok(None)
    }
}

/// Queues `store`'s results for `lab` from now on; said and left out if the outbox cannot be
/// made (the local store keeps them anyway).
#[cfg(feature = "postgres")]
pub(super) fn attach(store: &Arc<Store>, lab: &Lab) -> bool {
    match store.attach_lab(lab.clone()) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("perfpeer: results will not be written to the lab store: {e}");
            false
        }
    }
}

/// Writes what `store` has queued for `lab` before a command exits, for at most a few seconds;
/// says how many results still wait (they go with the next command on this data directory
/// attached to the lab store).
#[cfg(feature = "postgres")]
pub(super) async fn flush(store: &Arc<Store>, lab: &Lab) {
    let waiting =
        crate::store::lab::replicate::drain(store, lab, std::time::Duration::from_secs(5)).await;
    if waiting > 0 {
        let why = lab.state().problem.unwrap_or_default();
        eprintln!(
            "perfpeer: {waiting} result(s) wait for the lab database in the local history ({why})"
        );
    }
}

#[cfg(not(feature = "postgres"))]
pub(super) fn attach(_: &Arc<Store>, lab: &Lab) -> bool {
    match *lab {}
}
