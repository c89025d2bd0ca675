//! The fio wing: everything fsdelta knows of fio 3.33 in one home. [`jobfile`] reads job files
//! and command lines with fio's option table; [`engine`] runs them natively (the workers, the
//! table of I/O engine operations `engine::ops`, rates, verification, logs); [`metrics`] is the
//! one catalogue of fio's metrics, fed alike by the native engine, by [`external`] (the real fio
//! run and its output parsed) and by [`import`] (fio JSON files); [`output`] prints what fio
//! prints (normal, terse, JSON, JSON+); [`logs`] reads fio's per-I/O logs back into points;
//! [`text`] holds the number and error texts that the engine and the output formats share.
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
