//! What crosses into the guest (a [`Job`]: the tests of one repetition of one configuration, as
//! JSON in the initramfs) and what comes back ([`GuestLine`]s: one JSON object a line on the
//! guest's second serial port).
//!
//! Why a module: the host and the guest are the same binary but different processes on
//! different kernels; this is their whole contract. It must never hold behaviour beyond
//! (de)serialisation.

use crate::model::NewSample;
use crate::plan::suite::TestSpec;
use serde::{Deserialize, Serialize};

/// The guest device the results are written to (the second serial port).
pub const RESULTS_DEVICE: &str = "/dev/ttyS1";

/// One repetition of one configuration's tests, to run inside a guest.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Job {
    /// The configuration's name (the samples' `config`).
    pub config: String,
    /// The filesystem type to mount (`ext4`, `tmpfs`).
    pub fs: String,
    /// Mount options as the configuration gives them.
    pub mount_options: String,
    /// The repetition number (the samples' `repetition`).
    pub repetition: u32,
    /// Drop the guest's page cache before each sample.
    pub drop_caches: bool,
    /// Measure what each sample left on disk (the suite's `ondisk` key); a job written without
    /// it measures.
    #[serde(default = "measure_on_disk")]
    pub ondisk: bool,
    /// Measure fragmentation again after each sample, on its disk mounted again (the suite's
    /// `ondisk_remount` key); a job written without it does not.
    #[serde(default)]
    pub ondisk_remount: bool,
    /// The disks, in test order: one per test (`fresh = "sample"`: each formatted by the host
    /// before the boot) or one for all (`fresh = "run"`: every sample in a new directory). Empty
    /// for tmpfs.
    pub disks: Vec<JobDisk>,
    /// tmpfs only: its `size=` in bytes.
    pub tmpfs_size: Option<u64>,
    /// The tests, in run order. Their `events` (tracepoint lists) are resolved against the
    /// guest's own tracefs: event ids differ between kernels.
    pub tests: Vec<TestSpec>,
    /// Record a CPU profile around each workload with perf inside the guest, folded with this
    /// scope (`ProfileScope::name`); `None`: no profiles.
    #[serde(default)]
    pub profile: Option<String>,
    /// The disk is a read-only image (erofs): mounted `ro`, every sample at its root.
    #[serde(default)]
    pub read_only: bool,
    /// The configuration's `before` hook (`sh -c`, in the sample's directory), run in the guest
    /// before every sample.
    #[serde(default)]
    pub before: Option<String>,
    /// The configuration's `after` hook, run in the guest after every sample.
    #[serde(default)]
    pub after: Option<String>,
}

/// A disk of the guest, formatted by the host.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JobDisk {
    /// The device in the guest (`/dev/vda`).
    pub device: String,
    /// The host's mkfs command line, for the facts.
    pub mkfs_command: String,
    /// The host's mkfs version, for the facts.
    pub mkfs_version: String,
}

/// One line the guest writes on the results channel. Externally tagged (`{"sample": {...}}`):
/// an internally tagged enum would buffer the sample and lose its histograms' `u128` sums.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuestLine {
    /// First: what the guest is.
    Hello {
        /// `uname -r` of the guest.
        kernel_release: String,
        /// `uname -v` of the guest.
        kernel_version: String,
        /// Online CPUs.
        cpus: u32,
        /// MemTotal in bytes.
        memory_bytes: u64,
        /// /proc/uptime when the job started.
        uptime_s: f64,
    },
    /// A finished sample (ok or failed).
    Sample(Box<NewSample>),
    /// The CPU profile of the sample sent just before (same test), folded in the guest and
    /// encoded as the store keeps it.
    Profile {
        /// The test.
        test: String,
        /// `StoredProfile::format`.
        format: String,
        /// `StoredProfile::data`.
        data: Vec<u8>,
    },
    /// Something the user should know that did not fail a sample (a declared metric missing
    /// from a command's output), as the host's run would say it.
    Warning {
        /// The test.
        test: String,
        /// The warning.
        what: String,
    },
    /// A test that cannot run on this target (nothing measured).
    Skipped {
        /// The test.
        test: String,
        /// Why.
        why: String,
    },
    /// Last: the job ran to its end.
    Done,
}

/// Parse the results channel: complete lines only (a guest killed mid-line leaves a partial
/// one, which is ignored); serial ports may add `\r`.
pub fn parse_lines(bytes: &[u8]) -> Result<Vec<GuestLine>, String> {
    let text = String::from_utf8_lossy(bytes);
    let mut out = Vec::new();
    let complete = match text.rfind('\n') {
        Some(i) => &text[..i],
        None => "",
    };
    for (n, line) in complete.lines().enumerate() {
        let line = line.trim_matches(|c: char| c == '\r' || c.is_whitespace());
        if line.is_empty() {
            continue;
        }
        let l: GuestLine = serde_json::from_str(line)
            .map_err(|e| format!("results line {}: {e}: {:.120}", n + 1, line))?;
        out.push(l);
    }
    Ok(out)
}

/// A job's `ondisk` when it does not say: measure.
fn measure_on_disk() -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_a_cut_line_is_ignored() {
        let a = serde_json::to_string(&GuestLine::Skipped {
            test: "t".into(),
            why: "no O_DIRECT".into(),
        })
        .unwrap();
        let b = serde_json::to_string(&GuestLine::Done).unwrap();
        let bytes = format!("{a}\r\n\r\n{b}\r\n{{\"sample\":{{\"con");
        let lines = parse_lines(bytes.as_bytes()).unwrap();
        assert_eq!(lines.len(), 2);
        assert!(matches!(lines[1], GuestLine::Done));
        assert!(parse_lines(b"garbage\n").unwrap_err().contains("line 1"));
    }
}
