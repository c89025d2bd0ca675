//! Keep a suite's fio job inside the target: every path a job names (files, directories, log
//! files, the job name that names its default files) must be relative and must not climb out
//! with `..`.
//!
//! Why it exists: a suite's sample is stored with the target's filesystem, device and mount
//! options. A job with `directory=/srv` or `filename=../../x` would measure (and overwrite)
//! another filesystem and store that number under the target's facts. The standalone
//! `fsdelta fio JOBFILE` keeps fio's own semantics (the user named those paths there); only a
//! suite's test is confined, and it is confined before anything runs.
//!
//! It works on the raw sections ([`RawSection`]), not on built jobs, so that the same check
//! serves the native engine and the real fio (`engine = "external"`), whose job file may hold
//! options the native engine does not know (`opendir`, `write_iolog`, `replay_redirect`, ...).
//! It never reads or resolves anything on disk: a path is judged by its text alone.

use super::{JobFileError, RawSection, err};
use crate::workload::leaves_target;

/// fio options whose value is one path or a `:`-separated list of paths that the job reads,
/// writes or creates (fio 3.33's names; the native engine knows only some of them).
const PATH_OPTIONS: &[&str] = &[
    "filename",
    "directory",
    "opendir",
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "write_hist_log",
    "write_iolog",
    "read_iolog",
    "replay_redirect",
    "merge_blktrace_file",
    "verify_state_save_dir",
    // The job name names the job's default files ($jobname.$jobnum.$filenum) and logs.
    "name",
];

/// The names fio makes of `filename_format` for job `job` (`$jobname`, `$jobnum`, `$filenum`,
/// `$clientuid`), with 0 for the numbers: what is checked is the shape, and a number adds no
/// `/` or `..`.
fn expand_format(format: &str, job: &str) -> String {
    format
        .replace("$jobname", job)
        .replace("$jobnum", "0")
        .replace("$filenum", "0")
        .replace("$clientuid", "")
}

/// Refuse a job file whose jobs would work outside the target directory they run in, naming
/// the option, the path and how to fix it. `sections` as [`super::parse_ini`] gives them.
pub fn check_inside_target(sections: &[RawSection]) -> Result<(), JobFileError> {
    let fix = "a suite's test runs in the target directory and its samples are stored with the \
               target's filesystem and device, so every path it names must stay inside: use a \
               path relative to the target (directory=sub, filename=data), without a leading / \
               and without '..' climbing out";
    // filename_format of the [global] sections seen so far, for the jobs after them.
    let mut global_format: Option<(&str, &super::Origin)> = None;
    for section in sections {
        if !section.is_global() && leaves_target(&section.name) {
            return err(
                &section.origin,
                format!(
                    "job name '{}' leaves the target directory (fio names the job's files and \
                     logs after it): {fix}",
                    section.name
                ),
            );
        }
        let mut format = global_format;
        let mut name = section.name.as_str();
        for o in &section.options {
            let key = o.key.to_ascii_lowercase();
            let value = o.value.as_deref().unwrap_or("");
            if key == "filename_format" {
                format = Some((value, &o.origin));
                continue;
            }
            if !PATH_OPTIONS.contains(&key.as_str()) {
                continue;
            }
            if key == "name" && !section.is_global() {
                name = value;
            }
            // fio splits `filename` and `directory` on ':' (a `\:` escape keeps one); splitting
            // on every ':' can only find more pieces to check, never hide one.
            if let Some(bad) = value.split(':').find(|p| leaves_target(*p)) {
                return err(
                    &o.origin,
                    format!(
                        "option '{key}={value}' names '{bad}', which leaves the target \
                         directory: {fix}"
                    ),
                );
            }
        }
        if section.is_global() {
            global_format = format;
            continue;
        }
        if let Some((f, origin)) = format {
            let expanded = expand_format(f, name);
            if leaves_target(&expanded) {
                return err(
                    origin,
                    format!(
                        "option 'filename_format={f}' makes '{expanded}' for job '{name}', which \
                         leaves the target directory: {fix}"
                    ),
                );
            }
        }
    }
    Ok(())
}

