//! Part of the option table (see [`super`]): io_submit_mode, exits and errors (exitall,
//! continue_on_error, ignore_error), units and reporting (kb_base, unit_base, averages, disk_util,
//! log epochs), file creation and the rows added after them (serialize_overlap,
//! thinktime_blocks_type, trim, iodepth_batch, fadvise, sync).
//!
//! The rows keep the table's order (the order of `--help` within a category and of the
//! supported-options list): a part is a run of that order, never a regrouping. What it must
//! never do: hold a row another part has.

use super::{Kind, OptDef, SEC, U32};
use crate::fio::jobfile::options::values::{fio_bool_only, fio_default_only, parse_ignore_error};
use crate::fio::jobfile::{ErrorClass, ExitWhat, FadviseHint, SyncIo, err};

/// Rows `io_submit_mode` to `sync`, in the table's order.
pub(super) static ROWS: &[OptDef] = &[
    opt!(
        "io_submit_mode",
        [],
        Kind::Choice(&["inline", "offload"]),
        "inline",
        Engine,
        "inline: the job's thread submits and reaps; offload: it only queues, iodepth submission workers do the I/O (fio's workqueue)",
        |j, v, _| {
            j.io_submit_offload = v.s() == "offload";
            Ok(())
        }
    ),
    opt!(
        "exitall",
        [],
        Kind::Flag,
        "0",
        General,
        "when a job ends, end the jobs exit_what names (fio: set in any job, it holds for all)",
        |j, v, _| {
            j.exitall = v.b();
            Ok(())
        }
    ),
    opt!(
        "exit_what",
        [],
        Kind::Choice(&["group", "stonewall", "all"]),
        "group",
        General,
        "with exitall, what this job's end ends: its reporting group, every running job, or every job",
        |j, v, _| {
            j.exit_what = match v.s() {
                "stonewall" => ExitWhat::Stonewall,
                "all" => ExitWhat::All,
                _ => ExitWhat::Group,
            };
            Ok(())
        }
    ),
    opt!(
        "continue_on_error",
        [],
        Kind::Choice(&["none", "read", "write", "io", "verify", "all", "0", "1"]),
        "none",
        General,
        "error classes that do not end the job (none, read, write, io, verify, all): their errnos in ignore_error= are counted and the job goes on",
        |j, v, _| {
            j.continue_on_error = match v.s() {
                "read" => 1 << ErrorClass::Read as u32,
                "write" => 1 << ErrorClass::Write as u32,
                "io" => (1 << ErrorClass::Read as u32) | (1 << ErrorClass::Write as u32),
                "verify" => 1 << ErrorClass::Verify as u32,
                // fio's ERROR_TYPE_ANY.
                "all" | "1" => 0xffff,
                _ => 0,
            };
            Ok(())
        }
    ),
    opt!(
        "ignore_error",
        [],
        Kind::Text,
        "EIO:EILSEQ per class",
        General,
        "errnos continued on, per class READ,WRITE,VERIFY: ':'-separated names (EPERM..ERANGE) or numbers; a non-empty list turns its class on in continue_on_error",
        |j, v, o| {
            let lists = parse_ignore_error(v.s())
                .or_else(|m| err(&o.origin, format!("ignore_error={}: {m}", v.s())))?;
            for (class, list) in lists.into_iter().enumerate() {
                if let Some(list) = list {
                    j.continue_on_error |= 1 << class;
                    j.ignore_error[class] = Some(list);
                }
            }
            Ok(())
        }
    ),
    opt!(
        "error_dump",
        [],
        Kind::Bool,
        "0",
        General,
        "print every I/O error, also those continue_on_error counts and goes on after",
        |j, v, _| {
            j.error_dump = v.b();
            Ok(())
        }
    ),
    opt!(
        "threads",
        [],
        Kind::Int { min: 0, max: U32 },
        "",
        General,
        "fio's tiobench profile option: outside --profile=tiobench it changes nothing, as in fio",
        |_, _, _| Ok(())
    ),
    // fio options accepted with fio's default value only, where that value is what this
    // engine does; any other value is an error naming what is not supported (a row each, so
    // `--help` and the listing know them).
    opt!(
        "kb_base",
        [],
        Kind::Text,
        "1024",
        Stat,
        "units of the output: 1024 only (fio's default; kb_base=1000, SI units, is not supported)",
        |_, v, o| fio_default_only(
            o,
            v.s(),
            &["1024"],
            "the output is printed in base 1024 units"
        )
    ),
    opt!(
        "unit_base",
        [],
        Kind::Text,
        "0",
        Stat,
        "bandwidth units of the output: 0 (auto) or 8, bytes (1, bits, is not supported)",
        |_, v, o| fio_default_only(o, v.s(), &["0", "8"], "bandwidth is printed in bytes")
    ),
    opt!(
        "significant_figures",
        [],
        Kind::Int { min: 1, max: 10 },
        "4",
        Stat,
        "significant figures of the normal output: 4 only (fio's default)",
        |_, v, o| fio_default_only(o, &v.n().to_string(), &["4"], "the normal output has 4")
    ),
    opt!(
        "bwavgtime",
        [],
        Kind::Int { min: 0, max: U32 },
        "500",
        Stat,
        "bandwidth sampling period, ms: 500 only (fio's default)",
        |_, v, o| fio_default_only(
            o,
            &v.n().to_string(),
            &["500"],
            "bandwidth is sampled every 500 ms"
        )
    ),
    opt!(
        "iopsavgtime",
        [],
        Kind::Int { min: 0, max: U32 },
        "500",
        Stat,
        "IOPS sampling period, ms: 500 only (fio's default)",
        |_, v, o| fio_default_only(
            o,
            &v.n().to_string(),
            &["500"],
            "IOPS are sampled every 500 ms"
        )
    ),
    opt!(
        "disk_util",
        [],
        Kind::Bool,
        "1",
        Stat,
        "disk utilisation statistics: 1 only (fio's default)",
        |_, v, o| fio_bool_only(o, v.b(), true, "disk statistics are always reported")
    ),
    opt!(
        "unified_rw_reporting",
        [],
        Kind::Text,
        "none",
        Stat,
        "per-direction statistics: none (or 0) only (fio's default; mixed and both are not supported)",
        |_, v, o| fio_default_only(
            o,
            v.s(),
            &["none", "0"],
            "statistics are reported per direction"
        )
    ),
    opt!(
        "log_unix_epoch",
        [],
        Kind::Bool,
        "0",
        Stat,
        "log times as Unix-epoch milliseconds (else since the job started)",
        |j, v, _| {
            j.log_unix_epoch = v.b();
            Ok(())
        }
    ),
    opt!(
        "log_alternate_epoch",
        [],
        Kind::Bool,
        "0",
        Stat,
        "log times since another clock's epoch: 0 only (fio's default)",
        |_, v, o| fio_bool_only(o, v.b(), false, "log times are since the job started")
    ),
    opt!(
        "allow_file_create",
        [],
        Kind::Bool,
        "1",
        File,
        "files the job needs may be created: 1 only (fio's default)",
        |_, v, o| fio_bool_only(o, v.b(), true, "missing files are created")
    ),
    opt!(
        "create_only",
        [],
        Kind::Bool,
        "0",
        File,
        "lay the files out and do no I/O: 0 only (fio's default)",
        |_, v, o| fio_bool_only(o, v.b(), false, "the job's I/O runs after the layout")
    ),
    opt!(
        "pre_read",
        [],
        Kind::Bool,
        "0",
        File,
        "read the files into the page cache before the job: 0 only (fio's default)",
        |_, v, o| fio_bool_only(o, v.b(), false, "files are not read in beforehand")
    ),
    opt!(
        "overwrite",
        [],
        Kind::Bool,
        "0",
        File,
        "lay a written file out in full first: 0 only (fio's default)",
        |_, v, o| fio_bool_only(o, v.b(), false, "files are laid out as fio's default does")
    ),
    opt!(
        "exitall_on_error",
        [],
        Kind::Flag,
        "0",
        General,
        "end every job when one fails: 0 only (fio's default)",
        |_, v, o| fio_bool_only(o, v.b(), false, "a failing job ends only itself")
    ),
    opt!(
        "serialize_overlap",
        [],
        Kind::Bool,
        "0",
        Io,
        "keep overlapping I/Os from being in flight together: 0 only (fio's default)",
        |_, v, o| fio_bool_only(
            o,
            v.b(),
            false,
            "in-flight I/Os are not checked for overlap"
        )
    ),
    opt!(
        "thinktime_blocks_type",
        [],
        Kind::Text,
        "complete",
        Time,
        "what thinktime_blocks counts: complete only (fio's default; issue is not supported)",
        |_, v, o| fio_default_only(
            o,
            v.s(),
            &["complete"],
            "thinktime_blocks counts completed I/Os"
        )
    ),
    opt!(
        "thinktime_iotime",
        [],
        Kind::Time { default_us: SEC },
        "0",
        Time,
        "I/O time between thinktimes: 0 only (fio's default)",
        |_, v, o| fio_default_only(
            o,
            if v.time().is_zero() { "0" } else { "not 0" },
            &["0"],
            "thinktime follows thinktime_blocks"
        )
    ),
    opt!(
        "softrandommap",
        [],
        Kind::Bool,
        "0",
        Io,
        "go on without the random map when it cannot be had: 0 only (fio's default)",
        |_, v, o| fio_bool_only(o, v.b(), false, "the random map is always allocated")
    ),
    opt!(
        "write_barrier",
        [],
        Kind::Int { min: 0, max: U32 },
        "0",
        Io,
        "make every Nth write a barrier write: 0 only (fio's default)",
        |_, v, o| fio_default_only(o, &v.n().to_string(), &["0"], "no write is a barrier")
    ),
    opt!(
        "mem",
        ["iomem"],
        Kind::Text,
        "malloc",
        Buffer,
        "where I/O buffers come from: malloc only (fio's default: the heap)",
        |_, v, o| fio_default_only(o, v.s(), &["malloc"], "buffers are heap memory")
    ),
    opt!(
        "experimental_verify",
        [],
        Kind::Bool,
        "0",
        Io,
        "verify by replaying the written offsets (the same blocks as the log: not with norandommap, loops > 1 or verify_backlog)",
        |j, v, _| {
            j.experimental_verify = v.b();
            Ok(())
        }
    ),
    opt!(
        "verify_state_load",
        [],
        Kind::Bool,
        "0",
        Io,
        "1: read local-NAME-N-verify.state first and stop at a read of a write the saved run may not have completed",
        |j, v, _| {
            j.verify_state_load = v.b();
            Ok(())
        }
    ),
    opt!(
        "trim_percentage",
        [],
        Kind::Int { min: 0, max: 100 },
        "0",
        Io,
        "percent of verified blocks trimmed: 0 only (fio's default)",
        |_, v, o| fio_default_only(
            o,
            &v.n().to_string(),
            &["0"],
            "verified blocks are not trimmed"
        )
    ),
    opt!(
        "iodepth_batch",
        ["iodepth_batch_submit"],
        Kind::Int { min: 0, max: 65536 },
        "1",
        Engine,
        "I/Os submitted at once: 1 (fio's default), or any value that fio makes 1 (iodepth=1); the synchronous engines complete each I/O in its call",
        |j, v, _| {
            j.iodepth_batch = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "iodepth_low",
        [],
        Kind::Int { min: 0, max: 65536 },
        "iodepth",
        Engine,
        "refill the queue when it drains to this depth: iodepth (fio's default; 0 or more is iodepth too)",
        |j, v, _| {
            j.iodepth_low = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "fadvise_hint",
        [],
        Kind::Choice(&["0", "1", "random", "sequential"]),
        "1",
        File,
        "posix_fadvise of each file: 0 none, 1 RANDOM or SEQUENTIAL as the job, random, sequential",
        |j, v, _| {
            j.fadvise_hint = match v.s() {
                "0" => FadviseHint::None,
                "random" => FadviseHint::Random,
                "sequential" => FadviseHint::Sequential,
                _ => FadviseHint::Workload,
            };
            Ok(())
        }
    ),
    opt!(
        "create_fsync",
        [],
        Kind::Bool,
        "1",
        File,
        "fsync a file after laying it out",
        |j, v, _| {
            j.create_fsync = v.b();
            Ok(())
        }
    ),
    opt!(
        "sync",
        [],
        Kind::Choice(&["none", "0", "sync", "1", "dsync"]),
        "none",
        Io,
        "open the job's files with O_SYNC (sync, 1) or O_DSYNC (dsync)",
        |j, v, _| {
            j.sync_io = match v.s() {
                "sync" | "1" => SyncIo::Sync,
                "dsync" => SyncIo::Dsync,
                _ => SyncIo::None,
            };
            Ok(())
        }
    ),
];
