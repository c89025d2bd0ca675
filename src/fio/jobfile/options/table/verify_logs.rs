//! Part of the option table (see [`super`]): verification (verify= and its settings), fill_device,
//! flow control, and the latency, bandwidth, IOPS and histogram logs.
//!
//! The rows keep the table's order (the order of `--help` within a category and of the
//! supported-options list): a part is a run of that order, never a regrouping. What it must
//! never do: hold a row another part has.

use super::{Kind, OptDef, U32};
use crate::fio::jobfile::options::values::cpu_list;
use crate::fio::jobfile::{VerifyKind, err, pattern};

/// Rows `verify` to `log_max_value`, in the table's order.
pub(super) static ROWS: &[OptDef] = &[
    opt!(
        "verify",
        [],
        Kind::Choice(&[
            "0",
            "none",
            "md5",
            "crc64",
            "crc32",
            "crc32c-intel",
            "crc32c",
            "crc16",
            "crc7",
            "sha1",
            "sha256",
            "sha512",
            "sha3-224",
            "sha3-256",
            "sha3-384",
            "sha3-512",
            "xxhash",
            "meta",
            "pattern",
            "null"
        ]),
        "none",
        Io,
        "stamp each written block with fio's verify header and this checksum; check it when read",
        |j, v, _| {
            j.verify_set = true;
            let kind = match v.s() {
                "md5" => VerifyKind::Md5,
                "crc64" => VerifyKind::Crc64,
                "crc32" => VerifyKind::Crc32,
                "crc32c" => VerifyKind::Crc32c,
                "crc32c-intel" => VerifyKind::Crc32cIntel,
                "crc16" => VerifyKind::Crc16,
                "crc7" => VerifyKind::Crc7,
                "sha256" => VerifyKind::Sha256,
                "sha512" => VerifyKind::Sha512,
                "sha3-224" => VerifyKind::Sha3_224,
                "sha3-256" => VerifyKind::Sha3_256,
                "sha3-384" => VerifyKind::Sha3_384,
                "sha3-512" => VerifyKind::Sha3_512,
                "sha1" => VerifyKind::Sha1,
                "xxhash" => VerifyKind::Xxhash,
                "meta" => VerifyKind::Meta,
                "pattern" => VerifyKind::PatternNoHdr,
                "null" => VerifyKind::Null,
                _ => {
                    j.verify = false;
                    return Ok(());
                }
            };
            j.verify = true;
            j.verify_kind = kind;
            Ok(())
        }
    ),
    opt!(
        "do_verify",
        [],
        Kind::Bool,
        "1",
        Io,
        "with verify=, read the written blocks back after the writes",
        |j, v, _| {
            j.do_verify = v.b();
            Ok(())
        }
    ),
    opt!(
        "verify_interval",
        [],
        Kind::Size,
        "bs",
        Io,
        "bytes covered by one verify header",
        |j, v, o| {
            if v.size().0 <= 40 {
                return err(
                    &o.origin,
                    "option 'verify_interval' must be larger than fio's 40-byte verify header",
                );
            }
            j.verify_interval = Some(v.size());
            Ok(())
        }
    ),
    opt!(
        "verify_pattern",
        [],
        Kind::Text,
        "",
        Io,
        "bytes after each verify header: 0xHEX, decimal, \"string\", %o (offset)",
        |j, v, o| {
            let p = match pattern::parse(v.s()) {
                Ok(p) => p,
                Err(e) => return err(&o.origin, format!("option 'verify_pattern': {e}")),
            };
            j.verify_pattern = Some(p);
            if !j.verify_set {
                j.verify = true;
                j.verify_kind = VerifyKind::Pattern;
            }
            Ok(())
        }
    ),
    opt!(
        "verify_offset",
        [],
        Kind::Size,
        "0",
        Io,
        "swap the verify header with the bytes this far into the interval",
        |j, v, o| {
            // fio's minval: the size of its verify header.
            if v.size().0 < 40 {
                return err(
                    &o.origin,
                    format!(
                        "option 'verify_offset': min value out of range: {} (40 min), as fio refuses it; give 40 or more",
                        v.size().0
                    ),
                );
            }
            j.verify_offset = v.size();
            Ok(())
        }
    ),
    opt!(
        "verify_backlog",
        [],
        Kind::Int {
            min: 0,
            max: u64::MAX
        },
        "0",
        Io,
        "after this many writes, read back and verify the logged ones",
        |j, v, _| {
            j.verify_backlog = v.n();
            Ok(())
        }
    ),
    opt!(
        "verify_backlog_batch",
        [],
        Kind::Int {
            min: 0,
            max: u64::MAX
        },
        "verify_backlog",
        Io,
        "blocks verified per verify_backlog round",
        |j, v, _| {
            j.verify_backlog_batch = v.n();
            Ok(())
        }
    ),
    opt!(
        "verify_dump",
        [],
        Kind::Bool,
        "0",
        Io,
        "on a verify failure write FILE.OFFSET.received and .expected",
        |j, v, _| {
            j.verify_dump = v.b();
            Ok(())
        }
    ),
    opt!(
        "verify_fatal",
        [],
        Kind::Bool,
        "0",
        Io,
        "report only a block's first failed interval (the job fails either way)",
        |j, v, _| {
            j.verify_fatal = v.b();
            Ok(())
        }
    ),
    opt!(
        "verify_only",
        [],
        Kind::Flag,
        "0",
        Time,
        "do not write: read back and verify what an earlier run of this write job wrote",
        |j, v, _| {
            j.verify_only = v.b();
            Ok(())
        }
    ),
    opt!(
        "verify_async",
        [],
        Kind::Int { min: 0, max: U32 },
        "0",
        Io,
        "check the verify phase's blocks on this many threads (same results as without)",
        |j, v, _| {
            j.verify_async = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "verify_async_cpus",
        [],
        Kind::Text,
        "",
        Io,
        "the CPUs of the verify_async threads: a list of N and N-M, as cpus_allowed",
        |j, v, o| {
            j.verify_cpumask = Some(cpu_list(v.s(), "verify_async_cpus", o)?);
            Ok(())
        }
    ),
    opt!(
        "verify_state_save",
        [],
        Kind::Bool,
        "1",
        Io,
        "1 given: each clone of a write job with verify writes fio's local-NAME-N-verify.state at its end (unlike fio, not unasked)",
        |j, v, _| {
            j.verify_state_save = v.b();
            Ok(())
        }
    ),
    opt!(
        "verifysort",
        [],
        Kind::Text,
        "",
        Io,
        "deprecated in fio 3.33 and ignored (a note says so)",
        |_, _, _| Ok(())
    ),
    opt!(
        "verifysort_nr",
        [],
        Kind::Text,
        "",
        Io,
        "deprecated in fio 3.33 and ignored (a note says so)",
        |_, _, _| Ok(())
    ),
    opt!(
        "fill_device",
        ["fill_fs"],
        Kind::Bool,
        "0",
        Io,
        "write until ENOSPC (without size=, the filesystem's free space)",
        |j, v, _| {
            j.fill_device = v.b();
            Ok(())
        }
    ),
    opt!(
        "create_serialize",
        [],
        Kind::Bool,
        "1",
        File,
        "lay files out one clone at a time (0: in parallel); layout is untimed",
        |j, v, _| {
            j.create_serialize = v.b();
            Ok(())
        }
    ),
    opt!(
        "flow_id",
        [],
        Kind::Int { min: 0, max: U32 },
        "0",
        Io,
        "flow control group of the job",
        |j, v, _| {
            j.flow_id = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "flow",
        [],
        Kind::Int { min: 0, max: 1000 },
        "0",
        Io,
        "weight in the flow group: the job's share of the group's I/Os is flow / (sum of the weights)",
        |j, v, _| {
            j.flow = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "flow_sleep",
        [],
        Kind::Time { default_us: 1 },
        "0",
        Io,
        "sleep this long (bare number: microseconds) when held back by flow control",
        |j, v, _| {
            j.flow_sleep = v.time();
            Ok(())
        }
    ),
    opt!(
        "write_lat_log",
        [],
        Kind::Text,
        "",
        Stat,
        "per-I/O lat, slat and clat logs PREFIX_lat.N.log ... (no value: the job name)",
        |j, v, _| {
            j.lat_log = Some(v.s().to_string());
            Ok(())
        }
    ),
    opt!(
        "write_bw_log",
        [],
        Kind::Text,
        "",
        Stat,
        "per-I/O bandwidth log PREFIX_bw.N.log (no value: the job name)",
        |j, v, _| {
            j.bw_log = Some(v.s().to_string());
            Ok(())
        }
    ),
    opt!(
        "write_iolog",
        [],
        Kind::Text,
        "",
        Stat,
        "the I/O pattern, as fio's iolog version 3: each clone appends its files' add/open/close and one line per I/O issued",
        |j, v, o| {
            if v.s().is_empty() {
                return err(&o.origin, "write_iolog needs a file name: write_iolog=FILE");
            }
            j.write_iolog = Some(v.s().to_string());
            Ok(())
        }
    ),
    opt!(
        "read_iolog",
        [],
        Kind::Text,
        "",
        Io,
        "replay fio's iolog (version 2 or 3, as write_iolog writes it): its files, reads, writes, syncs and waits; the files it names must be the job's own or inside the run directory",
        |j, v, o| {
            if v.s().is_empty() {
                return err(&o.origin, "read_iolog needs a file name: read_iolog=FILE");
            }
            if v.s() == "-" {
                return err(
                    &o.origin,
                    "read_iolog=- (the log from standard input) is not supported: give the log's file name",
                );
            }
            j.read_iolog = Some(v.s().to_string());
            Ok(())
        }
    ),
    opt!(
        "read_iolog_chunked",
        [],
        Kind::Bool,
        "0",
        Io,
        "fio reads the iolog in parts as it goes; fsdelta reads it whole first (the same I/Os)",
        |j, v, _| {
            j.read_iolog_chunked = v.b();
            Ok(())
        }
    ),
    opt!(
        "replay_no_stall",
        [],
        Kind::Bool,
        "0",
        Io,
        "replay the iolog as fast as possible, without its times and waits",
        |j, v, _| {
            j.replay_no_stall = v.b();
            Ok(())
        }
    ),
    opt!(
        "replay_redirect",
        [],
        Kind::Text,
        "",
        Io,
        "replay every I/O of the iolog on this one file, whatever file the log names",
        |j, v, o| {
            if v.s().is_empty() {
                return err(
                    &o.origin,
                    "replay_redirect needs a file name: replay_redirect=FILE",
                );
            }
            j.replay_redirect = Some(v.s().to_string());
            Ok(())
        }
    ),
    opt!(
        "replay_scale",
        [],
        Kind::Int {
            min: 1,
            max: u64::MAX
        },
        "1",
        Io,
        "divide the replayed offsets by this",
        |j, v, _| {
            j.replay_scale = v.n();
            Ok(())
        }
    ),
    opt!(
        "replay_align",
        [],
        Kind::Int {
            min: 0,
            max: u64::MAX
        },
        "0",
        Io,
        "round the replayed offsets down to a multiple of this power of 2",
        |j, v, o| {
            let n = v.n();
            if n != 0 && !n.is_power_of_two() {
                return err(
                    &o.origin,
                    format!(
                        "replay_align={n} must be a power of 2 (fio masks the offsets with it)"
                    ),
                );
            }
            j.replay_align = n;
            Ok(())
        }
    ),
    opt!(
        "replay_time_scale",
        [],
        Kind::Int {
            min: 1,
            max: u64::MAX
        },
        "100",
        Io,
        "replay the iolog's times at this percentage of their speed (200: twice as fast)",
        |j, v, _| {
            j.replay_time_scale = v.n();
            Ok(())
        }
    ),
    opt!(
        "write_iops_log",
        [],
        Kind::Text,
        "",
        Stat,
        "per-I/O IOPS log PREFIX_iops.N.log (no value: the job name)",
        |j, v, _| {
            j.iops_log = Some(v.s().to_string());
            Ok(())
        }
    ),
    opt!(
        "write_hist_log",
        [],
        Kind::Text,
        "",
        Stat,
        "clat histogram log PREFIX_clat_hist.N.log, one line per log_hist_msec and direction (no value: the job name)",
        |j, v, _| {
            j.hist_log = Some(v.s().to_string());
            Ok(())
        }
    ),
    opt!(
        "log_hist_msec",
        [],
        Kind::Int { min: 0, max: U32 },
        "0",
        Stat,
        "write_hist_log writes the clat histogram of the last N ms, per direction, every N ms (0: no lines)",
        |j, v, _| {
            j.log_hist_msec = v.n();
            Ok(())
        }
    ),
    opt!(
        "log_hist_coarseness",
        [],
        Kind::Int { min: 0, max: 6 },
        "0",
        Stat,
        "histogram log lines merge 2^N neighbouring buckets: 1856 >> N bins (0..6)",
        |j, v, _| {
            j.log_hist_coarseness = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "log_offset",
        [],
        Kind::Bool,
        "0",
        Stat,
        "log lines carry the I/O's offset",
        |j, v, _| {
            j.log_offset = v.b();
            Ok(())
        }
    ),
    opt!(
        "per_job_logs",
        [],
        Kind::Bool,
        "1",
        Stat,
        "log file names carry the clone's thread number",
        |j, v, _| {
            j.per_job_logs = v.b();
            Ok(())
        }
    ),
    opt!(
        "log_avg_msec",
        [],
        Kind::Int { min: 0, max: U32 },
        "0",
        Stat,
        "log one line per N ms and direction, the window's average (0: one line per I/O)",
        |j, v, _| {
            j.log_avg_msec = v.n();
            Ok(())
        }
    ),
    opt!(
        "log_max_value",
        [],
        Kind::Bool,
        "0",
        Stat,
        "averaged log lines carry the window's maximum instead of its average",
        |j, v, _| {
            j.log_max = v.b();
            Ok(())
        }
    ),
];
