//! The text of fio job files and of fio's command-line job form, cut into raw sections and
//! `key[=value]` options with their origins.
//!
//! Why it exists: fio's syntax (sections, `;`/`#` comments, bare flags, `include`, `${VAR}`,
//! the keywords `$mb_memory` `$pagesize` `$ncpus` and the arithmetic they invite) is read once,
//! here, before any option is interpreted; the option table ([`super::options`]) only ever sees
//! one `key`, one value and where it was written. It must never read a file other than through
//! [`Sources`], and never read an input that is not a regular file below [`MAX_JOB_FILE`] bytes.

use super::{JobFileError, Origin, RawOption, RawSection, err, expr, options};
use std::io::Read;

/// The origin's file name of options from fio's command-line job form.
pub const COMMAND_LINE: &str = "command line";

/// The largest job or include file read (a job file is text; /dev/zero is not one).
pub const MAX_JOB_FILE: u64 = 64 << 20;

/// What the parser may read from outside: environment variables, include files and fio's
/// keywords. The CLI edge passes the real ones; tests pass maps.
pub trait Sources {
    /// An environment variable.
    fn env(&self, name: &str) -> Option<String>;
    /// The text of an include file named `path`, as written in a file named `from`: the name
    /// it was found under (for error origins and nested includes) and its text.
    fn include(&self, path: &str, from: &str) -> Result<(String, String), String>;
    /// fio's keywords: `$pagesize` (bytes), `$mb_memory` (MiB of RAM), `$ncpus` (online CPUs).
    fn keyword(&self, word: &str) -> Option<u64> {
        system_keyword(word)
    }
}

/// The real values of fio's keywords on this machine.
pub fn system_keyword(word: &str) -> Option<u64> {
    match word {
        // SAFETY: sysconf takes a constant and returns a value or -1.
        "$pagesize" => u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok(),
        "$ncpus" => std::thread::available_parallelism()
            .ok()
            .map(|n| n.get() as u64),
        "$mb_memory" => {
            // SAFETY: sysinfo(2) writes only into the struct it is given.
            let mut si: libc::sysinfo = unsafe { std::mem::zeroed() };
            // SAFETY: as above; the pointer is to a live, writable struct.
            if unsafe { libc::sysinfo(&mut si) } != 0 {
                return None;
            }
            Some(si.totalram as u64 * si.mem_unit as u64 / (1 << 20))
        }
        _ => None,
    }
}

/// The process environment and the real filesystem (for the CLI edge).
pub struct SystemSources;

/// Read a job file (or include file): it must be a regular file below [`MAX_JOB_FILE`] bytes.
/// Opening does not block on a FIFO; the error names the file.
pub fn read_job_source(path: &std::path::Path) -> Result<String, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let shown = path.display();
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("{shown}: {e}"))?;
    let md = f.metadata().map_err(|e| format!("{shown}: {e}"))?;
    if !md.is_file() {
        return Err(format!(
            "{shown}: not a regular file (a job file must be a regular file; devices, FIFOs and directories are refused)"
        ));
    }
    if md.len() >= MAX_JOB_FILE {
        return Err(format!(
            "{shown}: {} bytes is too large for a job file (the limit is {} MiB)",
            md.len(),
            MAX_JOB_FILE >> 20
        ));
    }
    let mut bytes = Vec::new();
    f.take(MAX_JOB_FILE)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{shown}: {e}"))?;
    String::from_utf8(bytes).map_err(|_| format!("{shown}: not UTF-8 text"))
}

