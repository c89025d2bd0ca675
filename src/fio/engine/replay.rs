//! fio's I/O log replay (read_iolog=): the text logs `fio version 2 iolog` and `fio version 3
//! iolog` (fio 3.33's iolog.c: init_iolog_read, read_iolog, read_iolog_get, iolog_delay), read
//! into the steps a clone replays, and the job rewritten the way fio rewrites it (the log's
//! files replace the job's, the direction follows the log's reads and writes, the size is the
//! sum of the log's lengths, the largest length sizes the buffers).
//!
//! Why it exists: fio's regression jobs (t0031, t0038) and users replay a pattern captured by
//! write_iolog (ours or fio's). What it must never do: touch a file the user did not name. A
//! log names files itself, so every file it names must be one the job names (filename=, with
//! directory=) or a relative path that stays inside the directory the job runs in (the rule
//! `confine` applies to a suite's files) and is not a symlink or a device there; anything
//! else is refused before any I/O, naming the line. replay_redirect= is the job file naming
//! the one file every I/O goes to, judged as filename= is. With a diskless engine (null) no
//! file is opened and the names are labels only. The blktrace binary format is refused.
//!
//! fio 3.33's own rules kept: a line that does not read is skipped with fio's "bad iolog"
//! message; a trim line is skipped ("bad ddir: 2", fio 3.33's read_iolog has no case for
//! trims); `wait` is ignored in version 3; v3 times are microseconds, and an I/O waits for the
//! time since the line before (scaled by replay_time_scale, none with replay_no_stall) less
//! the time since the last I/O was issued; offsets are divided by replay_scale and rounded
//! down to replay_align.

use crate::fio::jobfile::{Bytes, JobSpec, RwMode, SizeSpec};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What is wrong with a log or the files it names, with how to fix it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReplayError {
    /// The first line is not fio's version 2 or 3 header.
    #[error(
        "{path}: not a fio iolog: the first line must be 'fio version 2 iolog' or 'fio version 3 iolog' (fio 3.33: \"iolog version 1 is no longer supported\"); write the log with write_iolog= (fio's or fsdelta's)"
    )]
    NoHeader { path: String },
    /// A blktrace binary trace.
    #[error(
        "{path}: a blktrace binary trace: read_iolog replays fio's text iologs only (version 2 and 3); convert the trace with fio itself, or capture the pattern with write_iolog="
    )]
    Blktrace { path: String },
    /// The log cannot be read.
    #[error("{path}: cannot read the read_iolog file: {error}")]
    Read { path: String, error: String },
    /// An I/O line names a file no `add` line added.
    #[error(
        "{path}:{line}: '{file}' is used before an 'add' line names it (fio would index a file it does not have); add '{file} add' before its first I/O"
    )]
    UnknownFile {
        path: String,
        line: usize,
        file: String,
    },
    /// A file the log names is outside what the job may touch.
    #[error(
        "{path}:{line}: the log names '{file}', {why}; a replayed log may only touch files the job names itself (filename=) or relative paths inside the directory it runs in: add filename={file} to the job if it is meant, or send every I/O to one file with replay_redirect=FILE"
    )]
    Outside {
        path: String,
        line: usize,
        file: String,
        why: &'static str,
    },
    /// Nothing to replay.
    #[error(
        "{path}: the log holds no read, write or wait to replay (fio 3.33: \"failed initializing iolog\")"
    )]
    Empty { path: String },
    /// An option combination fsdelta does not replay.
    #[error("{what}")]
    Unsupported { what: String },
}

/// What a log line asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Add,
    Open,
    Close,
    Read,
    Write,
    Sync,
    Datasync,
    /// Version 2: wait until this many ms after the job started (fio's DDIR_WAIT).
    Wait,
}

/// One line of a log as fio's sscanf reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// 1-based line number in the log.
    pub number: usize,
    pub file: String,
    pub action: Action,
    pub offset: u64,
    pub len: u64,
    /// Microseconds to wait before it (fio's ipo->delay, from the v3 times).
    pub delay_us: u64,
}

