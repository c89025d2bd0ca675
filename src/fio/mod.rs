//! The fio wing: everything fsdelta knows of fio 3.33 in one home. [`jobfile`] reads job files
//! and command lines with fio's option table; [`engine`] runs them natively (the workers, the
//! I/O engines, rates, verification, logs); [`output`] prints what fio prints (normal, terse,
//! JSON, JSON+) and [`logs`] reads fio's per-I/O logs back; [`external`] runs the real fio and
//! parses its output into the same metric names.
//!
//! Why a wing: fio compatibility is a third of fsdelta and changes for its own reasons (a new
//! option, an output field). Keeping it in one place means a fio change touches one folder. The
//! wing meets the run loop only through the `crate::workload::Workload` trait; it must never
//! open a store, print to the terminal outside `cli`'s `fsdelta fio`, or import the fs_mark or
//! dbench wings.

pub mod engine;
pub mod external;
pub mod import;
pub mod jobfile;
pub mod logs;
pub mod metrics;
pub mod output;
pub mod text;
