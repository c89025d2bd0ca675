//! Kernels built from a git tree: `TREE@COMMIT` ([`KernelRef`]) becomes a bootable image,
//! built in a checkout of fsdelta's own and cached by (commit, config digest, compiler).
//!
//! Why a room below `vm`: booting is `vm`'s; what to boot, when it is a commit of a kernel
//! tree, is a build with its own cache, progress and log, which `vm` (and `bisect`'s kernel
//! axis, and `run --kernel TREE@COMMIT`) can call without knowing how kernels are made.
//!
//! Where: `$FSDELTA_CACHE_DIR`, `$XDG_CACHE_HOME/fsdelta`, `$HOME/.cache/fsdelta`, else
//! `/var/tmp/fsdelta-cache` (the same rule as `vm::cache_dir`), under `kbuild/`:
//! - `kbuild/trees/<tree id>/src`: a `git worktree add --detach` of the user's tree (the user's
//!   checkout, index and branches are never touched; only git's own worktree list learns of
//!   it), moved to each commit with `git checkout --detach` inside it, so that make rebuilds
//!   only what changed between commits;
//! - `kbuild/trees/<tree id>/obj-<config digest>`: the `O=` build directory of each config;
//! - `kbuild/built/<commit12>-<key>/`: one finished build, laid out as an installed system so
//!   that the image alone leads to the rest (`vm::kernel` looks beside a kernel's `boot/`):
//!   `boot/bzImage`, `boot/config` (also as `boot/.config`, where the guest reads what is built
//!   in), `lib/modules/RELEASE` (`make modules_install`, with CONFIG_MODULES=y), `build.log`,
//!   `built.json`. `run --kernel IMAGE` (what `bisect --kernel` passes) thus boots the image
//!   with its modules. A build is reused when its key matches.
//!
//! Never: write into the user's checkout, build without a log, or report a failed build
//! without naming the commit and the log.

use serde::{Deserialize, Serialize};
use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The config fragment used when none is given: what fsdelta's guests need on x86-64 (PVH
/// entry, virtio PCI disks and console, the 8250 serial ports, an initramfs, devtmpfs, and every
/// filesystem a configuration may name: ext4, xfs, btrfs, f2fs, erofs, tmpfs), everything built
/// in, on top of `make tinyconfig`; `make olddefconfig` fills the rest.
pub const DEFAULT_FRAGMENT: &str = "\
CONFIG_64BIT=y
CONFIG_SMP=y
CONFIG_PRINTK=y
CONFIG_TTY=y
CONFIG_SERIAL_8250=y
CONFIG_SERIAL_8250_CONSOLE=y
CONFIG_HYPERVISOR_GUEST=y
CONFIG_PARAVIRT=y
CONFIG_PVH=y
CONFIG_PCI=y
CONFIG_VIRTIO_MENU=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_BLK=y
CONFIG_VIRTIO_CONSOLE=y
CONFIG_BLOCK=y
CONFIG_BLK_DEV=y
CONFIG_BLK_DEV_INITRD=y
CONFIG_RD_GZIP=y
CONFIG_BINFMT_ELF=y
CONFIG_BINFMT_SCRIPT=y
CONFIG_DEVTMPFS=y
CONFIG_DEVTMPFS_MOUNT=y
CONFIG_PROC_FS=y
CONFIG_SYSFS=y
CONFIG_TMPFS=y
CONFIG_FUTEX=y
CONFIG_EPOLL=y
CONFIG_MULTIUSER=y
CONFIG_POSIX_TIMERS=y
CONFIG_FILE_LOCKING=y
CONFIG_UNIX=y
CONFIG_NET=y
CONFIG_EXT4_FS=y
CONFIG_XFS_FS=y
CONFIG_BTRFS_FS=y
CONFIG_F2FS_FS=y
CONFIG_EROFS_FS=y
CONFIG_TRACEPOINTS=y
CONFIG_FTRACE=y
CONFIG_MODULES=n
";

