//! Built-in suites. A suite is a list of named tests, each an engine with its options; the
//! `quick` suite is sized to finish (3 repetitions) in under 5 minutes on a 2-core machine.
//!
//! Must never touch the filesystem: a suite only says what to run.

use super::PlanError;

/// A number a `command` test extracts from its output.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CommandMetricSpec {
    /// Metric name.
    pub name: String,
    /// Regex whose first group is the number.
    pub regex: Option<String>,
    /// Dotted JSON path to the number in the command's standard output.
    pub json: Option<String>,
    /// Unit symbol (`ms`, `MB/s`, ...).
    pub unit: String,
    /// `lower`, `higher` or `neutral`.
    pub direction: String,
    /// A sample whose output lacks this metric fails (others are recorded as missing with a
    /// warning, and the sample keeps the metrics that matched).
    #[serde(default)]
    pub required: bool,
}

/// How the copy test copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CopyPath {
    /// read(2)/write(2) through a buffer.
    ReadWrite,
    /// copy_file_range(2) only.
    CopyFileRange,
    /// copy_file_range with a read/write fallback, as coreutils 9.
    Auto,
}

/// How a test is run.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum EngineSpec {
    /// The native fs_mark engine with these fs_mark flags (without `-d`: the run's directory is
    /// used; a `-d` or `-l` that leaves it is refused when the workload is built).
    FsMark {
        /// fs_mark flags.
        args: Vec<String>,
    },
    /// The native fio engine with this job file text (relative paths resolve against the
    /// run's directory; a path that leaves it is refused when the workload is built).
    Fio {
        /// Job file text (ini).
        job: String,
    },
    /// The native dbench engine.
    Dbench {
        /// Client threads (dbench's NPROCS).
        clients: u32,
        /// Seconds to run (dbench's -t).
        seconds: u32,
        /// Warmup seconds (default t/5).
        warmup_s: Option<u32>,
        /// A loadfile (dbench's -c); `None`: fsdelta's own.
        loadfile: Option<std::path::PathBuf>,
    },
    /// dd-like sequential write, then cold and warm reads.
    Stream {
        /// Bytes.
        size: u64,
        /// Bytes per call.
        block_size: u64,
        /// O_DIRECT.
        direct: bool,
        /// fsync at the end of the write.
        fsync: bool,
        /// 0 (random) ..= 1 (zeros).
        compressibility: f64,
        /// A user's file to write instead of generated data (its size is the size).
        source: Option<std::path::PathBuf>,
    },
    /// Copy a generated file (or the user's `source`) into the target, then sync.
    Copy {
        /// Bytes.
        size: u64,
        /// The copy path.
        method: CopyPath,
        /// 0 (random) ..= 1 (zeros).
        compressibility: f64,
        /// A user's file to copy instead of generated data (its size is the size).
        source: Option<std::path::PathBuf>,
    },
    /// Extract a (generated or given) tarball, then sync.
    Untar {
        /// Files in the generated tree.
        files: u64,
        /// Generator seed.
        seed: u64,
        /// The user's own tarball instead.
        tarball: Option<std::path::PathBuf>,
    },
    /// A user command.
    Command {
        /// Shell command line.
        command: String,
        /// Numbers to extract from its output.
        metrics: Vec<CommandMetricSpec>,
        /// Kill it after this many seconds.
        timeout_s: Option<f64>,
    },
}

/// One test of a suite.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TestSpec {
    /// Name, unique in its suite.
    pub name: String,
    /// What it measures, for `--help` and reports.
    pub description: String,
    /// How it runs.
    pub engine: EngineSpec,
    /// Run the real tool (fio, fs_mark, dbench) instead of the native engine, and read its
    /// output into the same metric names.
    pub external: bool,
    /// Kernel tracepoints counted during each sample (`ext4:ext4_da_write_begin`, `btrfs:*`).
    #[serde(default)]
    pub events: Vec<String>,
}