impl Sources for SystemSources {
    fn env(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
    fn include(&self, path: &str, from: &str) -> Result<(String, String), String> {
        // fio resolves a relative include against the directory of the file that includes it;
        // a path that exists only relative to the current directory is accepted too.
        let p = std::path::Path::new(path);
        let beside = std::path::Path::new(from)
            .parent()
            .map(|d| d.join(p))
            .unwrap_or_else(|| p.to_path_buf());
        let candidate = if p.is_absolute() || (!beside.exists() && p.exists()) {
            p.to_path_buf()
        } else {
            beside
        };
        let text = read_job_source(&candidate)?;
        Ok((candidate.display().to_string(), text))
    }
}

/// Expand `${VAR}` from `sources`. An undefined variable becomes empty, as in fio, with a
/// warning pushed to `warnings`.
fn expand_env(
    s: &str,
    sources: &dyn Sources,
    origin: &Origin,
    warnings: &mut Vec<String>,
) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        match after.find('}') {
            Some(j) if j > 0 => {
                let var = &after[..j];
                match sources.env(var) {
                    Some(v) => out.push_str(&v),
                    None => warnings.push(format!(
                        "{origin}: environment variable '{var}' is not set; ${{{var}}} expands to an empty string (as in fio)"
                    )),
                }
                rest = &after[j + 1..];
            }
            _ => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

const KEYWORDS: [&str; 3] = ["$pagesize", "$mb_memory", "$ncpus"];

/// Replace fio's keywords in an option's value; a value that then holds arithmetic is
/// evaluated as fio's bc_calc does: the value becomes bc's whole number (so the job and its
/// `job options` hold `8192` for `4*1024*$ncpus`, as fio's). Arithmetic bc cannot read (`4k*$ncpus`,
/// which fio refuses) is kept for [`expr`], wrapped in parentheses.
fn substitute_keywords(
    value: &str,
    sources: &dyn Sources,
    origin: &Origin,
) -> Result<String, JobFileError> {
    let mut v = value.to_string();
    let mut any = false;
    for kw in KEYWORDS {
        if v.contains(kw) {
            let Some(n) = sources.keyword(kw) else {
                return err(origin, format!("cannot determine {kw} on this machine"));
            };
            v = v.replace(kw, &n.to_string());
            any = true;
        }
    }
    Ok(match (any, expr::bc_calc(&v)) {
        (true, Some(n)) => n.to_string(),
        (true, None) => expr::wrap_arithmetic(&v),
        (false, _) => v,
    })
}

/// Cut a line at the first `;` or `#` (fio strips inline comments) and trim it.
fn strip_line(line: &str) -> &str {
    let cut = line.find([';', '#']).unwrap_or(line.len());
    line[..cut].trim()
}

fn split_kv(body: &str) -> (String, Option<String>) {
    match body.split_once('=') {
        Some((k, v)) => (k.trim().to_string(), Some(v.trim().to_string())),
        None => (body.trim().to_string(), None),
    }
}

/// Parse the ini text of one job file named `file` into raw sections. `include` lines are read
/// through `sources` (an included file holds options only, as in fio). A UTF-8 byte-order mark
/// is skipped; a file with no section and no option is an error naming it.
pub fn parse_ini(
    text: &str,
    file: &str,
    sources: &dyn Sources,
) -> Result<Vec<RawSection>, JobFileError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut sections: Vec<RawSection> = Vec::new();
    parse_ini_into(text, file, sources, &mut sections, 0)?;
    if sections.is_empty() {
        return err(
            &Origin {
                file: file.to_string(),
                line: 0,
            },
            format!("job file '{file}' is empty (no [section] and no option)"),
        );
    }
    Ok(sections)
}

const MAX_INCLUDE_DEPTH: usize = 16;

fn parse_ini_into(
    text: &str,
    file: &str,
    sources: &dyn Sources,
    sections: &mut Vec<RawSection>,
    depth: usize,
) -> Result<(), JobFileError> {
    let nested = depth > 0;
    for (i, raw_line) in text.lines().enumerate() {
        let origin = Origin {
            file: file.to_string(),
            line: i + 1,
        };
        let line = strip_line(raw_line);
        if line.is_empty() {
            continue;
        }
        if line.starts_with('[') {
            if nested {
                return err(
                    &origin,
                    "an included file may hold options only, not sections",
                );
            }
            let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) else {
                return err(&origin, format!("malformed section header '{line}'"));
            };
            let name = name.trim();
            if name.is_empty() {
                return err(&origin, "empty section name");
            }
            sections.push(RawSection {
                name: name.to_string(),
                origin,
                options: Vec::new(),
                file_boundary: false,
                warnings: Vec::new(),
            });
            continue;
        }
        if let Some(rest) = line.strip_prefix("include") {
            if rest.starts_with(char::is_whitespace) {
                if sections.is_empty() {
                    return err(&origin, "include outside of a [section]");
                }
                let mut w = Vec::new();
                let path = expand_env(rest.trim(), sources, &origin, &mut w);
                sections
                    .last_mut()
                    .expect("checked")
                    .warnings
                    .append(&mut w);
                if depth >= MAX_INCLUDE_DEPTH {
                    return err(
                        &origin,
                        format!("include nesting deeper than {MAX_INCLUDE_DEPTH}"),
                    );
                }
                let (name, inc) = sources
                    .include(&path, file)
                    .or_else(|e| err(&origin, format!("cannot read include file: {e}")))?;
                parse_ini_into(&inc, &name, sources, sections, depth + 1)?;
                continue;
            }
        }
        let Some(section) = sections.last_mut() else {
            return err(
                &origin,
                format!(
                    "option '{line}' outside of a [section] (start with [global] or [jobname])"
                ),
            );
        };
        let line = expand_env(line, sources, &origin, &mut section.warnings);
        let (key, value) = split_kv(&line);
        if key.is_empty() {
            return err(&origin, format!("missing option name in '{line}'"));
        }
        let value = match value {
            Some(v) => Some(substitute_keywords(&v, sources, &origin)?),
            None => None,
        };
        section.options.push(RawOption { key, value, origin });
    }
    Ok(())
}

