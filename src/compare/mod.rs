//! Which changes are real: pairing samples of two run sets, and (statistics.md) verdicts.
//!
//! Why a room of its own: comparison is pure arithmetic on stored records; it must never do I/O of
//! any kind, so that it can be tested exhaustively and reused by `compare`, `run --baseline` and
//! `report`.

pub mod changepoint;
pub mod stats;
pub mod verdict;