/// A log as read: its version, the lines kept and fio's messages for the lines skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    pub version: u8,
    pub lines: Vec<Line>,
    pub skipped: Vec<String>,
}

/// How fio reads the log: replay_no_stall, replay_time_scale (percent).
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub no_stall: bool,
    pub time_scale: u64,
}

impl Default for Timing {
    fn default() -> Timing {
        Timing {
            no_stall: false,
            time_scale: 100,
        }
    }
}

/// blktrace's magic in the first word of a trace (BLK_IO_TRACE_MAGIC), either byte order.
fn is_blktrace(bytes: &[u8]) -> bool {
    let Some(w) = bytes.get(..4) else {
        return false;
    };
    let w = [w[0], w[1], w[2], w[3]];
    (u32::from_le_bytes(w) & 0xffff_ff00) == 0x6561_7400
        || (u32::from_be_bytes(w) & 0xffff_ff00) == 0x6561_7400
}

/// fio's `%256s`: the next word, at most 256 bytes of it.
fn word<'a>(it: &mut impl Iterator<Item = &'a str>) -> Option<&'a str> {
    it.next().map(|w| {
        let mut end = w.len().min(256);
        while !w.is_char_boundary(end) {
            end -= 1;
        }
        &w[..end]
    })
}

/// fio's `%llu` / `%u` on the next word: its leading digits (None when there are none).
fn number<'a>(it: &mut impl Iterator<Item = &'a str>, max: u64) -> Option<u64> {
    let w = it.next()?;
    let digits: &str = &w[..w.bytes().take_while(u8::is_ascii_digit).count()];
    let v: u64 = digits.parse().ok()?;
    // %u stores the low 32 bits, as C's sscanf does with a larger number.
    Some(if max == u32::MAX as u64 { v & max } else { v })
}

/// Read a log (`path` names it in messages): fio 3.33's read_iolog, line by line.
pub fn parse(bytes: &[u8], path: &str, timing: Timing) -> Result<Parsed, ReplayError> {
    if is_blktrace(bytes) {
        return Err(ReplayError::Blktrace { path: path.into() });
    }
    let text = String::from_utf8_lossy(bytes);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    let version = if first.starts_with("fio version 2 iolog") {
        2
    } else if first.starts_with("fio version 3 iolog") {
        3
    } else {
        return Err(ReplayError::NoHeader { path: path.into() });
    };
    let mut out = Parsed {
        version,
        lines: Vec::new(),
        skipped: Vec::new(),
    };
    let mut last_ttime = 0u64;
    for (i, raw) in lines.enumerate() {
        let lineno = i + 2;
        let mut it = raw.split_ascii_whitespace();
        let mut delay_us = 0;
        // The fields sscanf fills, in order; it stops at the first that does not read.
        if version == 3 {
            let Some(t) = number_field(&mut it) else {
                out.skipped
                    .push(format!("bad iolog{version}: {}", raw.trim_end()));
                continue;
            };
            delay_us = if last_ttime == 0 || timing.no_stall || t < last_ttime {
                0
            } else if timing.time_scale == 100 {
                t - last_ttime
            } else {
                ((t - last_ttime) as f64 * 100.0 / timing.time_scale.max(1) as f64) as u64
            };
            last_ttime = t;
        }
        let file = word(&mut it);
        let act = word(&mut it);
        let offset = number(&mut it, u64::MAX);
        let len = offset.and_then(|_| number(&mut it, u32::MAX as u64));
        let (Some(file), Some(act)) = (file, act) else {
            out.skipped
                .push(format!("bad iolog{version}: {}", raw.trim_end()));
            continue;
        };
        if version == 3 && act == "wait" {
            out.skipped.push(format!(
                "iolog: ignoring wait command with version 3 for file {file}"
            ));
            continue;
        }
        let action = match (act, offset, len) {
            (_, Some(_), Some(_)) => match act {
                "wait" => Action::Wait,
                "read" => Action::Read,
                "write" => Action::Write,
                "sync" => Action::Sync,
                "datasync" => Action::Datasync,
                "trim" => {
                    // fio 3.33 parses the trim and then has no case for it.
                    out.skipped.push("bad ddir: 2".into());
                    continue;
                }
                _ => {
                    out.skipped
                        .push(format!("fio: bad iolog file action: {act}"));
                    continue;
                }
            },
            (_, None, _) => match act {
                "add" => Action::Add,
                "open" => Action::Open,
                "close" => Action::Close,
                _ => {
                    out.skipped
                        .push(format!("fio: bad iolog file action: {act}"));
                    continue;
                }
            },
            _ => {
                out.skipped
                    .push(format!("bad iolog{version}: {}", raw.trim_end()));
                continue;
            }
        };
        if action == Action::Wait && timing.no_stall {
            continue;
        }
        out.lines.push(Line {
            number: lineno,
            file: file.to_string(),
            action,
            offset: offset.unwrap_or(0),
            len: len.unwrap_or(0),
            delay_us,
        });
    }
    Ok(out)
}

