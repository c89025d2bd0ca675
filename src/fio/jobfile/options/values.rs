//! The value parsers of the option table: how an option's text becomes a typed value and
//! every range check and error message that goes with it (fio's parse.c and the value
//! callbacks of its options.c: numbers, sizes, times, CPU lists, zone counts, errno lists).
//!
//! Why it exists: every row of the table and every setter reads its value through these, so
//! a value is read and refused the same way whichever option carries it. What it must never
//! do: store into a job (the setters do) or change a message (users and tests rely on them).

use crate::fio::jobfile::expr::{SizeValue, parse_size, parse_time_unit};
use crate::fio::jobfile::{Bytes, JobFileError, RawOption, err, expr};
use std::time::Duration;

pub(super) fn value_of(opt: &RawOption) -> Result<&str, JobFileError> {
    match &opt.value {
        Some(v) if !v.is_empty() => Ok(v.as_str()),
        _ => err(&opt.origin, format!("option '{}' needs a value", opt.key)),
    }
}

pub(super) fn parse_bool(opt: &RawOption) -> Result<bool, JobFileError> {
    let Some(v) = &opt.value else {
        return Ok(true);
    };
    match v.to_ascii_lowercase().as_str() {
        "" | "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => err(
            &opt.origin,
            format!("option '{}': '{v}' is not a boolean (use 0 or 1)", opt.key),
        ),
    }
}

/// fio's FIO_OPT_STR_SET (time_based, stonewall, ...): a boolean word, or any number, nonzero
/// meaning set (fio reads `time_based=10` with check_str_bytes and no maximum: on).
pub(super) fn parse_flag(opt: &RawOption) -> Result<bool, JobFileError> {
    match parse_bool(opt) {
        Ok(b) => Ok(b),
        Err(e) => match opt.value.as_deref().map(expr::parse_number) {
            Some(Ok(n)) => Ok(n != 0),
            _ => Err(e),
        },
    }
}

pub(super) fn parse_int(opt: &RawOption, min: u64, max: u64) -> Result<u64, JobFileError> {
    let v = value_of(opt)?;
    match expr::parse_number(v) {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        Ok(n) => err(
            &opt.origin,
            format!("option '{}': {n} is out of range {min}..={max}", opt.key),
        ),
        Err(e) if e.contains("must be positive") => {
            err(&opt.origin, format!("option '{}': {e}", opt.key))
        }
        Err(_) => err(
            &opt.origin,
            format!("option '{}': '{v}' is not a whole number", opt.key),
        ),
    }
}

/// A byte count: no percentage, no range.
pub(super) fn size_value(opt: &RawOption, v: &str) -> Result<Bytes, JobFileError> {
    let t = v.trim();
    if !t.starts_with('(') && !t.starts_with('-') && (t.contains('-') || t.contains(':')) {
        return err(
            &opt.origin,
            format!(
                "option '{}': ranges such as '{v}' are not supported",
                opt.key
            ),
        );
    }
    match parse_size(t) {
        Ok(SizeValue::Bytes(b)) => Ok(b),
        Ok(SizeValue::Percent(_)) => err(
            &opt.origin,
            format!("option '{}' does not take a percentage", opt.key),
        ),
        Err(e) => err(&opt.origin, format!("option '{}': {e}", opt.key)),
    }
}

pub(super) fn time_value(opt: &RawOption, default_us: u64) -> Result<Duration, JobFileError> {
    let v = value_of(opt)?;
    let t = v.trim();
    if !t.starts_with('(') && !t.starts_with('-') && t.contains('-') {
        return err(
            &opt.origin,
            format!(
                "option '{}': ranges such as '{v}' are not supported",
                opt.key
            ),
        );
    }
    parse_time_unit(t, default_us)
        .or_else(|e| err(&opt.origin, format!("option '{}': {e}", opt.key)))
}

pub(super) fn choice_err<T>(opt: &RawOption, v: &str, choices: &str) -> Result<T, JobFileError> {
    err(
        &opt.origin,
        format!(
            "option '{}': '{v}' is not supported (choose one of: {choices})",
            opt.key
        ),
    )
}