/// Errors of a kernel build.
#[derive(Debug, thiserror::Error)]
pub enum KbuildError {
    /// `TREE@COMMIT` is malformed.
    #[error("{0:?} is not TREE@COMMIT (a kernel git tree and a commit of it, as /src/linux@v6.17)")]
    BadRef(String),
    /// TREE is not a git tree.
    #[error(
        "{0} is not a git tree (no .git there): name the top directory of a kernel git checkout, as /src/linux@v6.17"
    )]
    NotATree(PathBuf),
    /// The tree has no such commit.
    #[error(
        "{tree} has no commit {commit:?} ({message}): `git -C {tree} log --oneline` lists its commits; give a hash, tag or branch it has, or fetch the one you mean"
    )]
    NoCommit {
        /// The tree.
        tree: PathBuf,
        /// The commit as given.
        commit: String,
        /// git's message.
        message: String,
    },
    /// A git command failed.
    #[error("git {args} in {tree}: {message}")]
    Git {
        /// The tree.
        tree: PathBuf,
        /// The arguments.
        args: String,
        /// git's message.
        message: String,
    },
    /// The build failed.
    #[error("building {commit} failed at {stage}: {last}; the whole log is {log}")]
    Failed {
        /// The commit (full hash).
        commit: String,
        /// The stage.
        stage: Stage,
        /// The last lines of the log.
        last: String,
        /// The log.
        log: PathBuf,
    },
    /// An I/O error.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was done.
        what: &'static str,
        /// Where.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> KbuildError {
    let path = path.to_path_buf();
    move |source| KbuildError::Io { what, path, source }
}

/// A commit of a kernel tree: `TREE@COMMIT`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelRef {
    /// The git tree.
    pub tree: PathBuf,
    /// The commit as given (a hash, tag, branch).
    pub commit: String,
}

impl KernelRef {
    /// Parse `TREE@COMMIT` (split at the last `@`: a path may hold one, a revision rarely).
    /// Only the syntax is checked here; [`build`] checks that the tree and commit exist.
    pub fn parse(s: &str) -> Result<KernelRef, KbuildError> {
        let (tree, commit) = s
            .rsplit_once('@')
            .ok_or_else(|| KbuildError::BadRef(s.to_string()))?;
        if tree.is_empty() || commit.is_empty() || commit.contains(char::is_whitespace) {
            return Err(KbuildError::BadRef(s.to_string()));
        }
        Ok(KernelRef {
            tree: PathBuf::from(tree),
            commit: commit.to_string(),
        })
    }
}

impl KernelRef {
    /// `Some` when `arg` (a `--kernel` value or a configuration's `kernel`) names a commit of a
    /// git tree: `TREE@COMMIT` whose TREE is a directory with `.git`. A path that exists as
    /// written (an image, a .deb) is never taken for one.
    pub fn of_arg(arg: &Path) -> Option<KernelRef> {
        if arg.exists() {
            return None;
        }
        let k = KernelRef::parse(arg.to_str()?).ok()?;
        k.tree.join(".git").exists().then_some(k)
    }
}

/// A stage of a build, for progress and failures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Moving fsdelta's checkout to the commit.
    Checkout,
    /// Writing the config and `make olddefconfig`.
    Config,
    /// `make bzImage` (and modules).
    Compile,
    /// Copying the image and installing modules into the cache.
    Install,
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stage::Checkout => "checkout",
            Stage::Config => "config",
            Stage::Compile => "compile",
            Stage::Install => "install",
        })
    }
}

/// Where a build is, for a progress line.
#[derive(Clone, Debug)]
pub struct Progress {
    /// The stage.
    pub stage: Stage,
    /// Seconds since the build started.
    pub elapsed_s: f64,
    /// The last line the build printed.
    pub last_line: String,
}

/// A finished build.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Built {
    /// The tree it came from.
    pub tree: PathBuf,
    /// The commit (full hash).
    pub commit: String,
    /// The commit reverted on top of it (full hash), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverted: Option<String>,
    /// The config's digest.
    pub config_digest: String,
    /// The compiler (`cc --version`'s first line).
    pub compiler: String,
    /// The kernel release (`make kernelrelease`).
    pub release: String,
    /// The bootable image.
    pub image: PathBuf,
    /// The modules directory (`lib/modules/RELEASE` beside the image's `boot/`), with
    /// CONFIG_MODULES=y.
    pub modules: Option<PathBuf>,
    /// The build's log.
    pub log: PathBuf,
    /// Seconds the build took.
    pub build_s: f64,
    /// Whether this build was taken from the cache.
    #[serde(skip)]
    pub cached: bool,
}

