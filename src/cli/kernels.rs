//! `fsdelta kernels`: the kernels fsdelta can boot in a guest: the host's own (when its image is
//! readable), every kernel a configuration named before, the kernels built from a git tree
//! (`kbuild`'s cache: `TREE@COMMIT`, built once per commit, config and compiler), and the Debian
//! kernel packages in the usual download places. Reads only; resolves nothing (a listing must
//! be instant).

use super::EXIT_OK;
use crate::vm::kernel;
use anyhow::Result;
use std::path::PathBuf;

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
    for k in &known {
        table.push([
            k.release.clone(),
            k.kind.clone(),
            k.path.display().to_string(),
        ]);
    }
    for b in crate::kbuild::built(&crate::kbuild::cache_dir()) {
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

/// A `--kernel` value made bootable: `TREE@COMMIT` built (or taken from the cache) with its
/// progress on one terminal line, anything else returned as given. For `run --kernel` and the
/// configuration's `kernel` once they accept commits.
pub fn resolve(arg: &std::path::Path, config: Option<String>) -> Result<PathBuf> {
    let Some(kernel) = crate::kbuild::KernelRef::of_arg(arg) else {
        return Ok(arg.to_path_buf());
    };
    let req = crate::kbuild::Request {
        kernel,
        config,
        jobs: 0,
    };
    let mut last = std::time::Instant::now();
    let built = crate::kbuild::build(&req, &mut |p| {
        if last.elapsed().as_secs_f64() >= 1.0 {
            last = std::time::Instant::now();
            let line: String = p.last_line.chars().take(60).collect();
            eprint!(
                "\rfsdelta: building {}: {} {:.0} s  {line:60}",
                arg.display(),
                p.stage,
                p.elapsed_s
            );
        }
    });
    eprintln!();
    let built = built?;
    eprintln!(
        "fsdelta: {} is {} ({}{}), log {}",
        arg.display(),
        built.image.display(),
        built.release,
        if built.cached { ", from the cache" } else { "" },
        built.log.display()
    );
    Ok(built.image)
}
