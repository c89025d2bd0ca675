//! Part of the option table (see [`super`]): grouping (group_reporting, stonewall, thread),
//! write-buffer contents (patterns, compression, dedupe), latency percentiles and statistics
//! switches, io_uring's engine options and wait_for.
//!
//! The rows keep the table's order (the order of `--help` within a category and of the
//! supported-options list): a part is a run of that order, never a regrouping. What it must
//! never do: hold a row another part has.

use super::{Kind, OptDef, U32, URING};
use crate::fio::jobfile::options::setters::set_percentile_list;
use crate::fio::jobfile::{DedupeMode, IoEngine, err, pattern};

/// Rows `group_reporting` to `wait_for`, in the table's order.
pub(super) static ROWS: &[OptDef] = &[
    opt!(
        "group_reporting",
        [],
        Kind::Flag,
        "0",
        Stat,
        "report each group as one job",
        |j, v, _| {
            j.group_reporting = v.b();
            Ok(())
        }
    ),
    opt!(
        "stonewall",
        ["wait_for_previous"],
        Kind::Flag,
        "0",
        General,
        "wait for the previous jobs to finish (starts a new group)",
        |j, v, _| {
            j.stonewall = v.b();
            Ok(())
        }
    ),
    opt!(
        "new_group",
        [],
        Kind::Flag,
        "0",
        Stat,
        "start a new reporting group",
        |j, v, _| {
            j.new_group = v.b();
            Ok(())
        }
    ),
    opt!(
        "thread",
        [],
        Kind::Flag,
        "0",
        General,
        "accepted: workers are always threads",
        |j, v, _| {
            j.thread = v.b();
            Ok(())
        }
    ),
    opt!(
        "zero_buffers",
        [],
        Kind::Flag,
        "0",
        Buffer,
        "write buffers of zeros",
        |j, v, _| {
            j.zero_buffers = v.b();
            Ok(())
        }
    ),
    opt!(
        "buffer_pattern",
        [],
        Kind::Text,
        "",
        Buffer,
        "write buffers filled with a pattern: 0xHEX, decimal, \"string\" (no %o)",
        |j, v, o| {
            let p = match pattern::parse(v.s()) {
                Ok(p) => p,
                Err(e) => return err(&o.origin, format!("option 'buffer_pattern': {e}")),
            };
            if !p.offsets_at.is_empty() {
                return err(
                    &o.origin,
                    "option 'buffer_pattern': %o is not allowed here (fio 3.33 fills no formats into buffer_pattern; use it in verify_pattern)",
                );
            }
            // fio's str_buffer_pattern_cb: the pattern turns scrambling and zero buffers off.
            j.buffer_pattern = Some(p.bytes);
            j.scramble_buffers = false;
            j.zero_buffers = false;
            Ok(())
        }
    ),
    opt!(
        "refill_buffers",
        [],
        Kind::Flag,
        "0",
        Buffer,
        "refill write buffers before every write",
        |j, v, _| {
            j.refill_buffers = Some(v.b());
            Ok(())
        }
    ),
    opt!(
        "scramble_buffers",
        [],
        Kind::Bool,
        "1",
        Buffer,
        "stamp each 512-byte block of a write",
        |j, v, _| {
            j.scramble_buffers = v.b();
            Ok(())
        }
    ),
    opt!(
        "buffer_compress_percentage",
        [],
        Kind::Int { min: 0, max: 100 },
        "0",
        Buffer,
        "percent of written data that compresses",
        |j, v, _| {
            j.buffer_compress_percentage = Some(v.n() as u32);
            Ok(())
        }
    ),
    opt!(
        "dedupe_percentage",
        [],
        Kind::Int { min: 0, max: 100 },
        "0",
        Buffer,
        "percent of write buffers that repeat an earlier one (fio's generator)",
        |j, v, _| {
            j.dedupe_percentage = v.n() as u32;
            // fio's str_dedupe_cb: dedupe refills the buffers (a later refill_buffers= wins).
            j.refill_buffers = Some(true);
            Ok(())
        }
    ),
    opt!(
        "dedupe_mode",
        [],
        Kind::Choice(&["repeat", "working_set"]),
        "repeat",
        Buffer,
        "a dedupe repeats the last unique buffer, or one of a working set",
        |j, v, _| {
            j.dedupe_mode = if v.s() == "working_set" {
                DedupeMode::WorkingSet
            } else {
                DedupeMode::Repeat
            };
            Ok(())
        }
    ),
    opt!(
        "dedupe_working_set_percentage",
        [],
        Kind::Int { min: 0, max: 100 },
        "5",
        Buffer,
        "percent of size that is the dedupe working set",
        |j, v, _| {
            j.dedupe_working_set_percentage = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "dedupe_global",
        [],
        Kind::Bool,
        "0",
        Buffer,
        "share the dedupe working set with the other dedupe_global jobs",
        |j, v, _| {
            j.dedupe_global = v.b();
            Ok(())
        }
    ),
    opt!(
        "buffer_compress_chunk",
        [],
        Kind::Size,
        "512",
        Buffer,
        "chunk for buffer_compress_percentage",
        |j, v, o| {
            if v.size().0 == 0 {
                return err(
                    &o.origin,
                    "option 'buffer_compress_chunk' must be greater than 0",
                );
            }
            j.buffer_compress_chunk = v.size();
            Ok(())
        }
    ),
    opt!(
        "percentile_list",
        [],
        Kind::Text,
        "1:5:10:...:99.99",
        Stat,
        "percentiles reported, ':'-separated",
        set_percentile_list
    ),
    opt!(
        "lat_percentiles",
        [],
        Kind::Bool,
        "0",
        Stat,
        "percentiles of lat too",
        |j, v, _| {
            j.lat_percentiles = v.b();
            Ok(())
        }
    ),
    opt!(
        "clat_percentiles",
        [],
        Kind::Bool,
        "1",
        Stat,
        "percentiles of clat",
        |j, v, _| {
            j.clat_percentiles = v.b();
            Ok(())
        }
    ),
    opt!(
        "slat_percentiles",
        [],
        Kind::Bool,
        "0",
        Stat,
        "percentiles of slat (libaio, io_uring, posixaio, vsync: the engines that measure it)",
        |j, v, _| {
            j.slat_percentiles = v.b();
            Ok(())
        }
    ),
    opt!(
        "gtod_reduce",
        [],
        Kind::Bool,
        "0",
        Stat,
        "measure no latency at all (sets disable_lat, disable_clat, disable_slat, disable_bw)",
        |j, v, _| {
            j.gtod_reduce = v.b();
            if v.b() {
                j.disable_lat = true;
                j.disable_clat = true;
                j.disable_slat = true;
                j.disable_bw = true;
            }
            Ok(())
        }
    ),
    opt!(
        "disable_lat",
        [],
        Kind::Bool,
        "0",
        Stat,
        "do not measure lat",
        |j, v, _| {
            j.disable_lat = v.b();
            Ok(())
        }
    ),
    opt!(
        "disable_clat",
        [],
        Kind::Bool,
        "0",
        Stat,
        "do not measure clat",
        |j, v, _| {
            j.disable_clat = v.b();
            Ok(())
        }
    ),
    opt!(
        "disable_slat",
        [],
        Kind::Bool,
        "0",
        Stat,
        "do not measure slat",
        |j, v, _| {
            j.disable_slat = v.b();
            Ok(())
        }
    ),
    opt!(
        "disable_bw_measurement",
        ["disable_bw"],
        Kind::Bool,
        "0",
        Stat,
        "do not sample bandwidth and IOPS",
        |j, v, _| {
            j.disable_bw = v.b();
            Ok(())
        }
    ),
    opt!(
        "stats",
        [],
        Kind::Bool,
        "1",
        Stat,
        "report this job (0: run it, report nothing)",
        |j, v, _| {
            j.stats = v.b();
            Ok(())
        }
    ),
    opt!(
        "hipri",
        [],
        Kind::Flag,
        "0",
        Engine,
        engines & [IoEngine::Pvsync2, IoEngine::IoUring],
        "polled completions (pvsync2: RWF_HIPRI; io_uring: IORING_SETUP_IOPOLL, EOPNOTSUPP unless the file's driver polls)",
        |j, v, _| {
            j.hipri = v.b();
            j.uring.iopoll = v.b();
            Ok(())
        }
    ),
    opt!(
        "registerfiles",
        [],
        Kind::Flag,
        "0",
        Engine,
        engines URING,
        "register the job's files with the ring (IORING_REGISTER_FILES, IOSQE_FIXED_FILE)",
        |j, v, _| {
            j.uring.registerfiles = v.b();
            Ok(())
        }
    ),
    opt!(
        "fixedbufs",
        [],
        Kind::Flag,
        "0",
        Engine,
        engines URING,
        "register the I/O buffers with the ring (IORING_REGISTER_BUFFERS, READ_FIXED/WRITE_FIXED)",
        |j, v, _| {
            j.uring.fixedbufs = v.b();
            Ok(())
        }
    ),
    opt!(
        "sqthread_poll",
        [],
        Kind::Flag,
        "0",
        Engine,
        engines URING,
        "a kernel thread polls the submission queue (IORING_SETUP_SQPOLL; implies registerfiles)",
        |j, v, _| {
            j.uring.sqthread_poll = v.b();
            Ok(())
        }
    ),
    opt!(
        "sqthread_poll_cpu",
        [],
        Kind::Int { min: 0, max: U32 },
        "",
        Engine,
        engines URING,
        "the CPU of sqthread_poll's kernel thread (IORING_SETUP_SQ_AFF)",
        |j, v, _| {
            j.uring.sqthread_poll_cpu = Some(v.n() as u32);
            Ok(())
        }
    ),
    opt!(
        "wait_for",
        [],
        Kind::Text,
        "",
        General,
        "start only after the job of this name has finished",
        |j, v, o| {
            if v.s().is_empty() {
                return err(&o.origin, "option 'wait_for' needs a job name");
            }
            j.wait_for = Some(v.s().to_string());
            Ok(())
        }
    ),
];