/// What to build.
#[derive(Clone, Debug)]
pub struct Request {
    /// Tree and commit.
    pub kernel: KernelRef,
    /// A full `.config` (used as is, then `make olddefconfig`); `None`: `make tinyconfig` plus
    /// [`DEFAULT_FRAGMENT`].
    pub config: Option<String>,
    /// make's `-j` (0: the number of CPUs).
    pub jobs: usize,
    /// A commit to revert on top of `kernel.commit` (`git revert --no-commit` in fsdelta's own
    /// worktree, never the user's checkout): the bad end without the culprit, for `bisect
    /// --kernel --revert`. A revert that does not apply fails the build at the checkout stage.
    pub revert: Option<String>,
}

/// The cache directory (the rule of `vm::cache_dir`, which this room may not import).
pub fn cache_dir() -> PathBuf {
    let var = |k: &str| {
        std::env::var_os(k)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(p) = var("FSDELTA_CACHE_DIR") {
        return p;
    }
    if let Some(p) = var("XDG_CACHE_HOME") {
        return p.join("fsdelta");
    }
    if let Some(p) = var("HOME") {
        return p.join(".cache/fsdelta");
    }
    PathBuf::from("/var/tmp/fsdelta-cache")
}

/// A stable 128-bit digest as 32 hex digits (two FNV-1a passes with different bases): a cache
/// key, not a security boundary.
pub fn digest(text: &str) -> String {
    let fnv = |basis: u64| {
        text.bytes().fold(basis, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    };
    format!(
        "{:016x}{:016x}",
        fnv(0xcbf2_9ce4_8422_2325),
        fnv(0x6c62_272e_07bb_0142)
    )
}

fn git(tree: &Path, args: &[&str]) -> Result<String, KbuildError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(tree)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(io("running git in", tree))?;
    if !out.status.success() {
        return Err(KbuildError::Git {
            tree: tree.to_path_buf(),
            args: args.join(" "),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The compiler make will use: `$CC`, else `cc`, by its `--version` first line.
pub fn compiler() -> String {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    Command::new(&cc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_string)
        })
        .unwrap_or(cc)
}

/// Every finished build in the cache, newest first.
pub fn built(cache: &Path) -> Vec<Built> {
    let Ok(entries) = std::fs::read_dir(cache.join("kbuild/built")) else {
        return Vec::new();
    };
    let mut v: Vec<(std::time::SystemTime, Built)> = entries
        .flatten()
        .filter_map(|e| {
            let p = e.path().join("built.json");
            let t = p.metadata().ok()?.modified().ok()?;
            let b: Built = serde_json::from_str(&std::fs::read_to_string(&p).ok()?).ok()?;
            Some((t, b))
        })
        .collect();
    v.sort_by_key(|b| std::cmp::Reverse(b.0));
    v.into_iter().map(|(_, b)| b).collect()
}

/// The last `n` lines of a file, joined with " | ".
fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// A build under way: its log, its clock, its progress callback.
struct Job<'a> {
    log_path: PathBuf,
    log: std::fs::File,
    started: Instant,
    progress: &'a mut dyn FnMut(&Progress),
    commit: String,
}

impl Job<'_> {
    /// Run `cmd`, every output line to the log and the progress callback; a failure names the
    /// commit, the stage and the log.
    fn run(&mut self, stage: Stage, cmd: &mut Command) -> Result<(), KbuildError> {
        writeln!(self.log, "$ {cmd:?}").map_err(io("writing", &self.log_path))?;
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(io("running make for", &self.log_path))?;
        // stderr is read on a thread so that neither pipe fills while the other is read.
        let stderr = child.stderr.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let tx2 = tx.clone();
        let errs = std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                let _ = tx2.send(line);
            }
        });
        let stdout = child.stdout.take().expect("piped");
        let outs = std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                let _ = tx.send(line);
            }
        });
        for line in rx {
            writeln!(self.log, "{line}").map_err(io("writing", &self.log_path))?;
            (self.progress)(&Progress {
                stage,
                elapsed_s: self.started.elapsed().as_secs_f64(),
                last_line: line,
            });
        }
        let _ = (errs.join(), outs.join());
        let status = child
            .wait()
            .map_err(io("waiting for make of", &self.log_path))?;
        if !status.success() {
            return Err(KbuildError::Failed {
                commit: self.commit.clone(),
                stage,
                last: tail(&self.log_path, 3),
                log: self.log_path.clone(),
            });
        }
        Ok(())
    }
}

