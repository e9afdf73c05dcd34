//! [`DbvtError`]: why a tree operation was refused. The tree is unchanged after any error.

use std::fmt;

use super::ProxyId;
use crate::math::{BatchError, InputError};

/// An error from a [`Dbvt`](crate::dbvt::Dbvt) operation. The tree is unchanged after any error.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DbvtError {
    /// The box, ray, displacement or frustum given is unusable.
    Input(InputError),
    /// A ray of a batch ([`Dbvt::visit_ray_batch`](crate::dbvt::Dbvt::visit_ray_batch)) is
    /// unusable: the first such ray's index and what is wrong with it.
    Ray(BatchError),
    /// The id names a proxy that was removed (its slot may since hold another proxy).
    StaleProxy(ProxyId),
    /// The id was issued by another tree.
    ForeignProxy(ProxyId),
    /// The tree already holds `u32::MAX / 2` proxies or nodes.
    CapacityExceeded,
    /// Boxes were changed with [`Dbvt::update_proxy`](crate::dbvt::Dbvt::update_proxy) and
    /// [`Dbvt::refit`](crate::dbvt::Dbvt::refit) has not run since: queries would miss moved
    /// proxies, so they refuse to run.
    RefitPending,
}

impl fmt::Display for DbvtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbvtError::Input(e) => write!(f, "invalid input: {e}"),
            DbvtError::Ray(e) => write!(f, "invalid input: {e}"),
            DbvtError::StaleProxy(id) => write!(f, "proxy {id:?} was removed from this tree"),
            DbvtError::ForeignProxy(id) => write!(f, "proxy {id:?} belongs to another tree"),
            DbvtError::CapacityExceeded => write!(f, "tree capacity exceeded"),
            DbvtError::RefitPending => write!(f, "proxies were updated without a refit; call refit() before querying"),
        }
    }
}

impl std::error::Error for DbvtError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DbvtError::Input(e) => Some(e),
            DbvtError::Ray(e) => Some(&e.error),
            _ => None,
        }
    }
}

impl From<InputError> for DbvtError {
    fn from(e: InputError) -> Self {
        DbvtError::Input(e)
    }
}