/// A row accepting fio's default only: `v` must be one of `accepted`; otherwise an error naming
/// the option and value, and `what` this engine does instead.
pub(super) fn fio_default_only(
    o: &RawOption,
    v: &str,
    accepted: &[&str],
    what: &str,
) -> Result<(), JobFileError> {
    if accepted.contains(&v.trim()) {
        return Ok(());
    }
    err(
        &o.origin,
        format!(
            "option '{}={}' is not supported by fsdelta's fio engine ({what}; accepted: {})",
            o.key,
            o.value.as_deref().unwrap_or("1"),
            accepted.join(", ")
        ),
    )
}

/// [`fio_default_only`] for a boolean row: only `accepted`.
pub(super) fn fio_bool_only(
    o: &RawOption,
    v: bool,
    accepted: bool,
    what: &str,
) -> Result<(), JobFileError> {
    let shown = if v { "1" } else { "0" };
    fio_default_only(o, shown, &[if accepted { "1" } else { "0" }], what)
}

/// The CPUs this machine has configured (fio's cpus_configured, sysconf(_SC_NPROCESSORS_CONF)).
fn cpus_configured() -> usize {
    // SAFETY: sysconf reads a system value and has no other effect.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    n.max(1) as usize
}

/// A CPU set as fio checks it (str_cpumask_cb, set_cpus_allowed): a CPU past the machine's is
/// fio's "CPU N too large (max=M)"; an empty set, which fio accepts and then fails the job
/// with EINVAL from sched_setaffinity, is refused here.
pub(super) fn cpu_set(
    mut cpus: Vec<usize>,
    option: &str,
    value: &str,
    o: &RawOption,
) -> Result<Vec<usize>, JobFileError> {
    let max = cpus_configured();
    if let Some(&c) = cpus.iter().find(|&&c| c >= max) {
        return err(
            &o.origin,
            format!(
                "option '{option}={value}': CPU {c} too large (max={}) (fio: \"failed parsing {option}={value}\"; this machine has CPUs 0-{})",
                max - 1,
                max - 1
            ),
        );
    }
    cpus.sort_unstable();
    cpus.dedup();
    if cpus.is_empty() {
        return err(
            &o.origin,
            format!(
                "option '{option}={value}': selects no CPU (fio would fail the job with EINVAL from sched_setaffinity); name at least one CPU"
            ),
        );
    }
    Ok(cpus)
}

/// fio's CPU list (set_cpus_allowed): comma-separated N or N-M.
pub(super) fn cpu_list(v: &str, option: &str, o: &RawOption) -> Result<Vec<usize>, JobFileError> {
    let bad = |part: &str| {
        err(
            &o.origin,
            format!("option '{option}={v}': '{part}' is not a CPU or a range N-M (example: 0-1,3)"),
        )
    };
    let mut cpus = Vec::new();
    for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (Ok(a), Ok(b)) = (a.trim().parse::<usize>(), b.trim().parse::<usize>()) else {
            return bad(part);
        };
        if b < a {
            return bad(part);
        }
        cpus.extend(a..=b.min(a + 65536));
    }
    cpu_set(cpus, option, v, o)
}

pub(super) fn colon_list(v: &str, o: &RawOption, what: &str) -> Result<Vec<String>, JobFileError> {
    if v.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    let list: Vec<String> = v.split(':').map(str::to_string).collect();
    if list.iter().any(String::is_empty) {
        return err(
            &o.origin,
            format!("option '{what}': empty name in ':' list"),
        );
    }
    Ok(list)
}

/// A fraction in 0..=1 (fio's FIO_OPT_FLOAT_LIST with minfp 0, maxfp 1).
pub(super) fn unit_fraction(v: &str, o: &RawOption) -> Result<f64, JobFileError> {
    match v.trim().parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => err(
            &o.origin,
            format!("option '{}': '{v}' is not a number from 0 to 1", o.key),
        ),
    }
}