/// Build (or take from the cache) the kernel of `req`, telling `progress` where it is.
pub fn build(req: &Request, progress: &mut dyn FnMut(&Progress)) -> Result<Built, KbuildError> {
    build_in(&cache_dir(), req, progress)
}

/// [`build`] with the cache directory `cache_root` (its `kbuild/` is used).
pub fn build_in(
    cache_root: &Path,
    req: &Request,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Built, KbuildError> {
    let tree = std::path::absolute(&req.kernel.tree).map_err(io("resolving", &req.kernel.tree))?;
    if !tree.join(".git").exists() {
        return Err(KbuildError::NotATree(tree));
    }
    let commit = resolve(&tree, &req.kernel.commit)?;
    let config_text = req
        .config
        .clone()
        .unwrap_or_else(|| DEFAULT_FRAGMENT.to_string());
    let config_digest = digest(&format!(
        "{}{}",
        if req.config.is_some() {
            "full\n"
        } else {
            "tiny+fragment\n"
        },
        config_text
    ));
    let reverted = match &req.revert {
        None => None,
        Some(rev) => Some(resolve(&tree, rev)?),
    };
    let compiler = compiler();
    // A revert is part of the key (and only then: the keys of plain builds stay as they were).
    let key = digest(&match &reverted {
        None => format!("{commit}\n{config_digest}\n{compiler}"),
        Some(r) => format!("{commit}\n{config_digest}\n{compiler}\nrevert {r}"),
    });
    let cache = cache_root.join("kbuild");
    let out = cache
        .join("built")
        .join(format!("{}-{}", &commit[..12], &key[..16]));
    if let Ok(text) = std::fs::read_to_string(out.join("built.json"))
        && let Ok(mut b) = serde_json::from_str::<Built>(&text)
        && b.image.is_file()
    {
        b.cached = true;
        return Ok(b);
    }
    std::fs::create_dir_all(&out).map_err(io("creating", &out))?;
    let log_path = out.join("build.log");
    let log = std::fs::File::create(&log_path).map_err(io("creating", &log_path))?;
    let mut job = Job {
        log_path: log_path.clone(),
        log,
        started: Instant::now(),
        progress,
        commit: commit.clone(),
    };
    let base = cache
        .join("trees")
        .join(&digest(&tree.display().to_string())[..16]);
    let src = base.join("src");
    let obj = base.join(format!("obj-{}", &config_digest[..16]));
    checkout_reverted(&mut job, &tree, &src, &commit, reverted.as_deref())?;
    std::fs::create_dir_all(&obj).map_err(io("creating", &obj))?;
    let make = |args: &[&str]| {
        let mut c = Command::new("make");
        // No "Entering/Leaving directory" lines: they carry nothing, and as make prints them
        // on stdout while the cause of a failure goes to stderr, the two pipes' order could
        // put them last and push the cause out of a failure's last lines.
        c.arg("--no-print-directory")
            .arg("-C")
            .arg(&src)
            .arg(format!("O={}", obj.display()));
        c.args(args);
        c
    };
    // Config: the given one, or tinyconfig plus the fragment; then olddefconfig.
    match &req.config {
        Some(text) => std::fs::write(obj.join(".config"), text).map_err(io("writing", &obj))?,
        None => {
            let frag = obj.join("fsdelta.fragment");
            std::fs::write(&frag, DEFAULT_FRAGMENT).map_err(io("writing", &frag))?;
            job.run(Stage::Config, &mut make(&["tinyconfig"]))?;
            let merge = src.join("scripts/kconfig/merge_config.sh");
            job.run(
                Stage::Config,
                Command::new("sh")
                    .arg(&merge)
                    .args(["-m", "-O"])
                    .arg(&obj)
                    .arg(obj.join(".config"))
                    .arg(&frag)
                    .current_dir(&src),
            )?;
        }
    }
    job.run(Stage::Config, &mut make(&["olddefconfig"]))?;
    let jobs = if req.jobs == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        req.jobs
    };
    let config = std::fs::read_to_string(obj.join(".config")).map_err(io("reading", &obj))?;
    let with_modules = config.lines().any(|l| l == "CONFIG_MODULES=y");
    let mut targets = vec![format!("-j{jobs}"), "bzImage".to_string()];
    if with_modules {
        targets.push("modules".into());
    }
    let refs: Vec<&str> = targets.iter().map(String::as_str).collect();
    job.run(Stage::Compile, &mut make(&refs))?;
    install(&mut job, &obj, &out, with_modules, &make)?;
    let release = Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(&src)
        .arg(format!("O={}", obj.display()))
        .arg("kernelrelease")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let built = Built {
        tree,
        commit,
        reverted,
        config_digest,
        compiler,
        modules: with_modules.then(|| out.join("lib/modules").join(&release)),
        release,
        image: out.join("boot/bzImage"),
        log: log_path,
        build_s: job.started.elapsed().as_secs_f64(),
        cached: false,
    };
    let json = serde_json::to_string_pretty(&built).expect("plain data");
    std::fs::write(out.join("built.json"), json).map_err(io("writing", &out))?;
    Ok(built)
}