/// The leading time of a v3 line.
fn number_field<'a>(it: &mut impl Iterator<Item = &'a str>) -> Option<u64> {
    number(it, u64::MAX)
}

/// One step of a replay, the log's files numbered as the job's files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A read (0) or write (1) of `len` bytes at `offset` of file `file`.
    Io {
        ddir: usize,
        file: usize,
        offset: u64,
        len: u64,
        delay_us: u64,
    },
    /// An fsync (`data`: fdatasync) of file `file`.
    Sync {
        file: usize,
        data: bool,
        delay_us: u64,
    },
    /// Wait until `ms` after the job started (version 2's wait).
    Wait { ms: u64 },
    /// An add, open or close: only its delay is kept (the files are opened at their first
    /// I/O and stay open).
    Pause { delay_us: u64 },
}

/// A job's replay, ready for its clones.
#[derive(Clone, Debug, PartialEq)]
pub struct Replay {
    pub steps: Arc<Vec<Step>>,
    /// fio's messages for the lines it skips, printed once.
    pub notes: Vec<String>,
    /// The job named files of its own (filename=): fio measures their disk (disk_util)
    /// before the log replaces them; without, no disk is measured.
    pub own_files: bool,
}

/// Whether a log file name is one the job may replay (None) or why not.
fn outside(job: &JobSpec, base: &Path, name: &str) -> Option<&'static str> {
    let named = job.filename.iter().any(|f| {
        f == name
            || job
                .directory
                .iter()
                .any(|d| Path::new(d).join(f) == Path::new(name))
    });
    if named {
        return None;
    }
    if crate::workload::leaves_target(name) {
        return Some(
            "a path outside the directory the job runs in that the job does not name itself",
        );
    }
    let dir = job
        .directory
        .first()
        .map_or(base.to_path_buf(), |d| base.join(d));
    // Every component below the directory, not only the last: `sub/f` with `sub` a symlink
    // leads wherever `sub` does.
    let mut at = dir.clone();
    for c in Path::new(name).components() {
        at.push(c);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Some("a symlink in the directory the job runs in (it could lead anywhere)");
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    match std::fs::symlink_metadata(dir.join(name)) {
        Ok(m) if !m.file_type().is_file() => Some("something other than a regular file there"),
        _ => None,
    }
}