/// fio's FIO_OPT_STR_VAL_ZONE: a value ending in `z` is a count of zones (strtoul's digits
/// right before the `z`, kept as a 32-bit count as fio's cast); other text before it is fio's
/// "unexpected zone value". `None`: not a zone value.
pub(super) fn zone_count(v: &str, o: &RawOption) -> Result<Option<u32>, JobFileError> {
    let t = v.trim();
    let Some(num) = t.strip_suffix('z') else {
        return Ok(None);
    };
    match num.parse::<u64>() {
        Ok(n) if !num.starts_with('+') => Ok(Some(n as u32)),
        _ => err(
            &o.origin,
            format!(
                "option '{}': unexpected zone value '{t}' (N z: N zones of zonesize)",
                o.key
            ),
        ),
    }
}

/// The errno names fio 3.33's ignore_error= knows (options.c's str2error): EPERM is 1 and each
/// next name the next errno, to ERANGE, 34.
const ERRNO_NAMES: [&str; 34] = [
    "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF", "ECHILD",
    "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST", "EXDEV", "ENODEV",
    "ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG", "ENOSPC",
    "ESPIPE", "EROFS", "EMLINK", "EPIPE", "EDOM", "ERANGE",
];

/// fio's str_ignore_error_cb: up to three ','-separated lists (READ, WRITE, VERIFY), each of
/// ':'-separated errnos, a name starting with 'E' or a number (C's atoi, sign dropped). A
/// list ends at its first empty entry; an empty list is None (that class keeps what it had).
/// Errors are fio's words.
pub fn parse_ignore_error(text: &str) -> Result<[Option<Vec<i32>>; 3], String> {
    let mut out: [Option<Vec<i32>>; 3] = [None, None, None];
    for (class, list) in text.split(',').enumerate() {
        if class >= out.len() {
            return Err(
                "Illegal error type (give at most three lists: READ,WRITE,VERIFY)".to_string(),
            );
        }
        let mut errnos = Vec::new();
        for name in list.split(':') {
            if name.is_empty() {
                break;
            }
            let errno = if name.starts_with('E') {
                ERRNO_NAMES
                    .iter()
                    .position(|n| *n == name)
                    .map_or(0, |i| i as i32 + 1)
            } else {
                atoi(name).unsigned_abs() as i32
            };
            if errno == 0 {
                return Err(format!(
                    "Unknown error {name}, please use number value (fio names only EPERM to ERANGE, errnos 1 to 34: give others as numbers, e.g. 84 for EILSEQ)"
                ));
            }
            errnos.push(errno);
        }
        if !errnos.is_empty() {
            out[class] = Some(errnos);
        }
    }
    Ok(out)
}

/// C's atoi: leading blanks, an optional sign, the digits up to the first other character
/// (0 when there are none).
fn atoi(s: &str) -> i64 {
    let t = s.trim_start();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let n = digits
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i64, |n, d| {
            n.saturating_mul(10).saturating_add((d - b'0') as i64)
        });
    if neg { -n } else { n }
}

