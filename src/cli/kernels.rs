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

/// Build (or take from kbuild's cache) `kernel` with `config` (a whole .config; `None`:
/// kbuild's default), its progress on one terminal line (none when `quiet`), and say where
/// the image and its log are. `shown` names it in the lines.
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
    };
    let mut last = std::time::Instant::now();
    let mut drew = false;
    let built = crate::kbuild::build(&req, &mut |p| {
        if !quiet && last.elapsed().as_secs_f64() >= 1.0 {
            last = std::time::Instant::now();
            drew = true;
            let line: String = p.last_line.chars().take(60).collect();
            eprint!(
                "\rfsdelta: building {shown}: {} {:.0} s  {line:60}",
                p.stage, p.elapsed_s
            );
        }
    });
    if drew {
        eprintln!();
    }
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
