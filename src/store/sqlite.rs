//! SQLite store (being written).
use super::*;
/// SQLite store.
pub struct SqliteStore;
impl SqliteStore {
    /// Open.
    pub fn open(_p: &Path) -> Result<Self, StoreError> {
        Err(StoreError::Unsupported("x".into()))
    }
}
impl Store for SqliteStore {
    fn create_run(&mut self, _run: &NewRun) -> Result<RunId, StoreError> {
        todo!()
    }
    fn add_sample(&mut self, _run: RunId, _sample: &NewSample) -> Result<SampleId, StoreError> {
        todo!()
    }
    fn finish_run(
        &mut self,
        _run: RunId,
        _status: RunStatus,
        _f: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        todo!()
    }
    fn runs(&self, _filter: &RunFilter) -> Result<Vec<RunInfo>, StoreError> {
        todo!()
    }
    fn run(&self, _id: RunId) -> Result<Option<RunInfo>, StoreError> {
        todo!()
    }
    fn samples(&self, _run: RunId) -> Result<Vec<SampleRecord>, StoreError> {
        todo!()
    }
}
