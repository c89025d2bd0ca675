//! `fsdelta guest-run JOB OUT` (hidden): the guest side of a configuration with a kernel,
//! started by the guest's `/init`. See `crate::runner::guest`; it refuses to run outside a guest.

use super::EXIT_OK;
use anyhow::Result;
use std::path::Path;

/// Run the job file `job`, writing the samples as JSON lines to `out`.
pub fn main(job: &Path, out: &Path) -> Result<i32> {
    crate::runner::guest::run(job, out)?;
    Ok(EXIT_OK)
}