/// Rewrite `job` (with read_iolog=) for its replay, as fio's init_iolog_read does: `base` is
/// the run directory (a relative log or file is there), `diskless` whether the engine opens
/// no file. The job's files become the log's (or replay_redirect=), its direction, size and
/// largest block sizes follow the log; the steps go into `job.replay`. Messages for skipped
/// lines are in `Replay::notes`.
pub fn prepare(job: &mut JobSpec, base: &Path, diskless: bool) -> Result<(), ReplayError> {
    let Some(log) = job.read_iolog.clone() else {
        return Ok(());
    };
    if job.verify {
        return Err(ReplayError::Unsupported {
            what: "verify= with read_iolog= is not supported (the replayed writes carry no verify headers here); drop verify= or replay without it".into(),
        });
    }
    let path: PathBuf = if Path::new(&log).is_absolute() {
        PathBuf::from(&log)
    } else {
        base.join(&log)
    };
    let bytes = std::fs::read(&path).map_err(|e| ReplayError::Read {
        path: log.clone(),
        error: e.to_string(),
    })?;
    let timing = Timing {
        no_stall: job.replay_no_stall,
        time_scale: job.replay_time_scale,
    };
    let parsed = parse(&bytes, &log, timing)?;
    let mut names: Vec<String> = Vec::new();
    if let Some(r) = &job.replay_redirect {
        names.push(r.clone());
    }
    let mut steps = Vec::with_capacity(parsed.lines.len());
    let (mut reads, mut writes, mut waits) = (0u64, 0u64, 0u64);
    let mut max_len = [0u64; 2];
    let mut total = 0u64;
    for l in &parsed.lines {
        let fileno = if job.replay_redirect.is_some() {
            0
        } else if l.action == Action::Add {
            match names.iter().position(|n| *n == l.file) {
                Some(i) => i,
                None => {
                    if !diskless {
                        if let Some(why) = outside(job, base, &l.file) {
                            return Err(ReplayError::Outside {
                                path: log.clone(),
                                line: l.number,
                                file: l.file.clone(),
                                why,
                            });
                        }
                    }
                    names.push(l.file.clone());
                    names.len() - 1
                }
            }
        } else if l.action == Action::Wait {
            0
        } else {
            names
                .iter()
                .position(|n| *n == l.file)
                .ok_or_else(|| ReplayError::UnknownFile {
                    path: log.clone(),
                    line: l.number,
                    file: l.file.clone(),
                })?
        };
        let mut offset = l.offset / job.replay_scale.max(1);
        if job.replay_align > 0 {
            offset &= !(job.replay_align - 1);
        }
        let step = match l.action {
            Action::Read | Action::Write => {
                let ddir = usize::from(l.action == Action::Write);
                if ddir == 0 {
                    reads += 1;
                } else {
                    writes += 1;
                }
                max_len[ddir] = max_len[ddir].max(l.len);
                total += l.len;
                Step::Io {
                    ddir,
                    file: fileno,
                    offset,
                    len: l.len,
                    delay_us: l.delay_us,
                }
            }
            Action::Sync | Action::Datasync => Step::Sync {
                file: fileno,
                data: l.action == Action::Datasync,
                delay_us: l.delay_us,
            },
            Action::Wait => {
                waits += 1;
                Step::Wait { ms: l.offset }
            }
            Action::Add | Action::Open | Action::Close => Step::Pause {
                delay_us: l.delay_us,
            },
        };
        steps.push(step);
    }
    if reads == 0 && writes == 0 && waits == 0 {
        return Err(ReplayError::Empty { path: log });
    }
    if names.is_empty() {
        return Err(ReplayError::Empty { path: log });
    }
    job.rw = match (reads > 0, writes > 0) {
        (true, false) => RwMode::Read,
        (false, true) => RwMode::Write,
        _ => RwMode::ReadWrite,
    };
    let own_files = !job.filename.is_empty();
    job.filename = names;
    job.nrfiles = job.filename.len() as u32;
    job.size = Some(SizeSpec::Bytes(Bytes(total.max(1))));
    // One pass: fio's read_iolog_get sets td->done when the log runs out, which ends
    // do_io's loop whatever loops= or time_based say (runtime= still cuts it short).
    job.loops = 1;
    job.time_based = false;
    for (d, &longest) in max_len.iter().enumerate() {
        let (lo, hi) = (job.min_bs(d), job.max_bs(d));
        if longest > hi {
            job.bs_minmax[d] = Some((Bytes(lo), Bytes(longest)));
        }
    }
    job.replay = Some(Replay {
        steps: Arc::new(steps),
        notes: parsed.skipped,
        own_files,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Parsed {
        parse(text.as_bytes(), "log", Timing::default()).unwrap()
    }

    #[test]
    fn version_3_lines_carry_the_time_since_the_line_before() {
        let l = p(
            "fio version 3 iolog\n30 f add\n100 f open\n150 f write 0 4096\n1150 f read 4096 512\n900 f close\n",
        );
        assert_eq!(l.version, 3);
        let d: Vec<(Action, u64, u64, u64)> = l
            .lines
            .iter()
            .map(|x| (x.action, x.offset, x.len, x.delay_us))
            .collect();
        assert_eq!(
            d,
            vec![
                (Action::Add, 0, 0, 0),
                (Action::Open, 0, 0, 70),
                (Action::Write, 0, 4096, 50),
                (Action::Read, 4096, 512, 1000),
                // A time before the last one waits nothing (fio's delay_since_ttime).
                (Action::Close, 0, 0, 0),
            ]
        );
        let t = Timing {
            no_stall: false,
            time_scale: 200,
        };
        let l = parse(b"fio version 3 iolog\n10 f add\n1010 f write 0 1\n", "l", t).unwrap();
        assert_eq!(l.lines[1].delay_us, 500);
        let t = Timing {
            no_stall: true,
            time_scale: 100,
        };
        let l = parse(b"fio version 3 iolog\n10 f add\n1010 f write 0 1\n", "l", t).unwrap();
        assert_eq!(l.lines[1].delay_us, 0);
    }

    #[test]
    fn fio_3_33_skips_trims_bad_lines_and_v3_waits() {
        let l = p(
            "fio version 3 iolog\n1 f add\n2 f trim 0 2147483648\n3 f write 0 4096\nnonsense\n4 f wait 0 10\n5 f frobnicate 0 1\n6 f sync 0 0\n7 f datasync 0 0\n",
        );
        let acts: Vec<Action> = l.lines.iter().map(|x| x.action).collect();
        assert_eq!(
            acts,
            vec![Action::Add, Action::Write, Action::Sync, Action::Datasync]
        );
        assert_eq!(
            l.skipped,
            vec![
                "bad ddir: 2".to_string(),
                "bad iolog3: nonsense".into(),
                "iolog: ignoring wait command with version 3 for file f".into(),
                "fio: bad iolog file action: frobnicate".into(),
            ]
        );
    }

    #[test]
    fn version_2_has_no_times_and_keeps_waits() {
        let l = p("fio version 2 iolog\nf add\nf open\nf write 0 4096\nf wait 0 25\nf close\n");
        assert_eq!(l.version, 2);
        assert!(l.lines.iter().all(|x| x.delay_us == 0));
        assert_eq!(l.lines[3].action, Action::Wait);
        assert_eq!(l.lines[3].offset, 0);
        assert_eq!(l.lines[3].len, 25);
    }

    #[test]
    fn headers_and_blktrace_are_refused_with_the_fix() {
        let e = parse(b"f add\n", "x.log", Timing::default()).unwrap_err();
        assert!(e.to_string().contains("not a fio iolog"), "{e}");
        let mut bt = 0x6561_7407u32.to_le_bytes().to_vec();
        bt.extend([0u8; 44]);
        let e = parse(&bt, "t.bin", Timing::default()).unwrap_err();
        assert!(e.to_string().contains("blktrace binary trace"), "{e}");
        assert!(parse(b"", "e", Timing::default()).is_err());
    }

    #[test]
    fn a_length_is_read_as_fios_unsigned_int() {
        // %u keeps the low 32 bits of a larger number.
        let l = p("fio version 2 iolog\nf add\nf write 0 4294967297\n");
        assert_eq!(l.lines[1].len, 1);
    }

    fn job(text: &str) -> JobSpec {
        let set =
            crate::fio::jobfile::parse_job_text(text, "job", &crate::fio::jobfile::SystemSources)
                .unwrap();
        set.jobs[0].clone()
    }

    #[test]
    fn the_job_takes_the_logs_files_direction_size_and_largest_length() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("log"),
            "fio version 2 iolog\na add\nb add\na write 0 4096\nb write 8192 65536\nb sync 0 0\n",
        )
        .unwrap();
        let mut j = job("[r]\nread_iolog=log\nrw=read\nbs=4k\n");
        prepare(&mut j, d.path(), false).unwrap();
        assert_eq!(j.filename, vec!["a".to_string(), "b".into()]);
        assert_eq!(j.rw, RwMode::Write);
        assert_eq!(j.size, Some(SizeSpec::Bytes(Bytes(69632))));
        assert_eq!(j.max_bs(1), 65536);
        let steps = &j.replay.as_ref().unwrap().steps;
        assert_eq!(
            steps[3],
            Step::Io {
                ddir: 1,
                file: 1,
                offset: 8192,
                len: 65536,
                delay_us: 0
            }
        );
        assert_eq!(
            steps[4],
            Step::Sync {
                file: 1,
                data: false,
                delay_us: 0
            }
        );
        // replay_redirect: one file; replay_scale and replay_align move the offsets.
        let mut j =
            job("[r]\nread_iolog=log\nreplay_redirect=one\nreplay_scale=2\nreplay_align=8192\n");
        prepare(&mut j, d.path(), false).unwrap();
        assert_eq!(j.filename, vec!["one".to_string()]);
        let steps = &j.replay.as_ref().unwrap().steps;
        assert!(matches!(
            steps[3],
            Step::Io {
                file: 0,
                offset: 0,
                ..
            }
        ));
    }

    #[test]
    fn a_log_naming_files_outside_the_run_directory_is_refused_before_any_io() {
        let d = tempfile::tempdir().unwrap();
        for (name, why) in [
            ("/dev/sda", "outside the directory"),
            ("/etc/passwd", "outside the directory"),
            ("../x", "outside the directory"),
            ("link", "a symlink"),
            ("linkdir/passwd", "a symlink"),
            ("fifo", "other than a regular file"),
        ] {
            std::fs::write(
                d.path().join("log"),
                format!("fio version 2 iolog\n{name} add\n{name} write 0 4096\n"),
            )
            .unwrap();
            let _ = std::os::unix::fs::symlink("/etc/passwd", d.path().join("link"));
            let _ = std::os::unix::fs::symlink("/etc", d.path().join("linkdir"));
            let _ = rustix::fs::mknodat(
                rustix::fs::CWD,
                d.path().join("fifo"),
                rustix::fs::FileType::Fifo,
                rustix::fs::Mode::from_raw_mode(0o600),
                0,
            );
            let mut j = job("[r]\nread_iolog=log\n");
            let e = prepare(&mut j, d.path(), false).unwrap_err().to_string();
            assert!(e.contains(&format!("log:2: the log names '{name}'")), "{e}");
            assert!(e.contains(why), "{name}: {e}");
            assert!(e.contains("replay_redirect=FILE"), "{e}");
            // The job naming the file itself allows it (the user named it).
            let mut j = job(&format!("[r]\nread_iolog=log\nfilename={name}\n"));
            if !name.starts_with("..") {
                prepare(&mut j, d.path(), false).unwrap();
            }
            // A diskless engine opens nothing.
            let mut j = job("[r]\nread_iolog=log\nioengine=null\n");
            prepare(&mut j, d.path(), true).unwrap();
        }
        std::fs::write(
            d.path().join("log"),
            "fio version 2 iolog\nsub/f add\nsub/f write 0 4096\n",
        )
        .unwrap();
        prepare(&mut job("[r]\nread_iolog=log\n"), d.path(), false).unwrap();
    }
}
