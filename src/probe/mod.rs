//! How a workload is observed: the monotonic clock, latency histograms, CPU and memory
//! counters around a sample (`system`), and CPU profiles with perf (`profile`). Block-device
//! counters are read by [`blockstat`].
//!
//! Why a room of its own: every engine must measure the same way, so that a p99 from the fs_mark
//! engine and one from the fio engine mean the same thing. This room must never decide verdicts
//! or print anything; recording a value must stay cheap enough for a workload's hot loop (no
//! allocation, no locks, no logging).

pub mod blockstat;
pub mod clock;
pub mod disturbance;
pub mod events;
pub mod histogram;
pub mod hygiene;
pub mod ondisk;
pub mod profile;
pub mod system;
