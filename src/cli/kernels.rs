//! `fsdelta kernels`: the kernels fsdelta can boot in a guest: the host's own (when its image is
//! readable), every kernel a configuration named before, the kernels built from a git tree
//! (`kbuild`'s cache: `TREE@COMMIT`, built once per commit, config and compiler), and the Debian
//! kernel packages in the usual download places. The listing reads only and resolves nothing
//! (a listing must be instant); [`tree_ref`] and [`build`] are `run`'s way from a kernel
//! written as a commit of a git tree (`--kernel TREE@COMMIT`, a configuration's `kernel = {
//! tree, commit, config }`) to the image kbuild built.

use super::EXIT_OK;
use crate::kbuild::{KbuildError, KernelRef};
use crate::vm::kernel;
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

/// List the kernels.
pub fn main() -> Result<i32> {
    let mut table: Vec<[String; 3]> = vec![[
        "RELEASE".into(),
        "KIND".into(),
        "PATH (use as kernel = \"PATH\")".into(),
    ]];
    let release = rustix::system::uname()
        .release()
        .to_string_lossy()
        .into_owned();
    let host = PathBuf::from(format!("/boot/vmlinuz-{release}"));
    if host.is_file() {
        table.push([release.clone(), "host".into(), host.display().to_string()]);
    } else {
        table.push([
            release.clone(),
            "host".into(),
            format!(
                "kernel = \"host\" (runs here; {} is not readable to boot)",
                host.display()
            ),
        ]);
    }
    let cache = crate::vm::cache_dir();
    let known = kernel::known(&cache);
    let built = crate::kbuild::built(&crate::kbuild::cache_dir());
    // A built kernel that booted is also remembered by the guests: listed once, as built.
    for k in known
        .iter()
        .filter(|k| !built.iter().any(|b| b.image == k.path))
    {
        table.push([
            k.release.clone(),
            k.kind.clone(),
            k.path.display().to_string(),
        ]);
    }
    for b in &built {
        table.push([
            b.release.clone(),
            "built".into(),
            format!(
                "{}  ({}@{}, config {}, {:.0} s)",
                b.image.display(),
                b.tree.display(),
                &b.commit[..12.min(b.commit.len())],
                &b.config_digest[..8.min(b.config_digest.len())],
                b.build_s
            ),
        ]);
    }
    for deb in kernel::debian_packages() {
        let canon = std::fs::canonicalize(&deb).unwrap_or_else(|_| deb.clone());
        if known.iter().any(|k| k.path == canon) {
            continue;
        }
        let name = deb
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        table.push([
            kernel::release_of_deb_name(&name).unwrap_or_else(|| "?".into()),
            "deb".into(),
            deb.display().to_string(),
        ]);
    }
    let w0 = table.iter().map(|r| r[0].len()).max().unwrap_or(0);
    let w1 = table.iter().map(|r| r[1].len()).max().unwrap_or(0);
    for [a, b, c] in &table {
        println!("{a:w0$}  {b:w1$}  {c}");
    }
    Ok(EXIT_OK)
}

/// Whether a kernel as written (a `--kernel` value, a configuration's `kernel` string) names a
/// commit of a git tree: `Some` for `TREE@COMMIT` whose TREE has `.git`, `None` for anything
/// that exists as written or has no `@`; an error, saying how to fix it, for a `TREE@COMMIT`
/// whose TREE is a directory but not a git tree, or that is neither a file nor a directory.
pub fn tree_ref(arg: &Path) -> Result<Option<KernelRef>> {
    if let Some(k) = KernelRef::of_arg(arg) {
        return Ok(Some(k));
    }
    let Some(s) = arg.to_str() else {
        return Ok(None);
    };
    if arg.exists() || s == "host" {
        return Ok(None);
    }
    let Some((tree, commit)) = s.rsplit_once('@') else {
        return Ok(None);
    };
    if tree.is_empty() || commit.is_empty() {
        return Ok(None);
    }
    if Path::new(tree).is_dir() {
        return Err(KbuildError::NotATree(PathBuf::from(tree)).into());
    }
    bail!(
        "kernel {s}: no such file, and {tree} (read as TREE@COMMIT) is no directory: give a kernel image, a linux-image .deb, a build tree, or a commit of a kernel git tree as /src/linux@v6.17"
    )
}

