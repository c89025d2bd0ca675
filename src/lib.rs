//! fsdelta measures filesystem performance, keeps every number it measured, and tells which
//! differences between two kernels, patches, mount options or machines are real.
//!
//! Data flows one way through the rooms of `docs/design.md`:
//! `plan` -> `site` -> `workload` (and the tool wings `fio`, `fsmark`, `dbench`, catalogued by
//! `engines`) -> `probe` -> `store` -> `compare` -> `report`, with `cli` at the edge and `runner`
//! driving a run (sites x tests x repetitions, each sample stored as it ends) for the command
//! line, the fleet's agents and the guests of `vm` alike: every sample loop is the runner's.
//! `model` holds the plain records that cross room boundaries (metrics with their unit,
//! direction, kind and headline role; run and sample records; stored profiles), so that engines
//! never see the store and renderers never read it; `os` holds the process-level helpers
//! (descriptor tables, owners, bounded reading) every room may use. Which room may import which
//! is a table in `tests/architecture.rs`, read against the source: an import against the flow,
//! a circle or a room missing from the table fails it.

pub mod bisect;
pub mod cli;
pub mod compare;
pub mod dbench;
pub mod engines;
pub mod fio;
pub mod fsmark;
pub mod kbuild;
pub mod model;
pub mod os;
pub mod plan;
pub mod probe;
pub mod queue;
pub mod read;
pub mod report;
pub mod runner;
pub mod serve;
pub mod site;
pub mod store;
pub mod vm;
pub mod workload;
