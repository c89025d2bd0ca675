//! The option table: every fio option this engine honours, one row each, as fio's options.c;
//! the rows live in parts (one file each), read in one order.
//!
//! Why it exists: the parser, `--help`, the list of supported options in an error and the
//! command-line splitting (which options never take the next word) all read this one table, so
//! adding an option is adding a row. A row names the option, its aliases, the kind of value
//! (which fixes how the text is read and range-checked), the default as fio documents it, its
//! category, the engines it applies to, and the setter that stores the typed value into a
//! [`JobSpec`]. What it must never do: accept an option it cannot honour, store a value
//! without the row's range check, or change the rows' order (it is the order users see).

use crate::fio::jobfile::{Bytes, IoEngine, JobFileError, JobSpec, RawOption};
use std::time::Duration;

/// How an option's value is read.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// 0/1 (also true/false, yes/no, on/off); a bare name means 1.
    Bool,
    /// fio's set-only option (FIO_OPT_STR_SET): a bare name means 1 and it never takes the
    /// next command-line word as its value.
    Flag,
    /// A whole number (size suffixes and arithmetic allowed) in `min..=max`.
    Int {
        /// Smallest accepted.
        min: u64,
        /// Largest accepted.
        max: u64,
    },
    /// A byte count, base 1024; no percentage, no range.
    Size,
    /// A time; a bare number is `default_us` microseconds.
    Time {
        /// Unit of a bare number, in microseconds.
        default_us: u64,
    },
    /// One of these words.
    Choice(&'static [&'static str]),
    /// Free text, read by the setter.
    Text,
}

/// Where an option belongs (fio's categories, for `--help`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    /// Job description and grouping.
    General,
    /// Files and their layout.
    File,
    /// What I/O is issued.
    Io,
    /// The engine and its settings.
    Engine,
    /// Timing of the job.
    Time,
    /// Write-buffer contents.
    Buffer,
    /// Statistics and reporting.
    Stat,
}

impl Category {
    /// Name shown in `--help`.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::General => "general",
            Category::File => "files",
            Category::Io => "I/O",
            Category::Engine => "engine",
            Category::Time => "timing",
            Category::Buffer => "buffers",
            Category::Stat => "statistics",
        }
    }
}

/// A value read as the row's [`Kind`] says.
#[derive(Clone, Copy, Debug)]
pub enum Val<'a> {
    /// Bool and Flag.
    Bool(bool),
    /// Int.
    Int(u64),
    /// Size.
    Size(Bytes),
    /// Time.
    Time(Duration),
    /// Choice and Text (the text as written, trimmed).
    Text(&'a str),
}

impl Val<'_> {
    pub(in crate::fio::jobfile::options) fn b(&self) -> bool {
        matches!(self, Val::Bool(true))
    }
    pub(in crate::fio::jobfile::options) fn n(&self) -> u64 {
        match self {
            Val::Int(n) => *n,
            _ => 0,
        }
    }
    pub(in crate::fio::jobfile::options) fn size(&self) -> Bytes {
        match self {
            Val::Size(b) => *b,
            _ => Bytes(0),
        }
    }
    pub(in crate::fio::jobfile::options) fn time(&self) -> Duration {
        match self {
            Val::Time(t) => *t,
            _ => Duration::ZERO,
        }
    }
    pub(in crate::fio::jobfile::options) fn s(&self) -> &str {
        match self {
            Val::Text(s) => s,
            _ => "",
        }
    }
}

/// Stores a typed value into a job; errors name the option's origin.
pub type Setter = fn(&mut JobSpec, Val<'_>, &RawOption) -> Result<(), JobFileError>;

/// One row of the table.
pub struct OptDef {
    /// Canonical name (fio's).
    pub name: &'static str,
    /// Other names fio accepts for it.
    pub aliases: &'static [&'static str],
    /// How the value is read.
    pub kind: Kind,
    /// fio's default, as text (for `--help`).
    pub default: &'static str,
    /// Category.
    pub category: Category,
    /// Engines the option applies to (empty: every engine). Set with another engine, it is an
    /// error, as in fio (whose engine options exist only once the engine is loaded).
    pub engines: &'static [IoEngine],
    /// One line of help.
    pub help: &'static str,
    /// Stores the value.
    pub set: Setter,
}

const U32: u64 = u32::MAX as u64;
const SEC: u64 = 1_000_000;
const URING_AIO: &[IoEngine] = &[IoEngine::IoUring, IoEngine::Libaio];
const URING: &[IoEngine] = &[IoEngine::IoUring];

macro_rules! opt {
    ($name:expr, [$($alias:expr),*], $kind:expr, $default:expr, $cat:ident, $help:expr, $set:expr) => {
        $crate::fio::jobfile::options::OptDef {
            name: $name,
            aliases: &[$($alias),*],
            kind: $kind,
            default: $default,
            category: $crate::fio::jobfile::options::Category::$cat,
            engines: &[],
            help: $help,
            set: $set,
        }
    };
    ($name:expr, [$($alias:expr),*], $kind:expr, $default:expr, $cat:ident, engines $eng:expr, $help:expr, $set:expr) => {
        $crate::fio::jobfile::options::OptDef {
            name: $name,
            aliases: &[$($alias),*],
            kind: $kind,
            default: $default,
            category: $crate::fio::jobfile::options::Category::$cat,
            engines: $eng,
            help: $help,
            set: $set,
        }
    };
}

pub(super) const RW_CHOICES: &[&str] = &[
    "read",
    "write",
    "randread",
    "randwrite",
    "rw",
    "readwrite",
    "randrw",
    "trim",
    "randtrim",
    "trimwrite",
    "randtrimwrite",
];
const ENGINES: &[&str] = &[
    "psync",
    "sync",
    "pvsync",
    "io_uring",
    "libaio",
    "filecreate",
    "filestat",
    "filedelete",
    "null",
    "falloc",
    "ftruncate",
    "pvsync2",
    "posixaio",
    "vsync",
    "mmap",
    "splice",
];

mod buffers_stats;
mod errors_reporting;
mod job;
mod offsets_rate_prio;
mod verify_logs;
mod zones_latency;

/// The table, in fio's order (general first): these parts read one after the other. It is
/// the order of `--help` within a category, of the supported-options list in an error and of
/// [`rows`]; a part is a run of that order, never a regrouping.
static PARTS: [&[OptDef]; 6] = [
    job::ROWS,
    buffers_stats::ROWS,
    offsets_rate_prio::ROWS,
    verify_logs::ROWS,
    zones_latency::ROWS,
    errors_reporting::ROWS,
];

/// Every row, in the table's order.
pub(super) fn rows() -> impl Iterator<Item = &'static OptDef> {
    PARTS.iter().flat_map(|part| part.iter())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for o in rows() {
            for n in std::iter::once(&o.name).chain(o.aliases.iter()) {
                assert!(seen.insert(*n), "duplicate option name {n}");
            }
        }
    }

    #[test]
    fn unused_engine_lists_are_valid() {
        // Engine-limited rows name engines the table knows.
        for o in rows() {
            for e in o.engines {
                assert!(ENGINES.contains(&e.as_str()), "{}: {}", o.name, e.as_str());
            }
        }
        let _ = URING_AIO;
    }
}
