//! [`forward_store!`]: the methods of [`Store`](super::Store) a wrapper passes straight through
//! to the store it wraps, written once. The run's journal ([`super::journal::JournaledStore`]),
//! a borrowed `&mut dyn Store`, the fault-injecting test store
//! ([`super::memory::FailAfter`]) and the agent's job store change a few methods and pass the
//! rest through; each names the ones it passes through:
//!
//! ```text
//! impl Store for Wrapper {
//!     forward_store!(inner: runs, run, samples, profile, run_uuid, run_by_uuid);
//!     fn add_sample(&mut self, run: RunId, sample: &NewSample) -> Result<SampleId, StoreError> {
//!         // what the wrapper is for
//!     }
//! }
//! ```
//!
//! `inner` is the field that holds the wrapped store; `*` instead passes through `**self` (a
//! borrowed store). Why a list and not a base that forwards everything: a method the list does
//! not name keeps the trait's default, which reads through the wrapper's own methods, and which
//! methods a wrapper passes through is part of what it does (a wrapper that journals must not
//! hand out the wrapped store's journal path). This module must never change what a method does:
//! every generated method is one call of the same method on the wrapped store.

/// Pass the named [`Store`](crate::store::Store) methods through to a field (or `*`): see the
/// module documentation.
macro_rules! forward_store {
    ($to:tt : $($method:ident),+ $(,)?) => {
        $( $crate::store::forward::forward_store!(@method $to $method); )+
    };
    (@recv $s:ident, *) => { (**$s) };
    (@recv $s:ident, $field:ident) => { $s.$field };
    (@fn $to:tt $name:ident [$($recv:tt)+] ($($arg:ident : $ty:ty),*) -> $ret:ty) => {
        fn $name($($recv)+ self, $($arg: $ty),*) -> $ret {
            $crate::store::forward::forward_store!(@recv self, $to).$name($($arg),*)
        }
    };
    (@method $to:tt create_run) => {
        $crate::store::forward::forward_store!(@fn $to create_run [&mut]
            (run: &$crate::model::NewRun) -> Result<$crate::model::RunId, $crate::store::StoreError>);
    };
    (@method $to:tt add_sample) => {
        $crate::store::forward::forward_store!(@fn $to add_sample [&mut]
            (run: $crate::model::RunId, sample: &$crate::model::NewSample)
            -> Result<$crate::model::SampleId, $crate::store::StoreError>);
    };
    (@method $to:tt finish_run) => {
        $crate::store::forward::forward_store!(@fn $to finish_run [&mut]
            (run: $crate::model::RunId, status: $crate::model::RunStatus,
             finished_at: chrono::DateTime<chrono::Utc>) -> Result<(), $crate::store::StoreError>);
    };
    (@method $to:tt runs) => {
        $crate::store::forward::forward_store!(@fn $to runs [&]
            (filter: &$crate::store::RunFilter)
            -> Result<Vec<$crate::model::RunInfo>, $crate::store::StoreError>);
    };
    (@method $to:tt run) => {
        $crate::store::forward::forward_store!(@fn $to run [&]
            (id: $crate::model::RunId)
            -> Result<Option<$crate::model::RunInfo>, $crate::store::StoreError>);
    };
    (@method $to:tt samples) => {
        $crate::store::forward::forward_store!(@fn $to samples [&]
            (run: $crate::model::RunId)
            -> Result<Vec<$crate::model::SampleRecord>, $crate::store::StoreError>);
    };
    (@method $to:tt samples_of_runs) => {
        $crate::store::forward::forward_store!(@fn $to samples_of_runs [&]
            (runs: &[$crate::model::RunId])
            -> Result<Vec<Vec<$crate::model::SampleRecord>>, $crate::store::StoreError>);
    };
    (@method $to:tt add_profile) => {
        $crate::store::forward::forward_store!(@fn $to add_profile [&mut]
            (sample: $crate::model::SampleId, profile: &$crate::model::StoredProfile)
            -> Result<(), $crate::store::StoreError>);
    };
    (@method $to:tt profile) => {
        $crate::store::forward::forward_store!(@fn $to profile [&]
            (sample: $crate::model::SampleId)
            -> Result<Option<$crate::model::StoredProfile>, $crate::store::StoreError>);
    };
    (@method $to:tt metric_points) => {
        $crate::store::forward::forward_store!(@fn $to metric_points [&]
            (test: &str, metric: &str)
            -> Result<Vec<$crate::model::MetricPoint>, $crate::store::StoreError>);
    };
    (@method $to:tt attachments) => {
        $crate::store::forward::forward_store!(@fn $to attachments [&]
            (sample: $crate::model::SampleId)
            -> Result<Vec<$crate::model::Attachment>, $crate::store::StoreError>);
    };
    (@method $to:tt sample_metrics) => {
        $crate::store::forward::forward_store!(@fn $to sample_metrics [&]
            (runs: &[$crate::model::RunId])
            -> Result<Vec<$crate::model::SampleRecord>, $crate::store::StoreError>);
    };
    (@method $to:tt run_medians) => {
        $crate::store::forward::forward_store!(@fn $to run_medians [&]
            (runs: &[$crate::model::RunId],
             visit: &mut dyn FnMut($crate::store::RunMedian<'_>))
            -> Result<(), $crate::store::StoreError>);
    };
    (@method $to:tt run_uuid) => {
        $crate::store::forward::forward_store!(@fn $to run_uuid [&]
            (id: $crate::model::RunId) -> Result<Option<String>, $crate::store::StoreError>);
    };
    (@method $to:tt run_by_uuid) => {
        $crate::store::forward::forward_store!(@fn $to run_by_uuid [&]
            (uuid: &str) -> Result<Option<$crate::model::RunInfo>, $crate::store::StoreError>);
    };
    (@method $to:tt import_run) => {
        $crate::store::forward::forward_store!(@fn $to import_run [&mut]
            (uuid: &str, run: &$crate::model::RunInfo, samples: &[$crate::store::SampleCopy])
            -> Result<$crate::model::RunId, $crate::store::StoreError>);
    };
    (@method $to:tt abort_orphaned_runs) => {
        $crate::store::forward::forward_store!(@fn $to abort_orphaned_runs [&mut]
            () -> Result<Vec<$crate::model::RunId>, $crate::store::StoreError>);
    };
    (@method $to:tt journal_path) => {
        $crate::store::forward::forward_store!(@fn $to journal_path [&]
            () -> Option<std::path::PathBuf>);
    };
    (@method $to:tt select) => {
        $crate::store::forward::forward_store!(@fn $to select [&]
            (sel: &$crate::store::Selector)
            -> Result<Vec<$crate::model::RunInfo>, $crate::store::StoreError>);
    };
}

pub(crate) use forward_store;