/// How a kernel build's progress is drawn on standard error: on a terminal one line redrawn in
/// place (`\r`) at most every second; elsewhere (a log file, a pipe, CI) whole lines, one when
/// the stage changes and at most one every [`BuildProgress::LOG_EVERY_S`] seconds between, so
/// that a log of a 20-minute build is a few dozen readable lines, not one line of a hundred
/// thousand characters joined by carriage returns.
pub struct BuildProgress {
    /// Names the build in each line ("kernel 0123456789ab", "building /src/linux@v6.1").
    prefix: String,
    tty: bool,
    /// The build time (`Progress::elapsed_s`) of the last line drawn.
    last_s: Option<f64>,
    stage: Option<crate::kbuild::Stage>,
    /// Whether a terminal line is open (needs a newline at the end).
    open: bool,
}

impl BuildProgress {
    /// Seconds between two whole lines of the same stage when standard error is not a terminal.
    pub const LOG_EVERY_S: f64 = 15.0;
    /// Seconds between two redraws on a terminal.
    const TTY_EVERY_S: f64 = 1.0;

    /// A printer for standard error as it is (a terminal or not).
    pub fn stderr(prefix: impl Into<String>) -> BuildProgress {
        use std::io::IsTerminal as _;
        BuildProgress::new(prefix, std::io::stderr().is_terminal())
    }

    /// A printer for a terminal (`tty`) or a log.
    pub fn new(prefix: impl Into<String>, tty: bool) -> BuildProgress {
        BuildProgress {
            prefix: prefix.into(),
            tty,
            last_s: None,
            stage: None,
            open: false,
        }
    }

    /// What to print for `p`, if anything (timed by the build's own clock, `p.elapsed_s`).
    pub fn text(&mut self, p: &crate::kbuild::Progress) -> Option<String> {
        let changed = self.stage != Some(p.stage);
        let every = if self.tty {
            Self::TTY_EVERY_S
        } else {
            Self::LOG_EVERY_S
        };
        let due = self.last_s.is_none_or(|t| p.elapsed_s - t >= every);
        if !(due || (changed && !self.tty)) {
            return None;
        }
        self.last_s = Some(p.elapsed_s);
        self.stage = Some(p.stage);
        let line: String = p.last_line.trim().chars().take(60).collect();
        if self.tty {
            self.open = true;
            Some(format!(
                "\r{}: {} {:.0} s  {line:60}",
                self.prefix, p.stage, p.elapsed_s
            ))
        } else {
            Some(format!(
                "{}: {} {:.0} s  {line}\n",
                self.prefix, p.stage, p.elapsed_s
            ))
        }
    }

    /// What to print when the build ends: the newline closing a terminal line, if one is open.
    pub fn finish(&mut self) -> Option<&'static str> {
        std::mem::take(&mut self.open).then_some("\n")
    }

    /// Print what [`Self::text`] says to standard error.
    pub fn show(&mut self, p: &crate::kbuild::Progress) {
        if let Some(t) = self.text(p) {
            eprint!("{t}");
        }
    }

    /// Print what [`Self::finish`] says to standard error.
    pub fn end(&mut self) {
        if let Some(t) = self.finish() {
            eprint!("{t}");
        }
    }
}

