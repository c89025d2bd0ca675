//! fio's options, as its options.c: the option table (`table`, its rows in parts in fio's
//! order), the value parsers (`values`), the setters that store a value into a [`JobSpec`]
//! (`setters`, and `distribution` for random_distribution=), and here the public face: look an
//! option up, apply it to a job, list and explain the options.
//!
//! Why it exists: the parser, `--help`, the list of supported options in an error and the
//! command-line splitting (which options never take the next word) all read the one table, so
//! adding an option is adding a row. What it must never do: accept an option it cannot honour,
//! store a value without the row's range check, or list the options in another order than the
//! table's.

mod distribution;
mod setters;
mod table;
mod values;

pub use table::{Category, Kind, OptDef, Setter, Val};
pub use values::parse_ignore_error;

use self::values::{choice_err, parse_bool, parse_int, size_value, time_value, value_of};
use crate::fio::jobfile::{JobFileError, JobSpec, RawOption};

/// The row of `key` (canonical name or alias).
pub fn lookup(key: &str) -> Option<&'static OptDef> {
    table::rows().find(|o| o.name == key || o.aliases.contains(&key))
}

/// fio's parse priority of an option (`.prio` in its options.c): a job file's options are
/// parsed, and listed in `job options` and `--showcmd`, highest first (a stable sort).
pub fn fio_prio(def: &OptDef) -> i32 {
    match def.name {
        "lockfile" | "cpus_allowed_policy" | "kb_base" | "unit_base" => 1,
        "filename" | "filename_format" => -1,
        _ => 0,
    }
}

/// Whether the option is one of fio's engine options (an engine's own table, `io_ops->options`,
/// parsed after the general ones once the engine is loaded). The table's `engines` restriction
/// is kept for exactly these: fio's general options apply to every engine.
pub fn is_engine_option(def: &OptDef) -> bool {
    !def.engines.is_empty()
}

/// An option as fio lists it in `job options`, `global options` and `--showcmd`: the row's
/// canonical name (not the alias written) and the value as parsed (after `${VAR}` and bc).
/// A key the table does not know keeps its spelling.
pub fn shown_name(key: &str) -> &str {
    lookup(key).map_or(key, |d| d.name)
}

/// A section's options in fio's listing order: as written on the command line; from a job
/// file, fio's `sort_options` order (priority, highest first) with its engine options after
/// the general ones, as fio's two passes of `fio_options_parse` add them.
pub fn listing_order(opts: &[RawOption], job_file: bool) -> Vec<&RawOption> {
    let mut v: Vec<&RawOption> = opts.iter().collect();
    if job_file {
        v.sort_by_key(|o| match lookup(&o.key) {
            Some(d) => (is_engine_option(d), -fio_prio(d)),
            None => (false, 0),
        });
    }
    v
}

/// Whether `key` is a set-only option (never takes the next command-line word).
pub fn is_set_only(key: &str) -> bool {
    lookup(key).is_some_and(|o| matches!(o.kind, Kind::Flag))
}

/// Canonical names of every option, in table order.
pub fn supported_names() -> Vec<&'static str> {
    table::rows().map(|o| o.name).collect()
}