#[cfg(test)]
mod tests {
    /// continue_on_error=, ignore_error= and error_dump= as fio 3.33's options.c reads them.
    #[test]
    fn cpu_options_parse_as_fios() {
        use crate::fio::jobfile::{SystemSources, parse_job_text};
        let job = |text: &str| {
            parse_job_text(&format!("[c]\n{text}"), "t.fio", &SystemSources)
                .map(|mut s| s.jobs.remove(0))
                .map_err(|e| e.to_string())
        };
        let j = job("").unwrap();
        assert_eq!(
            (j.cpumask, j.cpus_split, j.verify_cpumask),
            (None, false, None)
        );
        let j = job("cpus_allowed=0,0-0\ncpus_allowed_policy=split\n").unwrap();
        assert_eq!((j.cpumask, j.cpus_split), (Some(vec![0]), true));
        assert_eq!(job("cpumask=0x1\n").unwrap().cpumask, Some(vec![0]));
        assert_eq!(job("cpumask=1\n").unwrap().cpumask, Some(vec![0]));
        assert_eq!(
            job("verify_async_cpus=0\n").unwrap().verify_cpumask,
            Some(vec![0])
        );
        // fio's words for a CPU past the machine's; the rest refused with what to write.
        let e = job("cpus_allowed=0,4096\n").unwrap_err();
        assert!(
            e.contains("t.fio:2") && e.contains("CPU 4096 too large (max="),
            "{e}"
        );
        let e = job("cpumask=0x8000000000000000\n").unwrap_err();
        assert!(e.contains("CPU 63 too large"), "{e}");
        for (text, want) in [
            ("cpumask=0\n", "selects no CPU"),
            ("cpumask=z\n", "not a number"),
            ("cpus_allowed=1-0\n", "'1-0' is not a CPU or a range"),
            ("cpus_allowed=a\n", "'a' is not a CPU"),
            ("cpus_allowed=\n", "selects no CPU"),
            ("cpus_allowed_policy=spread\n", "choose one of"),
        ] {
            let e = job(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn error_options_parse_as_fios() {
        use crate::fio::jobfile::{ErrorClass, SystemSources, parse_job_text};
        let job = |text: &str| {
            parse_job_text(&format!("[e]\n{text}"), "t.fio", &SystemSources)
                .map(|mut s| s.jobs.remove(0))
        };
        let j = job("").unwrap();
        assert_eq!(j.continue_on_error, 0);
        assert!(!j.error_dump);
        // Without ignore_error= a continued class goes on after EIO and EILSEQ only.
        let j = job("continue_on_error=io\n").unwrap();
        assert!(j.error_continues(ErrorClass::Read, libc::EIO));
        assert!(j.error_continues(ErrorClass::Write, libc::EILSEQ));
        assert!(!j.error_continues(ErrorClass::Write, libc::ENOSPC));
        assert!(!j.error_continues(ErrorClass::Verify, libc::EILSEQ));
        for (word, mask) in [
            ("none", 0),
            ("0", 0),
            ("read", 1),
            ("write", 2),
            ("io", 3),
            ("verify", 4),
            ("all", 0xffff),
            ("1", 0xffff),
        ] {
            let j = job(&format!("continue_on_error={word}\n")).unwrap();
            assert_eq!(j.continue_on_error, mask, "{word}");
        }
        assert!(job("continue_on_error=sometimes\n").is_err());
        // The enospc-pressure example: the WRITE list alone, which also turns writes on.
        let j = job("ignore_error=,ENOSPC\nerror_dump=0\n").unwrap();
        assert_eq!(j.continue_on_error, 2);
        assert_eq!(j.ignore_error, [None, Some(vec![libc::ENOSPC]), None]);
        assert!(j.error_continues(ErrorClass::Write, libc::ENOSPC));
        assert!(!j.error_continues(ErrorClass::Write, libc::EIO));
        assert!(!j.error_continues(ErrorClass::Read, libc::EIO));
        // Names and numbers (sign dropped, as atoi's), three lists; a list ends at an empty
        // entry; continue_on_error= after it sets the classes anew.
        let j = job("ignore_error=EIO:5:-28,ENOSPC::EIO,84\n").unwrap();
        assert_eq!(
            j.ignore_error,
            [
                Some(vec![libc::EIO, 5, libc::ENOSPC]),
                Some(vec![libc::ENOSPC]),
                Some(vec![libc::EILSEQ])
            ]
        );
        assert_eq!(j.continue_on_error, 7);
        let j = job("ignore_error=EIO\ncontinue_on_error=write\nerror_dump\n").unwrap();
        assert_eq!(j.continue_on_error, 2);
        assert!(j.error_dump);
        assert!(!j.error_continues(ErrorClass::Read, libc::EIO));
        // fio's errors: a name it does not know (EILSEQ included: give 84), a word, a fourth
        // list.
        for (bad, says) in [
            (
                "ignore_error=EFOO",
                "Unknown error EFOO, please use number value",
            ),
            (
                "ignore_error=,EILSEQ",
                "Unknown error EILSEQ, please use number value",
            ),
            (
                "ignore_error=abc",
                "Unknown error abc, please use number value",
            ),
            ("ignore_error=,,,EIO", "Illegal error type"),
        ] {
            let e = job(&format!("{bad}\n")).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("t.fio:2"), "{bad}: {e}");
        }
        // Where fsdelta does not continue: refused, naming the option.
        for bad in [
            "continue_on_error=all\nioengine=filecreate\n",
            "ignore_error=EIO\nio_submit_mode=offload\n",
        ] {
            let e = job(bad).unwrap_err().to_string();
            assert!(e.contains("continue_on_error / ignore_error"), "{bad}: {e}");
        }
    }
}
