//! `fsdelta doctor`: what a quiet benchmark machine should change here, with the command for
//! each (pyperf's `system tune` is the model); `--apply` makes the changes fsdelta can make,
//! recording each with its value before in a state file beside the leftover-state file
//! (`doctor.json` under the XDG state directory), and `--revert` puts them back.
//!
//! It must never change anything without `--apply`, never write a file that is not an advised
//! setting's sysfs or procfs file, and never lose the record of a change it made: the record is
//! written after every change, and `--revert` removes it only once everything is back.

use super::EXIT_OK;
use crate::probe::hygiene::{self, Applied, Settings};
use anyhow::{Context, Result, bail};
use clap::Args;
use std::path::{Path, PathBuf};

/// Options of `fsdelta doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Make the advised changes that need no reboot (as root), recording the values before so
    /// that `--revert` restores them.
    #[arg(long, conflicts_with = "revert")]
    pub apply: bool,
    /// Put back every setting an earlier `--apply` changed, and forget the record.
    #[arg(long)]
    pub revert: bool,
    /// Also list the recorded settings that fsdelta does not advise on (dirty ratios, the
    /// device's queue, tool versions): what every run records.
    #[arg(long, short)]
    pub verbose: bool,
    /// The block devices whose queue settings to show (kernel names or /dev paths).
    #[arg(long = "device", value_name = "DEV")]
    pub devices: Vec<String>,
}

/// Where `doctor --apply` records its changes: `doctor.json` beside the leftover-state file.
pub fn record_path() -> Result<PathBuf> {
    let state = crate::os::state::default_path().map_err(|e| {
        anyhow::anyhow!(
            "no place for the doctor's record ({}): {}",
            e.path,
            e.message
        )
    })?;
    let dir = state
        .parent()
        .context("the state file has no directory")?
        .to_path_buf();
    Ok(dir.join("doctor.json"))
}

fn load(path: &Path) -> Result<Applied> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).with_context(|| {
            format!(
                "reading {} (the record of what `doctor --apply` changed; fix or remove it by hand)",
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Applied::default()),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Write the record atomically (a temporary file renamed over it), or remove it when empty.
fn save(path: &Path, applied: &Applied) -> Result<()> {
    if applied.changes.is_empty() {
        return match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("removing {}", path.display()))
            }
            _ => Ok(()),
        };
    }
    let dir = path.parent().context("the record has no directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(applied)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// The findings as printed: one block per advice.
pub fn render(advice: &[hygiene::Advice]) -> String {
    if advice.is_empty() {
        return "Nothing to change: this machine's settings are as a quiet benchmark machine's.\n"
            .to_string();
    }
    let mut out = format!(
        "{} setting(s) a quiet benchmark machine should change:\n",
        advice.len()
    );
    for a in advice {
        out.push_str(&format!(
            "\n  {}: {} -> {}\n    why: {}\n    command: {}\n{}",
            a.key,
            a.current,
            a.advised,
            a.why,
            a.command,
            if a.writes.is_empty() {
                "    (not applied by --apply)\n"
            } else {
                ""
            }
        ));
    }
    out
}

/// `fsdelta doctor`.
pub fn main(args: &DoctorArgs) -> Result<i32> {
    let root = Path::new("/");
    let path = record_path()?;
    if args.revert {
        let mut applied = load(&path)?;
        if applied.changes.is_empty() {
            println!(
                "Nothing to revert: no change by `fsdelta doctor --apply` is recorded in {}.",
                path.display()
            );
            return Ok(EXIT_OK);
        }
        let shown: Vec<String> = applied
            .changes
            .iter()
            .map(|c| {
                format!(
                    "  {}: {} -> {} ({})",
                    c.key,
                    c.after,
                    c.before,
                    c.path.display()
                )
            })
            .collect();
        let result = hygiene::revert(&mut applied);
        save(&path, &applied)?;
        result.with_context(|| {
            format!(
                "reverting; what is still to revert stays recorded in {}",
                path.display()
            )
        })?;
        println!("Reverted:\n{}", shown.join("\n"));
        return Ok(EXIT_OK);
    }
    let settings = Settings::read(root, &args.devices);
    let advice = hygiene::advise(root, &settings);
    print!("{}", render(&advice));
    if args.verbose {
        let mut all = settings.clone();
        all.add_tools(hygiene::TOOLS);
        println!("\nRecorded with every run:");
        for (k, v) in &all.0 {
            println!("  {k} = {v}");
        }
    }
    if !args.apply {
        if advice.iter().any(|a| !a.writes.is_empty()) {
            println!(
                "\nNothing was changed. `fsdelta doctor --apply` (as root) makes the changes above that need no reboot; `fsdelta doctor --revert` undoes them."
            );
        }
        return Ok(EXIT_OK);
    }
    if !rustix::process::geteuid().is_root() {
        bail!(
            "--apply writes sysfs and procfs settings, which needs root: run it with sudo (nothing was changed)"
        );
    }
    let mut applied = load(&path)?;
    let before = applied.changes.len();
    let result = hygiene::apply(&advice, &mut applied);
    save(&path, &applied)?;
    for c in &applied.changes[before..] {
        println!("Changed {}: {} -> {}", c.key, c.before, c.after);
    }
    result.with_context(|| {
        format!(
            "applying; every change made is recorded in {} (`fsdelta doctor --revert` undoes them)",
            path.display()
        )
    })?;
    println!(
        "Recorded in {}; `fsdelta doctor --revert` undoes it.",
        path.display()
    );
    Ok(EXIT_OK)
}
