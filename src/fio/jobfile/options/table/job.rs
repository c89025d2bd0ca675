//! Part of the option table (see [`super`]): the job and its I/O: name and description, CPUs and
//! NUMA, rw= and block sizes, files and their names, the engine and depth, fsync, timing, the
//! file's life (invalidate, fallocate, unlink) and the random generator.
//!
//! The rows keep the table's order (the order of `--help` within a category and of the
//! supported-options list): a part is a run of that order, never a regrouping. What it must
//! never do: hold a row another part has.

use super::{ENGINES, Kind, OptDef, SEC, U32};
use crate::fio::jobfile::options::setters::{
    set_blockalign, set_bs, set_bsrange, set_bssplit, set_engine, set_file_service, set_filesize,
    set_rw, set_size,
};
use crate::fio::jobfile::options::values::{colon_list, cpu_list, cpu_set};
use crate::fio::jobfile::{Fallocate, RandomGenerator, RwSequencer, err, numa};

/// Rows `name` to `openfiles`, in the table's order.
pub(super) static ROWS: &[OptDef] = &[
    opt!(
        "name",
        [],
        Kind::Text,
        "section name",
        General,
        "job name (in [global] it names nothing: jobs keep their section names, as in fio)",
        |j, v, o| {
            if v.s().is_empty() {
                return err(&o.origin, "option 'name' needs a value");
            }
            j.name = v.s().to_string();
            Ok(())
        }
    ),
    opt!(
        "description",
        [],
        Kind::Text,
        "",
        General,
        "free text shown with the job",
        |j, v, _| {
            j.description = Some(v.s().to_string());
            Ok(())
        }
    ),
    opt!(
        "rw",
        ["readwrite"],
        Kind::Text,
        "read",
        Io,
        "read, write, randread, randwrite, rw (readwrite), randrw",
        set_rw
    ),
    opt!(
        "cpumask",
        [],
        Kind::Text,
        "",
        General,
        "the CPUs the job may run on, as a bit mask (bit N: CPU N)",
        |j, v, o| {
            let t = v.s().trim();
            let mask = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                Some(h) => u64::from_str_radix(h, 16),
                None => t.parse::<u64>(),
            }
            .or_else(|_| {
                err(
                    &o.origin,
                    format!("option 'cpumask={t}': not a number (a bit mask: 3 is CPUs 0 and 1)"),
                )
            })?;
            let cpus: Vec<usize> = (0..64).filter(|i| mask & (1u64 << i) != 0).collect();
            j.cpumask = Some(cpu_set(cpus, "cpumask", t, o)?);
            Ok(())
        }
    ),
    opt!(
        "cpus_allowed",
        [],
        Kind::Text,
        "",
        General,
        "the CPUs the job may run on: a list of N and N-M (0-1,3)",
        |j, v, o| {
            j.cpumask = Some(cpu_list(v.s(), "cpus_allowed", o)?);
            Ok(())
        }
    ),
    opt!(
        "lockfile",
        [],
        Kind::Choice(&["none"]),
        "none",
        File,
        "file locking between jobs: none (fio's default; exclusive and readwrite are not supported)",
        |_, _, _| Ok(())
    ),
    opt!(
        "cpus_allowed_policy",
        [],
        Kind::Choice(&["shared", "split"]),
        "shared",
        General,
        "shared: every clone may use every CPU of the set; split: each clone one CPU of it",
        |j, v, _| {
            j.cpus_split = v.s() == "split";
            Ok(())
        }
    ),
    opt!(
        "numa_cpu_nodes",
        [],
        Kind::Text,
        "",
        General,
        "run the job's threads on the CPUs of these NUMA nodes (0, 0-1, 0,2, all, !N, +N)",
        |j, v, o| {
            j.numa_cpu_nodes = Some(
                numa::NodeList::parse(v.s(), &o.origin)
                    .or_else(|e| err(&o.origin, format!("option 'numa_cpu_nodes': {e}")))?,
            );
            Ok(())
        }
    ),
    opt!(
        "numa_mem_policy",
        [],
        Kind::Text,
        "",
        General,
        "memory policy of the job's threads: default, prefer:N, bind:NODES, interleave[:NODES], local",
        |j, v, o| {
            j.numa_mem_policy = Some(
                numa::MemPolicy::parse(v.s(), &o.origin)
                    .or_else(|e| err(&o.origin, format!("option 'numa_mem_policy': {e}")))?,
            );
            Ok(())
        }
    ),
    opt!(
        "rw_sequencer",
        [],
        Kind::Choice(&["sequential", "identical"]),
        "sequential",
        Io,
        "I/Os of rw=rand...:N between two random offsets: sequential (after the last) or identical (the last again)",
        |j, v, _| {
            j.rw_sequencer = match v.s() {
                "identical" => RwSequencer::Identical,
                _ => RwSequencer::Sequential,
            };
            Ok(())
        }
    ),
    opt!(
        "rwmixread",
        [],
        Kind::Int { min: 0, max: 100 },
        "50",
        Io,
        "percent of mixed I/O that reads",
        |j, v, _| {
            j.rwmixread = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "rwmixwrite",
        [],
        Kind::Int { min: 0, max: 100 },
        "50",
        Io,
        "percent of mixed I/O that writes",
        |j, v, _| {
            j.rwmixread = 100 - v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "bs",
        ["blocksize"],
        Kind::Text,
        "4k",
        Io,
        "block size: bs=N, or bs=READ,WRITE[,TRIM]",
        set_bs
    ),
    opt!(
        "bsrange",
        ["blocksize_range"],
        Kind::Text,
        "bs",
        Io,
        "block sizes drawn from LOW-HIGH (multiples of LOW), per direction READ,WRITE",
        set_bsrange
    ),
    opt!(
        "bssplit",
        [],
        Kind::Text,
        "",
        Io,
        "block sizes by share: SIZE/PERCENT:SIZE/PERCENT..., per direction READ,WRITE[,TRIM]",
        set_bssplit
    ),
    opt!(
        "ba",
        ["blockalign"],
        Kind::Text,
        "min bs",
        Io,
        "alignment of random offsets, per direction READ,WRITE (turns off the random map)",
        set_blockalign
    ),
    opt!(
        "bs_is_seq_rand",
        [],
        Kind::Bool,
        "0",
        Io,
        "the READ,WRITE block sizes apply to sequential,random I/O instead",
        |j, v, _| {
            j.bs_is_seq_rand = v.b();
            Ok(())
        }
    ),
    opt!(
        "size",
        [],
        Kind::Text,
        "size of the files",
        File,
        "bytes per job clone (split across its files), or N% of the existing files",
        set_size
    ),
    opt!(
        "filesize",
        [],
        Kind::Text,
        "size/nrfiles",
        File,
        "size of each file; LOW:HIGH (or LOW-HIGH) draws each file's size",
        set_filesize
    ),
    opt!(
        "nrfiles",
        ["nr_files"],
        Kind::Int { min: 1, max: U32 },
        "1",
        File,
        "files per job clone",
        |j, v, _| {
            j.nrfiles = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "filename_format",
        [],
        Kind::Text,
        "$jobname.$jobnum.$filenum",
        File,
        "names of files without filename=: $jobname, $jobnum (clone), $filenum, $clientuid (empty)",
        |j, v, o| {
            if v.s().is_empty() {
                return err(
                    &o.origin,
                    "option 'filename_format' needs a value (fio's default: $jobname.$jobnum.$filenum)",
                );
            }
            j.filename_format = Some(v.s().to_string());
            Ok(())
        }
    ),
    opt!(
        "filename",
        [],
        Kind::Text,
        "$jobname.$jobnum.$filenum",
        File,
        "file names, ':'-separated",
        |j, v, o| {
            j.filename = colon_list(v.s(), o, "filename")?;
            Ok(())
        }
    ),
    opt!(
        "directory",
        [],
        Kind::Text,
        ".",
        File,
        "directories, ':'-separated (files are spread across them)",
        |j, v, o| {
            j.directory = colon_list(v.s(), o, "directory")?;
            Ok(())
        }
    ),
    opt!(
        "numjobs",
        [],
        Kind::Int { min: 1, max: 4096 },
        "1",
        General,
        "clones of the job, each a thread",
        |j, v, _| {
            j.numjobs = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "ioengine",
        [],
        Kind::Choice(ENGINES),
        "psync",
        Engine,
        "how I/O is issued",
        set_engine
    ),
    opt!(
        "iodepth",
        [],
        Kind::Int { min: 1, max: 65536 },
        "1",
        Engine,
        "I/Os kept in flight (asynchronous engines)",
        |j, v, _| {
            j.iodepth = v.n() as u32;
            Ok(())
        }
    ),
    opt!("direct", [], Kind::Bool, "0", Io, "O_DIRECT", |j, v, _| {
        j.direct = v.b();
        Ok(())
    }),
    opt!(
        "atomic",
        [],
        Kind::Bool,
        "0",
        Io,
        "atomic direct I/O: O_DIRECT whatever direct= says (fio 3.33's O_ATOMIC open flag is unknown to Linux, which ignores it)",
        |j, v, _| {
            j.atomic = v.b();
            Ok(())
        }
    ),
    opt!(
        "buffered",
        [],
        Kind::Bool,
        "1",
        Io,
        "the opposite of direct",
        |j, v, _| {
            j.direct = !v.b();
            Ok(())
        }
    ),
    opt!(
        "fsync",
        [],
        Kind::Int { min: 0, max: U32 },
        "0",
        Io,
        "fsync every N writes",
        |j, v, _| {
            j.fsync = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "fdatasync",
        [],
        Kind::Int { min: 0, max: U32 },
        "0",
        Io,
        "fdatasync every N writes",
        |j, v, _| {
            j.fdatasync = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "end_fsync",
        [],
        Kind::Bool,
        "0",
        Io,
        "fsync the files when the job ends",
        |j, v, _| {
            j.end_fsync = v.b();
            Ok(())
        }
    ),
    opt!(
        "fsync_on_close",
        [],
        Kind::Bool,
        "0",
        Io,
        "fsync a file when it is closed",
        |j, v, _| {
            j.fsync_on_close = v.b();
            Ok(())
        }
    ),
    opt!(
        "time_based",
        [],
        Kind::Flag,
        "0",
        Time,
        "repeat the workload until runtime",
        |j, v, _| {
            j.time_based = v.b();
            Ok(())
        }
    ),
    opt!(
        "runtime",
        ["timeout"],
        Kind::Time { default_us: SEC },
        "0 (no limit)",
        Time,
        "limit (or, with time_based, length) of the run",
        |j, v, _| {
            let t = v.time();
            j.runtime = if t.is_zero() { None } else { Some(t) };
            Ok(())
        }
    ),
    opt!(
        "ramp_time",
        [],
        Kind::Time { default_us: SEC },
        "0",
        Time,
        "run this long before measuring",
        |j, v, _| {
            j.ramp_time = v.time();
            Ok(())
        }
    ),
    opt!(
        "clocksource",
        [],
        Kind::Choice(&["gettimeofday", "clock_gettime", "cpu"]),
        "cpu where the TSC is invariant, else clock_gettime",
        Time,
        "clock of the timestamps (cpu: the calibrated TSC)",
        |j, v, _| {
            j.clocksource = crate::probe::clock::ClockSource::from_fio_name(v.s());
            Ok(())
        }
    ),
    opt!(
        "startdelay",
        [],
        Kind::Time { default_us: SEC },
        "0",
        Time,
        "wait this long before starting the job",
        |j, v, _| {
            j.startdelay = v.time();
            Ok(())
        }
    ),
    opt!(
        "invalidate",
        [],
        Kind::Bool,
        "1",
        File,
        "drop the files' page cache before the job",
        |j, v, _| {
            j.invalidate = v.b();
            Ok(())
        }
    ),
    opt!(
        "fallocate",
        [],
        Kind::Choice(&["none", "native", "posix", "keep", "truncate", "0", "1"]),
        "native",
        File,
        "preallocation at layout",
        |j, v, _| {
            j.fallocate = match v.s() {
                "none" | "0" => Fallocate::None,
                "native" => Fallocate::Native,
                "posix" | "1" => Fallocate::Posix,
                "keep" => Fallocate::Keep,
                _ => Fallocate::Truncate,
            };
            Ok(())
        }
    ),
    opt!(
        "create_on_open",
        [],
        Kind::Bool,
        "0",
        File,
        "create files when first opened, not at layout",
        |j, v, _| {
            j.create_on_open = v.b();
            Ok(())
        }
    ),
    opt!(
        "unlink_each_loop",
        [],
        Kind::Bool,
        "0",
        File,
        "delete the files before every loop after the first (the loop's writes create them anew)",
        |j, v, _| {
            j.unlink_each_loop = v.b();
            Ok(())
        }
    ),
    opt!(
        "file_append",
        [],
        Kind::Bool,
        "0",
        File,
        "I/O after the end of the file: the offset is the existing file's size (regular files)",
        |j, v, _| {
            j.file_append = v.b();
            Ok(())
        }
    ),
    opt!(
        "unlink",
        [],
        Kind::Bool,
        "0",
        File,
        "delete the files when the job ends",
        |j, v, _| {
            j.unlink = v.b();
            Ok(())
        }
    ),
    opt!(
        "blocksize_unaligned",
        ["bs_unaligned"],
        Kind::Flag,
        "0",
        Io,
        "do not round block sizes from bsrange/bssplit down to a multiple of the smallest",
        |j, v, _| {
            j.blocksize_unaligned = v.b();
            Ok(())
        }
    ),
    opt!(
        "loops",
        [],
        Kind::Int { min: 1, max: U32 },
        "1",
        General,
        "repetitions of the workload",
        |j, v, _| {
            j.loops = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "randrepeat",
        [],
        Kind::Bool,
        "1",
        Io,
        "seed the generators repeatably",
        |j, v, _| {
            j.randrepeat = v.b();
            Ok(())
        }
    ),
    opt!(
        "allrandrepeat",
        [],
        Kind::Bool,
        "0",
        Io,
        "seed every generator repeatably",
        |j, v, _| {
            j.allrandrepeat = v.b();
            Ok(())
        }
    ),
    opt!(
        "randseed",
        [],
        Kind::Int {
            min: 0,
            max: u64::MAX
        },
        "0x89",
        Io,
        "explicit seed",
        |j, v, _| {
            j.randseed = Some(v.n());
            Ok(())
        }
    ),
    opt!(
        "norandommap",
        [],
        Kind::Flag,
        "0",
        Io,
        "no random map: random blocks may repeat within a pass",
        |j, v, _| {
            j.norandommap = v.b();
            Ok(())
        }
    ),
    opt!(
        "random_generator",
        [],
        Kind::Choice(&["tausworthe", "tausworthe64", "lfsr"]),
        "tausworthe",
        Io,
        "offset generator",
        |j, v, _| {
            j.random_generator = match v.s() {
                "tausworthe" => RandomGenerator::Tausworthe,
                "tausworthe64" => RandomGenerator::Tausworthe64,
                _ => RandomGenerator::Lfsr,
            };
            Ok(())
        }
    ),
    opt!(
        "file_service_type",
        [],
        Kind::Text,
        "roundrobin",
        File,
        "roundrobin[:N], random[:N], sequential",
        set_file_service
    ),
    opt!(
        "openfiles",
        [],
        Kind::Int { min: 1, max: U32 },
        "nrfiles",
        File,
        "files kept open at once",
        |j, v, _| {
            j.openfiles = Some(v.n() as u32);
            Ok(())
        }
    ),
];