/// One line per option for `--help`: name (aliases), default, help.
pub fn help_text() -> String {
    let mut out = String::new();
    for cat in [
        Category::General,
        Category::Io,
        Category::File,
        Category::Engine,
        Category::Time,
        Category::Buffer,
        Category::Stat,
    ] {
        out.push_str(&format!("\n  {}:\n", cat.as_str()));
        for o in table::rows().filter(|o| o.category == cat) {
            let mut name = o.name.to_string();
            if !o.aliases.is_empty() {
                name.push_str(&format!(" ({})", o.aliases.join(", ")));
            }
            let mut line = format!("    {name:<34} {}", o.help);
            if !o.default.is_empty() {
                line.push_str(&format!(" [default {}]", o.default));
            }
            if !o.engines.is_empty() {
                let e: Vec<&str> = o.engines.iter().map(|e| e.as_str()).collect();
                line.push_str(&format!(" [{} only]", e.join(", ")));
            }
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// fio 3.33's soft-deprecated options (FIO_OPT_SOFT_DEPRECATED): accepted with a note, no
/// effect, listed in `job options` as written.
pub const SOFT_DEPRECATED: &[&str] = &["verifysort", "verifysort_nr"];

/// The error for an option that is not in the table: the few closest names (by edit
/// distance, or containing the name), not all ~300 of them.
pub fn unsupported(opt: &RawOption) -> JobFileError {
    let all = supported_names();
    let close = closest(&opt.key, &all);
    let hint = if close.is_empty() {
        String::new()
    } else {
        format!("; the closest: {}", close.join(", "))
    };
    JobFileError {
        origin: opt.origin.clone(),
        message: format!(
            "option '{}' is not supported by fsdelta's fio engine{hint} (`fsdelta fio --help` lists all {} options)",
            opt.key,
            all.len()
        ),
    }
}

/// Up to five of `names` nearest `key`: those within an edit distance of a third of its length
/// (at least 2), then those that contain it or that it contains, nearest first.
fn closest(key: &str, names: &[&'static str]) -> Vec<&'static str> {
    let key = key.to_ascii_lowercase();
    let limit = (key.len() / 3).max(2);
    let mut scored: Vec<(usize, &'static str)> = names
        .iter()
        .filter_map(|&n| {
            let d = edit_distance(&key, n);
            let related = key.len() >= 4 && (n.contains(key.as_str()) || key.contains(n));
            (d <= limit || related).then_some((d, n))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(5).map(|(_, n)| n).collect()
}

/// Levenshtein distance over bytes (option names are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, &x) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, &y) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(x != y);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The number fio 3.33 reads from a numeric option's value that goes on with arithmetic
/// outside parentheses (`iodepth=128*1`, `runtime=10+5`): its leading number and unit suffix,
/// the rest ignored (fio's strtoll and suffix scan; Debian's fio 3.33 has no arithmetic parser:
/// `iodepth=2*16` runs at depth 2, `iodepth=4+4` at 4). None when the value is not of that form.
pub fn fio_leading_number(opt: &RawOption) -> Option<&str> {
    let def = lookup(&opt.key)?;
    if !matches!(def.kind, Kind::Int { .. } | Kind::Size | Kind::Time { .. }) {
        return None;
    }
    let v = opt.value.as_deref()?.trim();
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    if digits == 0 || v.starts_with("0x") {
        return None;
    }
    let op = v[digits..].find(['+', '*', '/', '%', '^'])? + digits;
    v[digits..op]
        .chars()
        .all(|c| c.is_ascii_alphabetic())
        .then_some(&v[..op])
}

/// Read `opt` as its row says and store it into `job`; returns the row.
pub fn apply(job: &mut JobSpec, opt: &RawOption) -> Result<&'static OptDef, JobFileError> {
    let Some(def) = lookup(&opt.key) else {
        return Err(unsupported(opt));
    };
    let leading;
    let opt = match fio_leading_number(opt) {
        Some(n) => {
            leading = RawOption {
                value: Some(n.to_string()),
                ..opt.clone()
            };
            &leading
        }
        None => opt,
    };
    let val = match def.kind {
        Kind::Bool => Val::Bool(parse_bool(opt)?),
        Kind::Flag => Val::Bool(values::parse_flag(opt)?),
        Kind::Int { min, max } => Val::Int(parse_int(opt, min, max)?),
        Kind::Size => Val::Size(size_value(opt, value_of(opt)?)?),
        Kind::Time { default_us } => Val::Time(time_value(opt, default_us)?),
        Kind::Choice(choices) => {
            let v = value_of(opt)?;
            if !choices.contains(&v) {
                return choice_err(opt, v, &choices.join(", "));
            }
            Val::Text(v)
        }
        Kind::Text => Val::Text(opt.value.as_deref().map(str::trim).unwrap_or_default()),
    };
    (def.set)(job, val, opt)?;
    Ok(def)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 41: a number followed by arithmetic is read as fio 3.33 reads it, the number alone
    /// (checked on fio 3.33: iodepth=2*16 gives iodepth_level 2 = 99.9 %, iodepth=4+4 gives 4,
    /// bs-like sizes `8k/2` give 8k).
    #[test]
    fn a_number_followed_by_arithmetic_is_its_leading_number_as_in_fio() {
        let opt = |k: &str, v: &str| RawOption {
            key: k.into(),
            value: Some(v.into()),
            origin: crate::fio::jobfile::Origin {
                file: "t.fio".into(),
                line: 1,
            },
        };
        assert_eq!(fio_leading_number(&opt("iodepth", "128*1")), Some("128"));
        assert_eq!(fio_leading_number(&opt("iodepth", "4+4")), Some("4"));
        assert_eq!(fio_leading_number(&opt("runtime", "10s*2")), Some("10s"));
        assert_eq!(fio_leading_number(&opt("iodepth", "(2*16)")), None);
        assert_eq!(fio_leading_number(&opt("iodepth", "16")), None);
        assert_eq!(fio_leading_number(&opt("name", "a*2")), None);
        let mut job = JobSpec::default();
        apply(&mut job, &opt("iodepth", "2*16")).unwrap();
        assert_eq!(job.iodepth, 2);
    }

    /// Issue 41: an unknown option's error names the closest few options, not all ~300.
    #[test]
    fn an_unknown_option_names_the_closest_few() {
        let names = supported_names();
        assert_eq!(edit_distance("iodepht", "iodepth"), 2);
        assert_eq!(closest("iodepht", &names)[0], "iodepth");
        assert!(closest("trim_backlog", &names).contains(&"verify_backlog"));
        assert!(closest("frobnicate", &names).len() <= 5);
        assert!(closest("zzzzzzzzzzzzzzzz", &names).is_empty());
    }

    #[test]
    fn help_lists_every_option() {
        let h = help_text();
        for o in table::rows() {
            assert!(h.contains(o.name), "{}", o.name);
        }
    }

    /// The `engines` restriction is for fio's engine options only (an engine's own table in
    /// fio 3.33's engines/*.c): fio's general options are accepted with every engine, and
    /// `job options` lists engine options after the general ones.
    #[test]
    fn engine_limited_rows_are_fios_engine_options() {
        let limited: Vec<&str> = table::rows()
            .filter(|o| is_engine_option(o))
            .map(|o| o.name)
            .collect();
        assert_eq!(
            limited,
            [
                "hipri",
                "registerfiles",
                "fixedbufs",
                "sqthread_poll",
                "sqthread_poll_cpu",
                "cmdprio_percentage",
                "cmdprio_class",
                "cmdprio",
                "cmdprio_bssplit",
            ]
        );
        // The order fio parses (and lists) a job file's options in.
        let opts: Vec<RawOption> = ["filename", "hipri", "bs", "kb_base_unknown", "lockfile"]
            .iter()
            .map(|k| RawOption {
                key: k.to_string(),
                value: Some("1".into()),
                origin: crate::fio::jobfile::Origin {
                    file: "t.fio".into(),
                    line: 1,
                },
            })
            .collect();
        let keys = |v: Vec<&RawOption>| v.iter().map(|o| o.key.clone()).collect::<Vec<_>>();
        assert_eq!(
            keys(listing_order(&opts, true)),
            ["lockfile", "bs", "kb_base_unknown", "filename", "hipri"]
        );
        assert_eq!(
            keys(listing_order(&opts, false)),
            ["filename", "hipri", "bs", "kb_base_unknown", "lockfile"]
        );
    }
}