/// Parse fio's command-line job form: `--name=x` starts a job; options before the first `--name`
/// are global. `--key=value`, `--flag` and `--key value` (except for fio's set-only options)
/// are accepted.
pub fn parse_cmdline(
    args: &[String],
    sources: &dyn Sources,
) -> Result<Vec<RawSection>, JobFileError> {
    let mut sections = vec![RawSection {
        name: "global".to_string(),
        origin: Origin {
            file: COMMAND_LINE.to_string(),
            line: 0,
        },
        options: Vec::new(),
        file_boundary: false,
        warnings: Vec::new(),
    }];
    let mut i = 0;
    let mut warnings = Vec::new();
    while i < args.len() {
        let origin = Origin {
            file: COMMAND_LINE.to_string(),
            line: i + 1,
        };
        let arg = expand_env(&args[i], sources, &origin, &mut warnings);
        let Some(body) = arg.strip_prefix("--") else {
            return err(&origin, format!("expected --option=value, found '{arg}'"));
        };
        let (key, mut value) = split_kv(body);
        if value.is_none() && !options::is_set_only(&key) {
            if let Some(next) = args.get(i + 1).filter(|n| !n.starts_with("--")) {
                value = Some(expand_env(next, sources, &origin, &mut warnings));
                i += 1;
            }
        }
        let value = match value {
            Some(v) => Some(substitute_keywords(&v, sources, &origin)?),
            None => None,
        };
        let section = sections.last_mut().expect("there is always a section");
        section.warnings.append(&mut warnings);
        if key == "name" {
            let Some(name) = value.clone().filter(|v| !v.is_empty()) else {
                return err(&origin, "--name needs a value");
            };
            // fio parses --name as an option of the job it starts: its `job options` list it.
            sections.push(RawSection {
                name,
                origin: origin.clone(),
                options: vec![RawOption {
                    key,
                    value,
                    origin: origin.clone(),
                }],
                file_boundary: false,
                warnings: Vec::new(),
            });
        } else {
            section.options.push(RawOption { key, value, origin });
        }
        i += 1;
    }
    Ok(sections)
}

/// Mark the first job section of `sections` as the start of another job file.
pub fn mark_file_boundary(sections: &mut [RawSection]) {
    if let Some(s) = sections.iter_mut().find(|s| !s.is_global()) {
        s.file_boundary = true;
    }
}