/// The paths the jobs name relative to the run directory, for a check at run time that none
/// of them leads out through a symlink already there: every piece of every path option (not
/// the job name) and every `directory`/`filename` pair.
pub fn named_paths(sections: &[RawSection]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let (mut dirs, mut files) = (Vec::new(), Vec::new());
    for o in sections.iter().flat_map(|s| &s.options) {
        let key = o.key.to_ascii_lowercase();
        if key == "name" || !PATH_OPTIONS.contains(&key.as_str()) {
            continue;
        }
        for piece in o.value.as_deref().unwrap_or("").split(':') {
            if piece.is_empty() {
                continue;
            }
            match key.as_str() {
                "directory" => dirs.push(piece.to_string()),
                "filename" => files.push(piece.to_string()),
                _ => {}
            }
            out.push(piece.to_string());
        }
    }
    for d in &dirs {
        for f in &files {
            out.push(format!("{d}/{f}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::jobfile::{SystemSources, parse_ini};

    fn check(text: &str) -> Result<(), String> {
        let s = parse_ini(text, "suite job", &SystemSources).map_err(|e| e.to_string())?;
        check_inside_target(&s).map_err(|e| e.to_string())
    }

    #[test]
    fn paths_that_leave_the_target_are_refused_with_the_option_and_the_fix() {
        for (job, key) in [
            ("[w]\ndirectory=/abs/outside\n", "directory=/abs/outside"),
            ("[w]\nfilename=../../x\n", "filename=../../x"),
            ("[w]\nfilename=/abs/file\n", "filename=/abs/file"),
            ("[w]\ndirectory=a:/b\n", "directory=a:/b"),
            ("[w]\nfilename=a:b/../../c\n", "filename=a:b/../../c"),
            (
                "[global]\ndirectory=/mnt\n[w]\nrw=write\n",
                "directory=/mnt",
            ),
            ("[w]\nopendir=/etc\n", "opendir=/etc"),
            ("[w]\nwrite_bw_log=/tmp/bw\n", "write_bw_log=/tmp/bw"),
            ("[w]\nwrite_lat_log=../lat\n", "write_lat_log=../lat"),
            ("[w]\nwrite_iolog=/tmp/io\n", "write_iolog=/tmp/io"),
            ("[w]\nread_iolog=/tmp/io\n", "read_iolog=/tmp/io"),
            (
                "[w]\nreplay_redirect=/dev/sda\n",
                "replay_redirect=/dev/sda",
            ),
            ("[w]\nname=../../x\n", "name=../../x"),
        ] {
            let e = check(job).unwrap_err();
            assert!(e.contains(&format!("option '{key}'")), "{job}: {e}");
            assert!(e.contains("leaves the target directory"), "{job}: {e}");
            assert!(
                e.contains("use a path relative to the target"),
                "{job}: {e}"
            );
        }
    }

    #[test]
    fn job_names_and_filename_formats_that_leave_are_refused() {
        let e = check("[../../x]\nrw=write\n").unwrap_err();
        assert!(e.contains("job name '../../x'"), "{e}");
        let e = check("[w]\nfilename_format=/tmp/$jobname\n").unwrap_err();
        assert!(e.contains("filename_format=/tmp/$jobname"), "{e}");
        let e = check("[global]\nfilename_format=../$jobname.$filenum\n[w]\n").unwrap_err();
        assert!(e.contains("makes '../w.0' for job 'w'"), "{e}");
        let e = check("[w]\nname=./x\nfilename_format=.$jobname\n").unwrap_err();
        assert!(e.contains("makes '../x' for job './x'"), "{e}");
    }

    #[test]
    fn relative_paths_inside_the_target_pass() {
        for job in [
            "[w]\nrw=write\nsize=1m\n",
            "[w]\ndirectory=sub\nfilename=data\n",
            "[w]\ndirectory=a:b/c\nfilename=x:sub/../y\n",
            "[w]\nfilename_format=f.$jobnum.$filenum\nwrite_bw_log\nwrite_lat_log=lat\n",
            "[global]\ndirectory=d\n[w]\n[v]\nname=other\n",
        ] {
            check(job).unwrap_or_else(|e| panic!("{job}: {e}"));
        }
    }
}