/// The full hash of the commit `rev` names in `tree`; an error that says how to find one.
fn resolve(tree: &Path, rev: &str) -> Result<String, KbuildError> {
    git(
        tree,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{commit}}"),
        ],
    )
    .map_err(|e| match e {
        KbuildError::Git { message, .. } => KbuildError::NoCommit {
            tree: tree.to_path_buf(),
            commit: rev.to_string(),
            message: if message.is_empty() {
                "git rev-parse knows no such revision".into()
            } else {
                message
            },
        },
        e => e,
    })
}

/// fsdelta's own checkout of `tree` at `commit` in `src`, with `revert` reverted on top (no
/// commit is made: only the worktree's index and files change, and the next checkout's
/// `--force` puts them back).
fn checkout_reverted(
    job: &mut Job<'_>,
    tree: &Path,
    src: &Path,
    commit: &str,
    revert: Option<&str>,
) -> Result<(), KbuildError> {
    // A revert that did not apply last time leaves git's revert state behind: forget it.
    if src.join(".git").exists() {
        let _ = Command::new("git")
            .arg("-C")
            .arg(src)
            .args(["revert", "--quit"])
            .stdin(Stdio::null())
            .output();
    }
    checkout(job, tree, src, commit)?;
    let Some(rev) = revert else { return Ok(()) };
    let result = job.run(
        Stage::Checkout,
        Command::new("git")
            .arg("-C")
            .arg(src)
            .args(["revert", "--no-commit", rev]),
    );
    if result.is_err() {
        let _ = Command::new("git")
            .arg("-C")
            .arg(src)
            .args(["revert", "--abort"])
            .stdin(Stdio::null())
            .output();
    }
    result
}

/// fsdelta's own checkout of `tree` at `commit` in `src` (created once as a detached worktree).
fn checkout(job: &mut Job<'_>, tree: &Path, src: &Path, commit: &str) -> Result<(), KbuildError> {
    if !src.join(".git").exists() {
        if let Some(parent) = src.parent() {
            std::fs::create_dir_all(parent).map_err(io("creating", parent))?;
        }
        job.run(
            Stage::Checkout,
            Command::new("git")
                .arg("-C")
                .arg(tree)
                .args(["worktree", "add", "--detach", "--force"])
                .arg(src)
                .arg(commit),
        )
    } else {
        job.run(
            Stage::Checkout,
            Command::new("git")
                .arg("-C")
                .arg(src)
                .args(["checkout", "--detach", "--force", commit]),
        )
    }
}