/// A named list of tests.
#[derive(Clone, Debug, PartialEq)]
pub struct Suite {
    /// Suite name.
    pub name: String,
    /// Tests in run order.
    pub tests: Vec<TestSpec>,
    /// Verdict margins the suite sets (percent); the command line overrides them.
    pub margins: SuiteMargins,
    /// Measure what each sample left on disk (space, compression, extents per file, the
    /// filesystem's counters: `crate::probe::ondisk`); a suite file's `ondisk = false` turns it
    /// off.
    pub ondisk: bool,
    /// Measure extents per file and free-space fragmentation again after each sample's unmount
    /// and mount (`ondisk_remount = true`; default false), as fsperf's fragmentation tests do.
    pub ondisk_remount: bool,
}

/// Verdict margins in percent, each optional (statistics.md's defaults apply otherwise).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SuiteMargins {
    /// Smallest change worth reporting.
    pub eps: Option<f64>,
    /// Unchanged band for throughput and means.
    pub delta: Option<f64>,
    /// Unchanged band for tail percentiles.
    pub delta_tail: Option<f64>,
    /// Unchanged band for maxima.
    pub delta_max: Option<f64>,
}

/// Names of the built-in suites.
pub const BUILTIN_SUITES: &[&str] = &["quick", "fsperf"];

fn fio(name: &str, description: &str, job: &str) -> TestSpec {
    TestSpec {
        name: name.into(),
        description: description.into(),
        external: false,
        events: Vec::new(),
        engine: EngineSpec::Fio {
            job: format!("[{name}]\n{}\n", job.trim()),
        },
    }
}

/// A size in MiB scaled by `scale`, at least `min_mib`, as a fio size string.
fn mib(base_mib: f64, scale: f64, min_mib: u64) -> String {
    let v = ((base_mib * scale).round() as u64).max(min_mib);
    format!("{v}m")
}

/// A duration in seconds scaled by `scale`, at least `min_s`, as a fio time string.
fn secs(base_s: f64, scale: f64, min_s: u64) -> String {
    let v = ((base_s * scale).round() as u64).max(min_s);
    format!("{v}s")
}

/// Total memory of this machine in MiB, for fsperf's randwrite2xram (2 x RAM of writes). The
/// plan reads it as a number handed in, so it stays free of I/O.
fn fsperf(scale: f64, ram_mib: u64) -> Suite {
    let s = scale;
    Suite {
        margins: SuiteMargins::default(),
        ondisk: true,
        ondisk_remount: false,
        name: if (scale - 1.0).abs() < f64::EPSILON {
            "fsperf".into()
        } else {
            format!("fsperf:scale={scale}")
        },
        tests: vec![
            fio(
                "bufferedrandwrite16g",
                "fsperf: 4k random buffered writes (psync) over 16 GiB, end_fsync",
                &format!(
                    "rw=randwrite\nbs=4k\nsize={}\nioengine=psync\nend_fsync=1",
                    mib(16384.0, s, 64)
                ),
            ),
            fio(
                "bufferedappenddatasync",
                "fsperf: 1 GiB of sequential appends with fdatasync after every write (a database log)",
                &format!(
                    "rw=write\nbs=4k\nsize={}\nfdatasync=1\nioengine=psync",
                    mib(1024.0, s, 16)
                ),
            ),
            fio(
                "dio4kbs16threads",
                "fsperf: 16 jobs of 4k O_DIRECT random writes for 60 s",
                &format!(
                    "rw=randwrite\nbs=4k\ndirect=1\nnumjobs=16\nsize={}\ntime_based=1\nruntime={}\ngroup_reporting=1",
                    mib(1024.0, s, 16),
                    secs(60.0, s, 3)
                ),
            ),
            fio(
                "diorandread",
                "fsperf: 4k O_DIRECT random reads, 4 jobs, 60 s",
                &format!(
                    "rw=randread\nbs=4k\ndirect=1\nnumjobs=4\nsize={}\ntime_based=1\nruntime={}\ngroup_reporting=1",
                    mib(1024.0, s, 16),
                    secs(60.0, s, 3)
                ),
            ),
            fio(
                "emptyfiles500k",
                "fsperf: create 500k empty files (fio filecreate engine)",
                &format!(
                    "ioengine=filecreate\nrw=write\nfilesize=4k\nnrfiles={}\nopenfiles=1\ncreate_on_open=1\nfallocate=none",
                    ((500_000.0 * s).round() as u64).max(1000)
                ),
            ),
            fsmark(
                "smallfiles100k",
                "fsperf: 4 workers x 100k small files (here 4 KiB each), no sync",
                &format!(
                    "-s 4096 -n {} -t 4 -S 0 -D 64 -N 1000",
                    ((100_000.0 * s).round() as u64).max(100)
                ),
            ),
            TestSpec {
                name: "dbench60".into(),
                description: "fsperf's `dbench 60`: 60 clients for dbench's default 600 s (here with fsdelta's own loadfile; client.txt is GPL and not shipped)".into(),
                external: false,
        events: Vec::new(),
                engine: EngineSpec::Dbench {
                    clients: 60,
                    seconds: ((600.0 * s).round() as u32).max(5),
                    warmup_s: None,
                    loadfile: None,
                },
            },
            TestSpec {
                name: "untar".into(),
                description: "fsperf's untarfirefox at its scale: a generated source tree of about 250000 files, extract + sync".into(),
                external: false,
        events: Vec::new(),
                engine: EngineSpec::Untar {
                    files: ((250_000.0 * s).round() as u64).max(1000),
                    seed: 1,
                    tarball: None,
                },
            },
            fio(
                "randwrite2xram",
                "fsperf: 4 jobs of 4k random buffered writes, 2 x RAM in all, for at most 300 s",
                &format!(
                    "rw=randwrite\nbs=4k\nnumjobs=4\nsize={}\nruntime={}\nend_fsync=1\ngroup_reporting=1",
                    mib(ram_mib as f64 * 2.0 / 4.0, s, 16),
                    secs(300.0, s, 3)
                ),
            ),
        ],
    }
}