/// Build (or take from kbuild's cache) `kernel` with `config` (a whole .config; `None`:
/// kbuild's default), its progress on standard error (none when `quiet`; see
/// [`BuildProgress`]), and say where the image and its log are. `shown` names it in the lines.
pub fn build(
    kernel: KernelRef,
    config: Option<String>,
    shown: &str,
    quiet: bool,
) -> Result<crate::kbuild::Built> {
    let req = crate::kbuild::Request {
        kernel,
        config,
        jobs: 0,
        revert: None,
    };
    let mut progress = BuildProgress::stderr(format!("fsdelta: building {shown}"));
    let built = crate::kbuild::build(&req, &mut |p| {
        if !quiet {
            progress.show(p);
        }
    });
    progress.end();
    let built = built.with_context(|| format!("building the kernel {shown}"))?;
    if !quiet {
        eprintln!(
            "fsdelta: kernel {shown} is {} ({}, commit {}{}), build log {}",
            built.image.display(),
            built.release,
            &built.commit[..12.min(built.commit.len())],
            if built.cached { ", from the cache" } else { "" },
            built.log.display()
        );
    }
    Ok(built)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kbuild::{Progress, Stage};

    /// A build's progress as kbuild reports it: a line every half second for 20 minutes,
    /// through the four stages.
    fn build_events() -> Vec<Progress> {
        (0..2400)
            .map(|i| {
                let t = f64::from(i) * 0.5;
                Progress {
                    stage: match t {
                        t if t < 30.0 => Stage::Checkout,
                        t if t < 90.0 => Stage::Config,
                        t if t < 1190.0 => Stage::Compile,
                        _ => Stage::Install,
                    },
                    elapsed_s: t,
                    last_line: format!("  CC      fs/ext4/file{i}.o"),
                }
            })
            .collect()
    }

    #[test]
    fn off_a_terminal_a_build_prints_whole_lines_at_each_stage_and_at_most_every_15_s() {
        let mut p = BuildProgress::new("fsdelta: kernel 0123456789ab", false);
        let events = build_events();
        let printed: Vec<(f64, Stage, String)> = events
            .iter()
            .filter_map(|e| p.text(e).map(|t| (e.elapsed_s, e.stage, t)))
            .collect();
        assert_eq!(p.finish(), None, "no terminal line to close");
        for (_, _, t) in &printed {
            assert!(!t.contains('\r'), "{t:?}");
            assert!(t.ends_with('\n') && t.matches('\n').count() == 1, "{t:?}");
            assert!(t.starts_with("fsdelta: kernel 0123456789ab: "), "{t:?}");
        }
        // Every stage is announced when it starts.
        for (start, stage) in [
            (0.0, Stage::Checkout),
            (30.0, Stage::Config),
            (90.0, Stage::Compile),
            (1190.0, Stage::Install),
        ] {
            assert!(
                printed.iter().any(|(t, s, _)| *t == start && *s == stage),
                "{stage} at {start} s: {printed:?}"
            );
        }
        // Between stage changes, lines are at least 15 s of build time apart.
        for w in printed.windows(2) {
            assert!(
                w[1].1 != w[0].1 || w[1].0 - w[0].0 >= BuildProgress::LOG_EVERY_S,
                "{w:?}"
            );
        }
        // 1,200 s of build: at most a line per 15 s plus one per stage change.
        assert!(printed.len() <= 1200 / 15 + 4, "{}", printed.len());
        assert!(
            printed[0]
                .2
                .contains("checkout 0 s  CC      fs/ext4/file0.o")
        );
    }

    #[test]
    fn on_a_terminal_a_build_redraws_one_line_and_closes_it() {
        let mut p = BuildProgress::new("fsdelta: building /src/linux@v6.1", true);
        let printed: Vec<String> = build_events().iter().filter_map(|e| p.text(e)).collect();
        assert!(
            printed
                .iter()
                .all(|t| t.starts_with('\r') && !t.contains('\n'))
        );
        // At most one redraw a second of build time.
        assert!(printed.len() <= 1200 + 1, "{}", printed.len());
        assert!(
            printed.len() > 1200 / 15 + 4,
            "a terminal is redrawn more often than a log"
        );
        assert_eq!(p.finish(), Some("\n"));
        assert_eq!(p.finish(), None);
    }
}