/// Copy the image and the config into `out/boot`, and install the modules into `out` (so
/// `out/lib/modules/RELEASE`, where `vm::kernel` looks beside a kernel's `boot/`).
fn install(
    job: &mut Job<'_>,
    obj: &Path,
    out: &Path,
    with_modules: bool,
    make: &dyn Fn(&[&str]) -> Command,
) -> Result<(), KbuildError> {
    let boot = out.join("boot");
    std::fs::create_dir_all(&boot).map_err(io("creating", &boot))?;
    let image = obj.join("arch/x86/boot/bzImage");
    std::fs::copy(&image, boot.join("bzImage")).map_err(io("copying", &image))?;
    let config = obj.join(".config");
    std::fs::copy(&config, boot.join("config")).map_err(io("copying", &config))?;
    // Also as `.config` beside the image, where the guest's kernel check looks for what is
    // built in (virtio, the filesystem) when the kernel has no modules: without it a kernel
    // built with everything in was refused as "no modules beside it".
    std::fs::copy(&config, boot.join(".config")).map_err(io("copying", &config))?;
    if with_modules {
        let dest = format!("INSTALL_MOD_PATH={}", out.display());
        job.run(Stage::Install, &mut make(&["modules_install", &dest]))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_refs_parse_at_the_last_at() {
        let k = KernelRef::parse("/src/linux@v6.17").unwrap();
        assert_eq!(k.tree, PathBuf::from("/src/linux"));
        assert_eq!(k.commit, "v6.17");
        let k = KernelRef::parse("/home/a@b/linux@HEAD~2").unwrap();
        assert_eq!(k.tree, PathBuf::from("/home/a@b/linux"));
        assert_eq!(k.commit, "HEAD~2");
        for bad in ["/src/linux", "@v1", "/src/linux@", "/x@a b"] {
            assert!(KernelRef::parse(bad).is_err(), "{bad}");
        }
        // A path that exists, or a tree without .git, is not a kernel ref.
        let dir = tempfile::tempdir().unwrap();
        let odd = dir.path().join("image@1");
        std::fs::write(&odd, b"").unwrap();
        assert_eq!(KernelRef::of_arg(&odd), None);
        assert_eq!(KernelRef::of_arg(&dir.path().join("x@HEAD")), None);
        std::fs::create_dir_all(dir.path().join("linux/.git")).unwrap();
        let arg = PathBuf::from(format!("{}/linux@v6.17", dir.path().display()));
        assert_eq!(KernelRef::of_arg(&arg).unwrap().commit, "v6.17");
    }

    #[test]
    fn finished_builds_are_listed_from_the_cache() {
        let cache = tempfile::tempdir().unwrap();
        assert!(built(cache.path()).is_empty());
        let dir = cache.path().join("kbuild/built/0123456789ab-k");
        std::fs::create_dir_all(&dir).unwrap();
        let b = Built {
            tree: "/src/linux".into(),
            commit: "0123456789abcdef0123456789abcdef01234567".into(),
            reverted: None,
            config_digest: digest("x"),
            compiler: "gcc (Debian 12.2.0-14) 12.2.0".into(),
            release: "6.1.0".into(),
            image: dir.join("bzImage"),
            modules: None,
            log: dir.join("build.log"),
            build_s: 12.5,
            cached: false,
        };
        std::fs::write(dir.join("built.json"), serde_json::to_string(&b).unwrap()).unwrap();
        // A directory without built.json (a build that failed) is not listed.
        std::fs::create_dir_all(cache.path().join("kbuild/built/failed")).unwrap();
        assert_eq!(built(cache.path()), vec![b]);
    }

    #[test]
    fn digests_are_stable_and_differ() {
        assert_eq!(digest("abc"), digest("abc"));
        assert_ne!(digest("abc"), digest("abd"));
        assert_eq!(digest("").len(), 32);
    }

    /// `git` in `tree` as a test author.
    fn g(tree: &Path, args: &[&str]) {
        let s = Command::new("git")
            .arg("-C")
            .arg(tree)
            .args(args)
            .env("GIT_AUTHOR_NAME", "a")
            .env("GIT_AUTHOR_EMAIL", "a@b")
            .env("GIT_COMMITTER_NAME", "a")
            .env("GIT_COMMITTER_EMAIL", "a@b")
            .output()
            .unwrap();
        assert!(s.status.success(), "{s:?}");
    }

    #[test]
    fn a_build_is_cached_and_a_bad_tree_or_commit_says_how_to_fix_it() {
        // A "kernel tree" whose make writes a stand-in image: the build path end to end, fast.
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("linux");
        std::fs::create_dir_all(tree.join("scripts/kconfig")).unwrap();
        g(&tree, &["init", "-q"]);
        std::fs::write(
            tree.join("Makefile"),
            "O ?= .\n.PHONY: tinyconfig olddefconfig bzImage kernelrelease\n\
             tinyconfig:\n\t@echo '# tiny' > $(O)/.config\n\
             olddefconfig:\n\t@echo olddefconfig\n\
             bzImage:\n\t@mkdir -p $(O)/arch/x86/boot && cp version $(O)/arch/x86/boot/bzImage && echo '  BUILD   bzImage'\n\
             kernelrelease:\n\t@echo 6.1.0-test\n",
        )
        .unwrap();
        std::fs::write(
            tree.join("scripts/kconfig/merge_config.sh"),
            "cat \"$4\" \"$5\" > \"$3/.config.merged\" && mv \"$3/.config.merged\" \"$3/.config\"\n",
        )
        .unwrap();
        std::fs::write(tree.join("version"), "base\n").unwrap();
        g(&tree, &["add", "-A"]);
        g(&tree, &["commit", "-qm", "base"]);
        let cache = dir.path().join("cache");
        let req = |commit: &str| Request {
            kernel: KernelRef {
                tree: tree.clone(),
                commit: commit.into(),
            },
            config: None,
            jobs: 1,
            revert: None,
        };
        let mut stages = Vec::new();
        let b = build_in(&cache, &req("HEAD"), &mut |p| stages.push(p.stage)).unwrap();
        assert!(!b.cached);
        assert_eq!(b.release, "6.1.0-test");
        assert_eq!(std::fs::read_to_string(&b.image).unwrap(), "base\n");
        assert!(
            std::fs::read_to_string(&b.log)
                .unwrap()
                .contains("BUILD   bzImage")
        );
        assert!(stages.contains(&Stage::Compile));
        // The default fragment went into the config.
        let config = std::fs::read_to_string(b.image.with_file_name("config")).unwrap();
        assert!(config.contains("CONFIG_VIRTIO_BLK=y"), "{config}");
        // The guest's kernel check reads what is built in from `.config` beside the image.
        assert_eq!(
            std::fs::read_to_string(b.image.with_file_name(".config")).unwrap(),
            config
        );
        let again = build_in(&cache, &req("HEAD"), &mut |_| panic!("built again")).unwrap();
        assert!(again.cached);
        assert_eq!(again.image, b.image);
        assert_eq!(built(&cache).len(), 1);
        let e = build_in(&cache, &req("v9.9"), &mut |_| {}).unwrap_err();
        assert!(matches!(e, KbuildError::NoCommit { .. }), "{e}");
        assert!(
            e.to_string().contains("has no commit \"v9.9\"")
                && e.to_string().contains("log --oneline"),
            "{e}"
        );
        let plain = dir.path().join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        let e = build_in(
            &cache,
            &Request {
                kernel: KernelRef {
                    tree: plain,
                    commit: "HEAD".into(),
                },
                config: None,
                jobs: 1,
                revert: None,
            },
            &mut |_| {},
        )
        .unwrap_err();
        assert!(e.to_string().contains("is not a git tree"), "{e}");

        // The bad end with the culprit reverted: built in fsdelta's worktree from HEAD minus
        // the commit, cached apart from HEAD's own build; the user's checkout is untouched.
        std::fs::write(tree.join("version"), "patched\n").unwrap();
        g(&tree, &["commit", "-qam", "the patch"]);
        let reverted = Request {
            revert: Some("HEAD".into()),
            ..req("HEAD")
        };
        let r = build_in(&cache, &reverted, &mut |_| {}).unwrap();
        assert_eq!(std::fs::read_to_string(&r.image).unwrap(), "base\n");
        assert_eq!(r.reverted.as_deref().map(str::len), Some(40));
        let plain = build_in(&cache, &req("HEAD"), &mut |_| {}).unwrap();
        assert_eq!(std::fs::read_to_string(&plain.image).unwrap(), "patched\n");
        assert_ne!(plain.image, r.image);
        assert!(
            build_in(&cache, &reverted, &mut |_| panic!("built again"))
                .unwrap()
                .cached
        );
        // A revert that does not apply fails at the checkout, naming the commit; the worktree
        // is usable again at once.
        std::fs::write(tree.join("version"), "third\n").unwrap();
        g(&tree, &["commit", "-qam", "another patch"]);
        let e = build_in(
            &cache,
            &Request {
                revert: Some("HEAD~1".into()),
                ..req("HEAD")
            },
            &mut |_| {},
        )
        .unwrap_err();
        assert!(
            matches!(
                &e,
                KbuildError::Failed {
                    stage: Stage::Checkout,
                    ..
                }
            ),
            "{e}"
        );
        let third = build_in(&cache, &req("HEAD"), &mut |_| {}).unwrap();
        assert_eq!(std::fs::read_to_string(&third.image).unwrap(), "third\n");
        let st = Command::new("git")
            .arg("-C")
            .arg(&tree)
            .args(["status", "--porcelain"])
            .output()
            .unwrap();
        assert!(st.stdout.is_empty(), "the user's checkout was touched");
    }

    #[test]
    fn a_failed_build_names_the_commit_and_keeps_the_log() {
        // A "kernel tree" whose make fails at once: the error names the commit and the log.
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("linux");
        std::fs::create_dir_all(&tree).unwrap();
        let g = |args: &[&str]| {
            let s = Command::new("git")
                .arg("-C")
                .arg(&tree)
                .args(args)
                .env("GIT_AUTHOR_NAME", "a")
                .env("GIT_AUTHOR_EMAIL", "a@b")
                .env("GIT_COMMITTER_NAME", "a")
                .env("GIT_COMMITTER_EMAIL", "a@b")
                .output()
                .unwrap();
            assert!(s.status.success(), "{s:?}");
        };
        g(&["init", "-q"]);
        std::fs::write(
            tree.join("Makefile"),
            "%:\n\t@echo 'no kernel here' >&2; exit 2\n",
        )
        .unwrap();
        g(&["add", "-A"]);
        g(&["commit", "-qm", "not a kernel"]);
        let cache = dir.path().join("cache");
        let req = Request {
            kernel: KernelRef::parse(&format!("{}@HEAD", tree.display())).unwrap(),
            config: Some("CONFIG_64BIT=y\n".into()),
            jobs: 1,
            revert: None,
        };
        let mut lines = Vec::new();
        let err = build_in(&cache, &req, &mut |p| lines.push(p.last_line.clone())).unwrap_err();
        let KbuildError::Failed {
            commit,
            stage,
            log,
            last,
        } = &err
        else {
            panic!("{err}");
        };
        assert_eq!(commit.len(), 40);
        assert_eq!(*stage, Stage::Config);
        assert!(log.is_file() && last.contains("no kernel here"), "{err}");
        assert!(err.to_string().contains(commit.as_str()));
        assert!(lines.iter().any(|l| l.contains("no kernel here")));
        // The user's tree is untouched: only its worktree list knows fsdelta's checkout.
        let st = Command::new("git")
            .arg("-C")
            .arg(&tree)
            .args(["status", "--porcelain"])
            .output()
            .unwrap();
        assert!(st.stdout.is_empty());
    }
}
