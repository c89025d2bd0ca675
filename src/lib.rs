//! fsdelta measures filesystem performance, keeps every number it measured, and tells which
//! differences between two kernels, patches, mount options or machines are real.
//!
//! Data flows one way through the rooms of `../shared/docs/design.md`:
//! `plan` -> `target` -> `workload` -> `probe` -> `store` -> `compare` -> `report`, with `cli` at
//! the edge. `model` holds the plain records that cross room boundaries (metrics with their unit
//! and direction, run and sample records), so that no room needs to know another's internals.

pub mod cli;
pub mod compare;
pub mod model;
pub mod plan;
pub mod probe;
pub mod queue;
pub mod report;
pub mod runner;
pub mod store;
pub mod target;
pub mod workload;
