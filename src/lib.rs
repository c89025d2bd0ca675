//! fsdelta measures filesystem performance, keeps every number it measured, and tells which
//! differences between two kernels, patches, mount options or machines are real.
//!
//! Data flows one way through the rooms of `../shared/docs/design.md`:
//! `plan` -> `target` -> `workload` -> `probe` -> `store` -> `compare` -> `report`, with `cli` at
//! the edge and `runner` driving a run (targets x tests x repetitions, each sample stored as it
//! ends) for the command line and every other place a run starts. `model` holds the plain
//! records that cross room boundaries (metrics with their unit, direction, kind and headline
//! role; run and sample records; stored profiles), so that engines never see the store and
//! renderers never read it.

pub mod cli;
pub mod compare;
pub mod model;
pub mod os;
pub mod plan;
pub mod probe;
pub mod queue;
pub mod report;
pub mod runner;
pub mod store;
pub mod target;
pub mod vm;
pub mod workload;