fn fsmark(name: &str, description: &str, args: &str) -> TestSpec {
    TestSpec {
        name: name.into(),
        description: description.into(),
        external: false,
        events: Vec::new(),
        engine: EngineSpec::FsMark {
            args: args.split_whitespace().map(String::from).collect(),
        },
    }
}

/// A built-in suite by name. `scale` shrinks the `fsperf` suite's sizes and times for small
/// machines (1.0 is fsperf's own scale); `ram_mib` is the machine's memory, for randwrite2xram.
pub fn builtin_scaled(name: &str, scale: f64, ram_mib: u64) -> Result<Suite, PlanError> {
    if !(scale.is_finite() && scale > 0.0 && scale <= 1.0) {
        return Err(PlanError::BadScale(scale));
    }
    match name {
        "fsperf" => Ok(fsperf(scale, ram_mib)),
        other => builtin(other),
    }
}

/// A built-in suite by name.
pub fn builtin(name: &str) -> Result<Suite, PlanError> {
    match name {
        "fsperf" => Ok(fsperf(1.0, 8192)),
        "quick" => Ok(Suite {
            margins: SuiteMargins::default(),
            ondisk: true,
            ondisk_remount: false,
            name: "quick".into(),
            tests: vec![
                fsmark(
                    "emptyfiles",
                    "create 2 x 10000 empty files in 16 subdirectories (round robin, 256 a directory), no sync",
                    "-s 0 -n 10000 -t 2 -S 0 -D 16 -N 256",
                ),
                fsmark(
                    "smallfiles",
                    "create 2 x 2000 files of 4 KiB, fsync each before close",
                    "-s 4096 -n 2000 -t 2 -S 1",
                ),
                fsmark(
                    "bigdir",
                    "create 20000 empty files in one directory, no sync",
                    "-s 0 -n 20000 -t 1 -S 0",
                ),
                fio(
                    "seqwrite",
                    "1 job, sequential buffered writes of 1 GiB in 1 MiB blocks, end_fsync",
                    "rw=write\nbs=1M\nsize=1g\nend_fsync=1",
                ),
                fio(
                    "randwrite",
                    "1 job, 4k random buffered writes over a 1 GiB file, end_fsync",
                    "rw=randwrite\nbs=4k\nsize=1g\nend_fsync=1",
                ),
                fio(
                    "randread",
                    "4k random reads of a 1 GiB file through the page cache, 10 s",
                    "rw=randread\nbs=4k\nsize=1g\ninvalidate=0\ntime_based=1\nruntime=10s",
                ),
                fio(
                    "diorandwrite",
                    "4k O_DIRECT random writes, 2 jobs, 10 s (skipped where the target rejects O_DIRECT)",
                    "rw=randwrite\nbs=4k\ndirect=1\nnumjobs=2\nsize=64m\ntime_based=1\nruntime=10s\ngroup_reporting=1",
                ),
                TestSpec {
                    name: "dbench".into(),
                    description: "dbench with fsdelta's own loadfile, 2 clients, 10 s".into(),
                    external: false,
        events: Vec::new(),
                    engine: EngineSpec::Dbench {
                        clients: 2,
                        seconds: 10,
                        warmup_s: None,
                        loadfile: None,
                    },
                },
                TestSpec {
                    name: "untar".into(),
                    description: "extract a generated 3000-file source tree, then sync".into(),
                    external: false,
        events: Vec::new(),
                    engine: EngineSpec::Untar {
                        files: 3000,
                        seed: 1,
                        tarball: None,
                    },
                },
                TestSpec {
                    name: "stream".into(),
                    description: "dd-like: write 256 MiB in 1 MiB blocks with fsync, read it cold and warm".into(),
                    external: false,
        events: Vec::new(),
                    engine: EngineSpec::Stream {
                        size: 256 << 20,
                        block_size: 1 << 20,
                        direct: false,
                        fsync: true,
                        compressibility: 0.5,
                        source: None,
                    },
                },
                TestSpec {
                    name: "copy".into(),
                    description: "cp + sync: copy a 256 MiB half-compressible file into the target with read/write, then sync".into(),
                    external: false,
        events: Vec::new(),
                    engine: EngineSpec::Copy {
                        size: 256 << 20,
                        method: CopyPath::ReadWrite,
                        compressibility: 0.5,
                        source: None,
                    },
                },
                fio(
                    "uringread",
                    "io_uring 4k O_DIRECT random reads, iodepth 32, 10 s (skipped where the target rejects O_DIRECT)",
                    "ioengine=io_uring\nrw=randread\nbs=4k\ndirect=1\niodepth=32\nsize=64m\ntime_based=1\nruntime=10s",
                ),
            ],
        }),
        other => Err(PlanError::UnknownSuite {
            name: other.into(),
            known: BUILTIN_SUITES.join(", "),
        }),
    }
}

