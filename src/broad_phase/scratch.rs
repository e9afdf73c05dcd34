//! What a broad phase keeps from one `update_pairs` to the next so that a warm frame allocates
//! nothing: each pair-search task's query workspace and list of finds.

use crate::dbvt::QueryWorkspace;

/// One search task's scratch.
#[derive(Clone, Debug, Default)]
pub(super) struct SearchScratch {
    pub(super) ws: QueryWorkspace,
    /// New pairs found, as slots `(low, high)`, in the order found.
    pub(super) found: Vec<(u32, u32)>,
}