/// The fio options a suite test may sweep (`sweep = { iodepth = [1, 4, 16] }`): the four a
/// response curve is drawn over (docs/workloads.md).
pub const SWEEP_KEYS: [&str; 4] = ["iodepth", "bs", "numjobs", "rate_iops"];

/// The name of one point of a swept test: `randread[iodepth=8]`. `compare::curve` reads it back
/// (the name is what every sample stores, so a curve needs nothing else); a test name of a suite
/// file never holds `[`, so only sweep points have this form.
pub fn point_name(test: &str, key: &str, value: &str) -> String {
    format!("{test}[{key}={value}]")
}

/// The tests of a fio test swept over `key`: one a value, in the order given, each its
/// [`point_name`] with `key=value` set in every section of the job. `job` is the test's job
/// text with its sections (`[name]` first); a job that sets `key` itself (or `blocksize` for
/// `bs`) is refused, since which of the two settings fio would use depends on where it stands.
pub fn sweep(base: &TestSpec, key: &str, values: &[String]) -> Result<Vec<TestSpec>, String> {
    let EngineSpec::Fio { job } = &base.engine else {
        return Err("`sweep` is for fio tests (workload = \"fio\")".into());
    };
    let names: &[&str] = if key == "bs" {
        &["bs", "blocksize"]
    } else {
        &[key]
    };
    if let Some(line) = job.lines().find(|l| {
        let l = l.trim_start();
        names.iter().any(|n| {
            l.strip_prefix(n)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
    }) {
        return Err(format!(
            "the job sets `{}` itself and the sweep sets it too: remove it from the job",
            line.trim()
        ));
    }
    Ok(values
        .iter()
        .map(|v| {
            let mut text = String::with_capacity(job.len() + 32);
            for line in job.lines() {
                text.push_str(line);
                text.push('\n');
                let l = line.trim();
                if l.starts_with('[') && l.ends_with(']') {
                    text.push_str(&format!("{key}={v}\n"));
                }
            }
            TestSpec {
                name: point_name(&base.name, key, v),
                description: format!("{} ({key}={v})", base.description),
                engine: EngineSpec::Fio { job: text },
                external: base.external,
                events: base.events.clone(),
            }
        })
        .collect())
}

impl Suite {
    /// The tests named in `names` (all when empty), in suite order, or an error listing the known
    /// tests.
    pub fn select(&self, names: &[String]) -> Result<Vec<TestSpec>, PlanError> {
        if names.is_empty() {
            return Ok(self.tests.clone());
        }
        // A swept test's name selects every point of its curve.
        let picks = |t: &TestSpec, n: &String| crate::model::test_selects(n, &t.name);
        for n in names {
            if !self.tests.iter().any(|t| picks(t, n)) {
                return Err(PlanError::UnknownTest {
                    name: n.clone(),
                    suite: self.name.clone(),
                    known: self
                        .tests
                        .iter()
                        .map(|t| t.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        Ok(self
            .tests
            .iter()
            .filter(|t| names.iter().any(|n| picks(t, n)))
            .cloned()
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_suite_has_the_foundation_tests() {
        let s = builtin("quick").unwrap();
        let names: Vec<_> = s.tests.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names[..3], ["emptyfiles", "smallfiles", "bigdir"]);
        let EngineSpec::FsMark { args } = &s.tests[0].engine else {
            panic!("emptyfiles is an fs_mark test")
        };
        assert_eq!(args.join(" "), "-s 0 -n 10000 -t 2 -S 0 -D 16 -N 256");
    }

    #[test]
    fn selecting_an_unknown_test_lists_the_known_ones() {
        let s = builtin("quick").unwrap();
        let e = s.select(&["nope".into()]).unwrap_err().to_string();
        assert!(
            e.contains("emptyfiles, smallfiles, bigdir, seqwrite"),
            "{e}"
        );
        let picked = s.select(&["bigdir".into(), "emptyfiles".into()]).unwrap();
        assert_eq!(picked.len(), 2);
        assert_eq!(picked[0].name, "emptyfiles");
        assert!(builtin("slow").unwrap_err().to_string().contains("quick"));
    }

    #[test]
    fn fsperf_scales_sizes_and_times_and_says_so_in_its_name() {
        let full = builtin_scaled("fsperf", 1.0, 24576).unwrap();
        assert_eq!(full.name, "fsperf");
        let small = builtin_scaled("fsperf", 0.01, 24576).unwrap();
        assert_eq!(small.name, "fsperf:scale=0.01");
        let job = |s: &Suite, n: &str| match &s.tests.iter().find(|t| t.name == n).unwrap().engine {
            EngineSpec::Fio { job } => job.clone(),
            EngineSpec::FsMark { args } => args.join(" "),
            other => panic!("unexpected engine {other:?}"),
        };
        assert!(job(&full, "bufferedrandwrite16g").contains("size=16384m"));
        assert!(job(&small, "bufferedrandwrite16g").contains("size=164m"));
        assert!(job(&full, "dio4kbs16threads").contains("runtime=60s"));
        assert!(job(&small, "dio4kbs16threads").contains("runtime=3s"));
        assert!(job(&full, "randwrite2xram").contains("size=12288m"));
        assert!(builtin_scaled("fsperf", 0.0, 1).is_err());
        assert!(builtin_scaled("fsperf", 2.0, 1).is_err());
    }
}
