//! The configuration file of `fsdelta run --config FILE.toml`: a scratch location and a list of
//! configurations (filesystem, device, mkfs and mount options, when to make a fresh filesystem,
//! commands around every sample), parsed and validated into plain values.
//!
//! Why here: the matrix of configurations is decided before anything touches a filesystem, and a
//! mistake in the file must be reported with its line, the configuration and the key, and how to
//! fix it, before any device is formatted. This module must never touch the filesystem: it does
//! not read the file (the caller passes its text), does not check that a device exists, and does
//! not run anything. The safety checks that need the running system live in `site::device`.
//!
//! The shape (the contract of issue 4; more keys may be added):
//!
//! ```toml
//! scratch = "/var/tmp/fsdelta"      # loop images and mount points live here (the default)
//!
//! [[config]]
//! name = "btrfs-zstd"               # letters, digits, '.', '_', '-'; unique in the file
//! fs = "btrfs"                      # btrfs | ext4 | xfs | tmpfs | dir
//! device = "loop:4G"                # loop:SIZE, or a block device path (needs destroy = true)
//! mkfs = "-f"                       # extra mkfs options, split like a shell would
//! mount = "compress-force=zstd"     # mount options, comma separated
//! fresh = "sample"                  # "sample" (mkfs before every sample, default) or "run"
//! before = "echo start"             # optional shell command before every sample
//! after = "echo end"                # optional shell command after every sample
//!
//! [[config]]
//! name = "ram"
//! fs = "tmpfs"
//! size = "2G"                       # tmpfs only: the size= mount option
//!
//! [[config]]
//! name = "home"
//! fs = "dir"
//! path = "/home/me/bench"           # dir only: an existing, empty (or fsdelta-marked) directory
//!
//! [[config]]
//! name = "ext4-6.1"
//! fs = "ext4"
//! device = "loop:2G"
//! kernel = "/boot/vmlinuz-6.1.0-47-amd64"  # boot this kernel in a QEMU guest ("host": run here)
//! modules = "/lib/modules/6.1.0-47-amd64"  # optional: where its modules are
//! cmdline = "mitigations=off"       # optional: added to the guest's kernel command line
//! memory = "2G"                     # optional: guest memory (default 2G, at least 256M)
//! cpus = 2                          # optional: guest vCPUs (default 2)
//!
//! [[config]]
//! name = "ext4-patched"
//! fs = "ext4"
//! device = "loop:2G"
//! # a commit of a kernel git tree, built by fsdelta (cached) and booted; config is optional (a
//! # .config, relative to this file; default: tinyconfig plus what a guest needs). The string
//! # kernel = "/src/linux@patched" is the same without a config.
//! kernel = { tree = "/src/linux", commit = "patched", config = "guest.config" }
//! ```

use super::raw::Loose;
use serde::Deserialize;
use serde::de::IntoDeserializer;
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use toml::de::{DeTable, DeValue};

/// The scratch location used when the file names none.
pub const DEFAULT_SCRATCH: &str = "/var/tmp/fsdelta";

/// A parsed, validated configuration file.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigFile {
    /// Where loop images and mount points are created (absolute).
    pub scratch: PathBuf,
    /// The configurations, in file order.
    pub configs: Vec<TargetConfig>,
}

/// The filesystem of a configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FsKind {
    /// btrfs, made by mkfs.btrfs.
    Btrfs,
    /// ext4, made by mkfs.ext4.
    Ext4,
    /// xfs, made by mkfs.xfs.
    Xfs,
    /// f2fs, made by mkfs.f2fs (f2fs-tools).
    F2fs,
    /// A tmpfs mount (no device, no mkfs).
    Tmpfs,
    /// An existing directory on whatever filesystem holds it (no mkfs, no mount).
    Dir,
    /// A read-only erofs image that mkfs.erofs builds from a directory tree (`source`),
    /// attached to a loop device and mounted read-only.
    Erofs,
}

impl FsKind {
    /// Every kind, in the order the error messages list them.
    pub const ALL: [FsKind; 7] = [
        FsKind::Btrfs,
        FsKind::Ext4,
        FsKind::Xfs,
        FsKind::F2fs,
        FsKind::Erofs,
        FsKind::Tmpfs,
        FsKind::Dir,
    ];

    /// The name used in the file and as the kernel's filesystem type.
    pub fn as_str(self) -> &'static str {
        match self {
            FsKind::Btrfs => "btrfs",
            FsKind::Ext4 => "ext4",
            FsKind::Xfs => "xfs",
            FsKind::F2fs => "f2fs",
            FsKind::Tmpfs => "tmpfs",
            FsKind::Dir => "dir",
            FsKind::Erofs => "erofs",
        }
    }

    /// Whether the filesystem is read-only (only workloads that write nothing run on it).
    pub fn read_only(self) -> bool {
        self == FsKind::Erofs
    }

    /// Whether fsdelta runs mkfs for this kind (and so needs a device).
    pub fn needs_mkfs(self) -> bool {
        matches!(
            self,
            FsKind::Btrfs | FsKind::Ext4 | FsKind::Xfs | FsKind::F2fs
        )
    }

    /// The names of every kind, for error messages (`btrfs, ext4, ...`).
    pub fn names() -> String {
        FsKind::ALL.map(FsKind::as_str).join(", ")
    }
}

impl fmt::Display for FsKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a configuration's filesystem lives. Validation guarantees: `Loop` and `Block` only with
/// btrfs/ext4/xfs/f2fs, `Memory` only with tmpfs, `Existing` only with dir.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Device {
    /// A sparse image of this size under the scratch location, attached to a loop device;
    /// created and removed by fsdelta.
    Loop {
        /// Image size in bytes.
        size_bytes: u64,
    },
    /// A block device the file allows fsdelta to destroy (`destroy = true` was given).
    Block {
        /// The device path as written (`/dev/nvme1n1`).
        path: PathBuf,
    },
    /// A tmpfs, optionally limited to a size.
    Memory {
        /// The `size=` mount option in bytes; `None` leaves the kernel default (half of RAM).
        size_bytes: Option<u64>,
    },
    /// An existing directory.
    Existing {
        /// Absolute path of the directory.
        path: PathBuf,
    },
    /// An image fsdelta builds from the tree `source` (mkfs.erofs IMAGE SOURCE) under the
    /// scratch location, attached to a loop device; created and removed by fsdelta. The tree
    /// is only read.
    Image {
        /// Absolute path of the directory packed into the image.
        source: PathBuf,
    },
}

/// When a fresh filesystem is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Fresh {
    /// mkfs (or a new tmpfs, or a new directory) before every sample, as fsperf does.
    #[default]
    Sample,
    /// Once per run; every sample gets a fresh, empty directory on the same filesystem.
    Run,
}

impl Fresh {
    /// The name used in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            Fresh::Sample => "sample",
            Fresh::Run => "run",
        }
    }
}

/// One `[[config]]` entry, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetConfig {
    /// Unique name (safe to use in file names: letters, digits, `.`, `_`, `-`).
    pub name: String,
    /// The filesystem.
    pub fs: FsKind,
    /// Where it lives.
    pub device: Device,
    /// Extra mkfs options, split into words as a shell would.
    pub mkfs_options: Vec<String>,
    /// Mount options as written (comma separated, may be empty).
    pub mount_options: String,
    /// When to make a fresh filesystem.
    pub fresh: Fresh,
    /// Shell command run before every sample.
    pub before: Option<String>,
    /// Shell command run after every sample.
    pub after: Option<String>,
    /// The line of the `[[config]]` header, for messages.
    pub line: usize,
    /// The kernel the configuration runs under: `None` on the host (no `kernel` key, or
    /// `kernel = "host"`), else a QEMU guest of that kernel (see `crate::vm`).
    pub vm: Option<VmConfig>,
}

/// The guest of a configuration with a `kernel` key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmConfig {
    /// The kernel as written: a bzImage/vmlinuz, a vmlinux, a kernel build tree (or its
    /// `arch/x86/boot/bzImage`), or a Debian `linux-image-*.deb`.
    pub kernel: PathBuf,
    /// Where the kernel's modules are (`None`: found beside the kernel).
    pub modules: Option<PathBuf>,
    /// Added to the guest's kernel command line.
    pub cmdline: Option<String>,
    /// Guest memory in bytes (`None`: the default of `crate::vm`).
    pub memory_bytes: Option<u64>,
    /// Guest vCPUs (`None`: the default of `crate::vm`).
    pub cpus: Option<u32>,
    /// `kernel = { tree, commit, config }`: the commit to build (then `kernel` is
    /// `TREE@COMMIT`, for names and messages); `None` for a kernel given as a string (which may
    /// still be `TREE@COMMIT`: the caller decides, as this module never looks at the disk).
    pub build: Option<KernelBuild>,
}

/// `kernel = { tree = "...", commit = "...", config = "..." }`: a commit of a kernel git tree
/// to build and boot (`crate::kbuild` builds it; the CLI resolves it before the run).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelBuild {
    /// The git tree, as written (relative: to the configuration file's directory).
    pub tree: PathBuf,
    /// The commit (hash, tag, branch, or any revision git names one commit by).
    pub commit: String,
    /// The `.config` to build with, as written (relative: to the configuration file's
    /// directory); `None`: kbuild's default (tinyconfig plus what a guest needs).
    pub config: Option<PathBuf>,
}

/// The `kernel` key read: where its value starts, the kernel, what to build.
type KernelKey = (usize, PathBuf, Option<KernelBuild>);

/// The keys of a `kernel = { ... }` table.
const KERNEL_KEYS: [&str; 3] = ["tree", "commit", "config"];

/// The least guest memory a configuration may ask for.
pub const MIN_VM_MEMORY: u64 = 256 << 20;

/// A configuration file that cannot be used: where, what and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct ConfigError {
    /// The file, as the caller named it.
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The configuration's name (or `#N` when it has none yet), when the error is inside one.
    pub config: Option<String>,
    /// The key at fault, when there is one.
    pub key: Option<String>,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl ConfigError {
    fn render(&self) -> String {
        let mut s = self.file.clone();
        if let Some(line) = self.line {
            s.push_str(&format!(":{line}"));
        }
        s.push_str(": ");
        if let Some(c) = &self.config {
            s.push_str(&format!("config '{c}': "));
        }
        if let Some(k) = &self.key {
            s.push_str(&format!("key '{k}': "));
        }
        s.push_str(&self.message);
        s
    }
}

/// The keys of the top level (the fields of [`RawTop`]).
const TOP_KEYS: [&str; 2] = ["scratch", "config"];
/// The keys of a [[config]] (the fields of [`RawConfig`]), in the order messages list them.
const CONFIG_KEYS: [&str; 17] = [
    "name", "fs", "device", "destroy", "mkfs", "mount", "fresh", "before", "after", "path", "size",
    "source", "kernel", "modules", "cmdline", "memory", "cpus",
];

/// A value as written, where it was written.
type Field<T> = Spanned<Loose<T>>;

/// The top level as read (the [[config]] list is walked from the table, entry by entry, so
/// that each keeps its place in the file).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTop {
    scratch: Option<Field<String>>,
    #[serde(rename = "config")]
    _config: Option<serde::de::IgnoredAny>,
}

/// What every [[config]] is checked for first, so that every later message names it.
#[derive(Deserialize)]
struct RawName {
    name: Option<Field<String>>,
}

/// One [[config]] as read, before any check.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(rename = "name")]
    _name: serde::de::IgnoredAny,
    fs: Option<Field<String>>,
    device: Option<Field<String>>,
    destroy: Option<Field<bool>>,
    mkfs: Option<Field<String>>,
    mount: Option<Field<String>>,
    fresh: Option<Field<String>>,
    before: Option<Field<String>>,
    after: Option<Field<String>>,
    path: Option<Field<String>>,
    size: Option<Field<String>>,
    source: Option<Field<String>>,
    kernel: Option<Field<toml::Value>>,
    modules: Option<Field<String>>,
    cmdline: Option<Field<String>>,
    memory: Option<Field<String>>,
    cpus: Option<Field<i64>>,
}

impl RawConfig {
    /// Where `key` was written (the start of its value), when it was given.
    fn at(&self, key: &str) -> Option<usize> {
        fn start<T>(f: &Option<Field<T>>) -> Option<usize> {
            f.as_ref().map(|f| f.span().start)
        }
        match key {
            "fs" => start(&self.fs),
            "device" => start(&self.device),
            "destroy" => start(&self.destroy),
            "mkfs" => start(&self.mkfs),
            "mount" => start(&self.mount),
            "fresh" => start(&self.fresh),
            "before" => start(&self.before),
            "after" => start(&self.after),
            "path" => start(&self.path),
            "size" => start(&self.size),
            "source" => start(&self.source),
            "kernel" => start(&self.kernel),
            "modules" => start(&self.modules),
            "cmdline" => start(&self.cmdline),
            "memory" => start(&self.memory),
            "cpus" => start(&self.cpus),
            _ => None,
        }
    }
}

/// Parse and validate the text of a configuration file. `file` names it in error messages.
pub fn parse(text: &str, file: &str) -> Result<ConfigFile, ConfigError> {
    let p = Parser { text, file };
    let doc = DeTable::parse(text).map_err(|e| ConfigError {
        file: file.to_string(),
        line: e.span().map(|s| p.line_of(s.start)),
        config: None,
        key: None,
        message: format!(
            "not valid TOML: {}; see examples/*.toml for the shape",
            e.message().trim()
        ),
    })?;
    let top = doc.get_ref();
    if let Some((k, v)) = top
        .iter()
        .find(|(k, _)| !TOP_KEYS.contains(&k.get_ref().as_ref()))
    {
        return Err(p.err_at(
            v.span().start,
            None,
            Some(k.get_ref()),
            format!(
                "unknown key; the top level knows only {}: remove it or check its spelling",
                TOP_KEYS.join(", ")
            ),
        ));
    }
    let raw = RawTop::deserialize(doc.clone().into_deserializer()).map_err(|e| p.serde(e))?;
    let scratch = match p.string(&raw.scratch, None, "scratch")? {
        None => PathBuf::from(DEFAULT_SCRATCH),
        Some((at, s)) if !s.starts_with('/') => {
            return Err(p.err_at(
                at,
                None,
                Some("scratch"),
                format!(
                    "'{s}' is not an absolute path: write it from '/', e.g. \"{DEFAULT_SCRATCH}\""
                ),
            ));
        }
        Some((_, s)) => PathBuf::from(s),
    };
    let items = p.entries(top.get("config"))?;
    let mut configs = Vec::with_capacity(items.len());
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        let c = p.config(item, i)?;
        if let Some(first) = seen.get(&c.name) {
            return Err(p.err_at(
                item.span().start,
                Some(c.name.clone()),
                Some("name"),
                format!(
                    "the name is already used by the configuration at line {first}: names must be unique, rename one"
                ),
            ));
        }
        seen.insert(c.name.clone(), c.line);
        configs.push(c);
    }
    Ok(ConfigFile { scratch, configs })
}

struct Parser<'a> {
    text: &'a str,
    file: &'a str,
}

type Spanned<T> = toml::Spanned<T>;

impl Parser<'_> {
    fn line_of(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    fn err(
        &self,
        line: Option<usize>,
        config: Option<String>,
        key: Option<&str>,
        message: String,
    ) -> ConfigError {
        ConfigError {
            file: self.file.to_string(),
            line,
            config,
            key: key.map(str::to_string),
            message,
        }
    }

    fn err_at(
        &self,
        offset: usize,
        config: Option<String>,
        key: Option<&str>,
        message: String,
    ) -> ConfigError {
        self.err(Some(self.line_of(offset)), config, key, message)
    }

    /// A raw struct that did not read (the checks before it leave no way for that; should one
    /// be missed, the message is serde's, at its place).
    fn serde(&self, e: toml::de::Error) -> ConfigError {
        ConfigError {
            file: self.file.to_string(),
            line: e.span().map(|s| self.line_of(s.start)),
            config: None,
            key: None,
            message: e.message().trim().to_string(),
        }
    }

    /// A string key, with where its value starts.
    fn string<'v>(
        &self,
        v: &'v Option<Field<String>>,
        config: Option<&str>,
        key: &str,
    ) -> Result<Option<(usize, &'v str)>, ConfigError> {
        let Some(v) = v else { return Ok(None) };
        match v.get_ref().get() {
            Ok(s) => Ok(Some((v.span().start, s.as_str()))),
            Err(written) => Err(self.err_at(
                v.span().start,
                config.map(str::to_string),
                Some(key),
                format!(
                    "expected a string, found {}: put the value in double quotes",
                    written.type_str()
                ),
            )),
        }
    }

    /// The entries of the `config` key: an array of tables, not empty.
    fn entries<'t, 'i>(
        &self,
        list: Option<&'t Spanned<DeValue<'i>>>,
    ) -> Result<&'t [Spanned<DeValue<'i>>], ConfigError> {
        let Some(list) = list else {
            return Err(self.err(
                None,
                None,
                Some("config"),
                "no [[config]] entry: add at least one, e.g. [[config]] name = \"ext4\" fs = \"ext4\" device = \"loop:4G\"".into(),
            ));
        };
        let DeValue::Array(items) = list.get_ref() else {
            return Err(self.err_at(
                list.span().start,
                None,
                Some("config"),
                "must be an array of tables: write each entry as a [[config]] section".into(),
            ));
        };
        if items.is_empty() {
            return Err(self.err_at(
                list.span().start,
                None,
                Some("config"),
                "is empty: add at least one [[config]] section".into(),
            ));
        }
        if let Some((i, item)) = items
            .iter()
            .enumerate()
            .find(|(_, item)| !matches!(item.get_ref(), DeValue::Table(_)))
        {
            return Err(self.err_at(
                item.span().start,
                Some(format!("#{}", i + 1)),
                Some("config"),
                "entry is not a table: write each entry as a [[config]] section".into(),
            ));
        }
        Ok(items)
    }

    /// The header line of a `[[config]]` entry: the table's span starts at its first key, so
    /// walk back to the `[[config]]` line when it is right above.
    fn header_line(&self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        if self.text[offset..].starts_with("[[") {
            return self.line_of(offset);
        }
        match self.text[..offset].rfind("[[") {
            Some(h) => self.line_of(h),
            None => self.line_of(offset),
        }
    }

    /// Entry number `index` (from 0) of the [[config]] list: its name and keys, then the
    /// rest, read into a [`RawConfig`] and checked step by step.
    fn config(
        &self,
        item: &Spanned<DeValue<'_>>,
        index: usize,
    ) -> Result<TargetConfig, ConfigError> {
        let line = self.header_line(item.span().start);
        let name = self.name(item, line, index)?;
        let cfg = Check {
            p: self,
            name: &name,
            line,
        };
        let DeValue::Table(t) = item.get_ref() else {
            unreachable!("entries() lets only tables through")
        };
        if let Some((k, v)) = t
            .iter()
            .find(|(k, _)| !CONFIG_KEYS.contains(&k.get_ref().as_ref()))
        {
            return Err(cfg.at(
                v.span().start,
                k.get_ref(),
                format!(
                    "unknown key; a [[config]] knows only {}: remove it or check its spelling",
                    CONFIG_KEYS.join(", ")
                ),
            ));
        }
        let raw =
            RawConfig::deserialize(item.clone().into_deserializer()).map_err(|e| self.serde(e))?;
        let fs = cfg.fs(&raw)?;
        let destroy = match &raw.destroy {
            None => None,
            Some(v) => Some(*v.get_ref().get().map_err(|written| {
                cfg.at(
                    v.span().start,
                    "destroy",
                    format!(
                        "expected true or false, found {}: write destroy = true (without quotes)",
                        written.type_str()
                    ),
                )
            })?),
        };
        let device = cfg.device(&raw, fs, destroy)?;
        let mkfs_options = cfg.mkfs(&raw, fs)?;
        let mount_options = cfg.mount(&raw, &device)?;
        let fresh = cfg.fresh(&raw)?;
        let before = cfg.command(&raw.before, "before")?;
        let after = cfg.command(&raw.after, "after")?;
        let vm = cfg.vm_config(&raw, fs, &device)?;
        Ok(TargetConfig {
            name,
            fs,
            device,
            mkfs_options,
            mount_options,
            fresh,
            before,
            after,
            line,
            vm,
        })
    }

    /// The `name` of entry `index`, checked; messages name the entry `#N` until it has one.
    fn name(
        &self,
        item: &Spanned<DeValue<'_>>,
        line: usize,
        index: usize,
    ) -> Result<String, ConfigError> {
        let anon = format!("#{}", index + 1);
        let raw =
            RawName::deserialize(item.clone().into_deserializer()).map_err(|e| self.serde(e))?;
        let Some((at, s)) = self.string(&raw.name, Some(&anon), "name")? else {
            return Err(self.err(
                Some(line),
                Some(anon),
                Some("name"),
                "missing: give every configuration a unique name, e.g. name = \"btrfs-zstd\""
                    .into(),
            ));
        };
        let ok = !s.is_empty()
            && s.len() <= 64
            && !s.starts_with('.')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !ok {
            return Err(self.err_at(
                at,
                Some(anon),
                Some("name"),
                format!(
                    "'{s}' is not a usable name: use 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'"
                ),
            ));
        }
        Ok(s.to_string())
    }
}

/// The checks of one named [[config]]: every message names the configuration and the key.
struct Check<'p> {
    p: &'p Parser<'p>,
    name: &'p str,
    /// The line of its `[[config]]` header, for keys that are missing.
    line: usize,
}

impl Check<'_> {
    /// An error at `offset` about `key`.
    fn at(&self, offset: usize, key: &str, message: String) -> ConfigError {
        self.p
            .err_at(offset, Some(self.name.to_string()), Some(key), message)
    }

    /// An error about a missing `key` (at the header line).
    fn missing(&self, key: &str, message: String) -> ConfigError {
        self.p.err(
            Some(self.line),
            Some(self.name.to_string()),
            Some(key),
            message,
        )
    }

    /// A string key, with where its value starts.
    fn string<'v>(
        &self,
        v: &'v Option<Field<String>>,
        key: &str,
    ) -> Result<Option<(usize, &'v str)>, ConfigError> {
        self.p.string(v, Some(self.name), key)
    }

    /// Refuse `key` if it is given: it does not fit `fs`, `why`.
    fn forbid(&self, raw: &RawConfig, fs: FsKind, key: &str, why: &str) -> Result<(), ConfigError> {
        match raw.at(key) {
            None => Ok(()),
            Some(at) => Err(self.at(at, key, format!("not allowed with fs = \"{fs}\": {why}"))),
        }
    }

    fn fs(&self, raw: &RawConfig) -> Result<FsKind, ConfigError> {
        let Some((at, s)) = self.string(&raw.fs, "fs")? else {
            return Err(self.missing(
                "fs",
                format!("missing: say which filesystem, one of {}", FsKind::names()),
            ));
        };
        FsKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                self.at(
                    at,
                    "fs",
                    format!("unknown filesystem '{s}': use one of {}", FsKind::names()),
                )
            })
    }

    /// Where the filesystem lives: the keys that fit `fs`, and no key that does not.
    fn device(
        &self,
        raw: &RawConfig,
        fs: FsKind,
        destroy: Option<bool>,
    ) -> Result<Device, ConfigError> {
        let forbid = |key: &str, why: &str| self.forbid(raw, fs, key, why);
        if fs != FsKind::Erofs {
            forbid(
                "source",
                "source is the tree an fs = \"erofs\" image is built from",
            )?;
        }
        match fs {
            FsKind::Erofs => {
                for (key, why) in [
                    (
                        "device",
                        "fsdelta builds the image from source and attaches it to a loop device",
                    ),
                    ("size", "the image is as large as the tree it packs"),
                    ("path", "give the tree to pack as source = \"/a/dir\""),
                    ("destroy", "an erofs image destroys nothing"),
                ] {
                    forbid(key, why)?;
                }
                let Some((at, source)) = self.string(&raw.source, "source")? else {
                    return Err(self.missing(
                        "source",
                        "missing: fs = \"erofs\" needs source = \"/a/dir\", the tree mkfs.erofs packs into the image".into(),
                    ));
                };
                if !source.starts_with('/') {
                    return Err(self.at(
                        at,
                        "source",
                        format!("'{source}' is not an absolute path: write it from '/'"),
                    ));
                }
                Ok(Device::Image {
                    source: PathBuf::from(source),
                })
            }
            FsKind::Btrfs | FsKind::Ext4 | FsKind::Xfs | FsKind::F2fs => {
                forbid(
                    "path",
                    "path is for fs = \"dir\"; give a device = \"loop:SIZE\" or a block device",
                )?;
                forbid(
                    "size",
                    "size is for tmpfs; for a loop image write device = \"loop:SIZE\"",
                )?;
                self.block_or_loop(raw, fs, destroy)
            }
            FsKind::Tmpfs => {
                forbid(
                    "device",
                    "a tmpfs has no device; use size = \"2G\" to limit it",
                )?;
                forbid("mkfs", "a tmpfs is not made by mkfs")?;
                forbid("destroy", "a tmpfs destroys nothing")?;
                forbid("path", "path is for fs = \"dir\"")?;
                let size_bytes = match self.string(&raw.size, "size")? {
                    None => None,
                    Some((at, s)) => Some(parse_size(s).map_err(|m| {
                        self.at(at, "size", format!("'{s}': {m}; write e.g. \"2G\""))
                    })?),
                };
                Ok(Device::Memory { size_bytes })
            }
            FsKind::Dir => {
                forbid(
                    "device",
                    "a dir target uses an existing directory: give path = \"/some/dir\"",
                )?;
                forbid("mkfs", "a dir target is not formatted")?;
                forbid("mount", "a dir target is not mounted by fsdelta")?;
                forbid("destroy", "fsdelta never destroys a dir target")?;
                forbid("size", "size is for tmpfs")?;
                let Some((at, path)) = self.string(&raw.path, "path")? else {
                    return Err(self.missing(
                        "path",
                        "missing: fs = \"dir\" needs path = \"/an/existing/empty/directory\""
                            .into(),
                    ));
                };
                if !path.starts_with('/') {
                    return Err(self.at(
                        at,
                        "path",
                        format!("'{path}' is not an absolute path: write it from '/'"),
                    ));
                }
                Ok(Device::Existing {
                    path: PathBuf::from(path),
                })
            }
        }
    }

    /// The `device` of a filesystem fsdelta makes: a loop image, or a block device the file
    /// allows it to destroy.
    fn block_or_loop(
        &self,
        raw: &RawConfig,
        fs: FsKind,
        destroy: Option<bool>,
    ) -> Result<Device, ConfigError> {
        let Some((at, dev)) = self.string(&raw.device, "device")? else {
            return Err(self.missing(
                "device",
                format!(
                    "missing: fs = \"{fs}\" needs a device: \"loop:4G\" for a sparse image fsdelta creates, or a block device path with destroy = true"
                ),
            ));
        };
        if let Some(size) = dev.strip_prefix("loop:") {
            let size_bytes = parse_size(size).map_err(|m| {
                self.at(
                    at,
                    "device",
                    format!("'{dev}': {m}; write e.g. \"loop:4G\""),
                )
            })?;
            Ok(Device::Loop { size_bytes })
        } else if dev.starts_with('/') {
            if destroy != Some(true) {
                return Err(self.at(
                    raw.at("destroy").unwrap_or(at),
                    "destroy",
                    format!(
                        "device '{dev}' is a block device and mkfs destroys everything on it: add destroy = true to this configuration if that is what you want, or use device = \"loop:SIZE\""
                    ),
                ));
            }
            Ok(Device::Block {
                path: PathBuf::from(dev),
            })
        } else {
            Err(self.at(
                at,
                "device",
                format!(
                    "'{dev}' is neither loop:SIZE nor an absolute block device path: write \"loop:4G\" or \"/dev/sdX\""
                ),
            ))
        }
    }

    /// The `mkfs` options, split into words.
    fn mkfs(&self, raw: &RawConfig, fs: FsKind) -> Result<Vec<String>, ConfigError> {
        let Some((at, s)) = self.string(&raw.mkfs, "mkfs")? else {
            return Ok(Vec::new());
        };
        let words = split_words(s).map_err(|m| self.at(at, "mkfs", m))?;
        if fs == FsKind::Ext4
            && let Some(o) = ext_offset(&words)
        {
            return Err(self.at(
                at,
                "mkfs",
                format!(
                    "-E {o} makes mkfs.ext4 write the filesystem that many bytes into the device, where mount does not look for it (the kernel then finds no ext4 and refuses the mount): remove {o} from mkfs ="
                ),
            ));
        }
        Ok(words)
    }

    /// The `mount` options, comma separated.
    fn mount(&self, raw: &RawConfig, device: &Device) -> Result<String, ConfigError> {
        let Some((at, s)) = self.string(&raw.mount, "mount")? else {
            return Ok(String::new());
        };
        let s = s.trim().to_string();
        if s.chars().any(char::is_whitespace) {
            return Err(self.at(
                at,
                "mount",
                format!(
                    "'{s}' contains white space: separate mount options with commas, e.g. \"noatime,compress=zstd\""
                ),
            ));
        }
        if !s.is_empty() && s.split(',').any(str::is_empty) {
            return Err(self.at(
                at,
                "mount",
                format!("'{s}' has an empty option: remove the doubled or trailing comma"),
            ));
        }
        if let (
            Device::Memory {
                size_bytes: Some(_),
            },
            true,
        ) = (device, s.split(',').any(|o| o.starts_with("size=")))
        {
            return Err(self.at(
                at,
                "mount",
                "size= is given twice (here and in key 'size'): keep one".into(),
            ));
        }
        Ok(s)
    }

    fn fresh(&self, raw: &RawConfig) -> Result<Fresh, ConfigError> {
        match self.string(&raw.fresh, "fresh")? {
            None => Ok(Fresh::default()),
            Some((_, "sample")) => Ok(Fresh::Sample),
            Some((_, "run")) => Ok(Fresh::Run),
            Some((at, other)) => Err(self.at(
                at,
                "fresh",
                format!(
                    "'{other}' is not known: use \"sample\" (a new filesystem for every sample) or \"run\" (once per run)"
                ),
            )),
        }
    }

    /// `before` or `after`: a shell command, not blank.
    fn command(&self, v: &Option<Field<String>>, key: &str) -> Result<Option<String>, ConfigError> {
        match self.string(v, key)? {
            None => Ok(None),
            Some((at, s)) if s.trim().is_empty() => Err(self.at(
                at,
                key,
                "is empty: remove the key or give a shell command".into(),
            )),
            Some((_, s)) => Ok(Some(s.to_string())),
        }
    }

    /// The `kernel`, `modules`, `cmdline`, `memory` and `cpus` keys.
    fn vm_config(
        &self,
        raw: &RawConfig,
        fs: FsKind,
        device: &Device,
    ) -> Result<Option<VmConfig>, ConfigError> {
        let kernel = self.kernel(raw)?;
        let Some((kat, kernel, build)) = kernel else {
            for key in ["modules", "cmdline", "memory", "cpus"] {
                if let Some(at) = raw.at(key) {
                    return Err(self.at(
                        at,
                        key,
                        "only for a configuration that boots a kernel: add kernel = \"PATH\" or remove this key".into(),
                    ));
                }
            }
            return Ok(None);
        };
        match (fs, device) {
            (FsKind::Dir, _) => {
                return Err(self.at(
                    kat,
                    "kernel",
                    "a dir target is a directory of the host and cannot be given to a guest: use fs = \"ext4\" (or btrfs, xfs, f2fs) with device = \"loop:SIZE\", or tmpfs".into(),
                ));
            }
            // An erofs image: built on the host from `source`, attached read-only to the guest.
            (_, Device::Image { .. }) => {}
            (_, Device::Block { path }) => {
                return Err(self.at(
                    kat,
                    "kernel",
                    format!(
                        "passing the block device {} through to a guest is not supported yet: use device = \"loop:SIZE\"",
                        path.display()
                    ),
                ));
            }
            _ => {}
        }
        Ok(Some(VmConfig {
            kernel,
            build,
            modules: self
                .string(&raw.modules, "modules")?
                .map(|(_, s)| PathBuf::from(s)),
            cmdline: self.cmdline(raw)?,
            memory_bytes: self.memory(raw)?,
            cpus: self.cpus(raw)?,
        }))
    }

    /// The `kernel` key: where its value starts, the kernel (a path, or `TREE@COMMIT` for the
    /// table form) and, for the table form, what to build; `None` on the host.
    fn kernel(&self, raw: &RawConfig) -> Result<Option<KernelKey>, ConfigError> {
        let Some(v) = &raw.kernel else {
            return Ok(None);
        };
        let at = v.span().start;
        let shape = "give a kernel path (an image, a .deb, a build tree, or TREE@COMMIT), \"host\" to run here, or a commit of a kernel git tree as { tree = \"/src/linux\", commit = \"v6.17\" }";
        let value = v.get_ref().get().map_err(|w| {
            self.at(
                at,
                "kernel",
                format!(
                    "expected a string or a table, found {}: {shape}",
                    w.type_str()
                ),
            )
        })?;
        let table = match value {
            toml::Value::String(k) if k == "host" => return Ok(None),
            toml::Value::String(k) if k.trim().is_empty() => {
                return Err(self.at(
                    at,
                    "kernel",
                    format!("is empty: give a kernel path, or \"host\" to run here (was '{k}')"),
                ));
            }
            toml::Value::String(k) => return Ok(Some((at, PathBuf::from(k), None))),
            toml::Value::Table(t) => t,
            other => {
                return Err(self.at(
                    at,
                    "kernel",
                    format!(
                        "expected a string or a table, found {}: {shape}",
                        other.type_str()
                    ),
                ));
            }
        };
        if let Some(k) = table.keys().find(|k| !KERNEL_KEYS.contains(&k.as_str())) {
            return Err(self.at(
                at,
                "kernel",
                format!(
                    "unknown key '{k}' in the kernel table; it knows only {}: remove it or check its spelling",
                    KERNEL_KEYS.join(", ")
                ),
            ));
        }
        let field = |key: &str, required: bool| -> Result<Option<String>, ConfigError> {
            match table.get(key) {
                None if required => Err(self.at(
                    at,
                    "kernel",
                    format!(
                        "the kernel table has no '{key}': write kernel = {{ tree = \"/src/linux\", commit = \"v6.17\" }} (config is optional)"
                    ),
                )),
                None => Ok(None),
                Some(toml::Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
                Some(toml::Value::String(_)) => Err(self.at(
                    at,
                    "kernel",
                    format!("'{key}' in the kernel table is empty: give it a value or remove it"),
                )),
                Some(other) => Err(self.at(
                    at,
                    "kernel",
                    format!(
                        "'{key}' in the kernel table must be a string, found {}: put it in double quotes",
                        other.type_str()
                    ),
                )),
            }
        };
        let tree = field("tree", true)?.unwrap_or_default();
        let commit = field("commit", true)?.unwrap_or_default();
        if commit.contains(char::is_whitespace) {
            return Err(self.at(
                at,
                "kernel",
                format!(
                    "commit '{commit}' holds a space: give one revision (a hash, tag or branch)"
                ),
            ));
        }
        let build = KernelBuild {
            tree: PathBuf::from(&tree),
            commit: commit.clone(),
            config: field("config", false)?.map(PathBuf::from),
        };
        Ok(Some((
            at,
            PathBuf::from(format!("{tree}@{commit}")),
            Some(build),
        )))
    }

    fn cmdline(&self, raw: &RawConfig) -> Result<Option<String>, ConfigError> {
        match self.string(&raw.cmdline, "cmdline")? {
            None => Ok(None),
            Some((_, s)) if s.trim().is_empty() => Ok(None),
            Some((at, s)) if s.contains('\n') => {
                Err(self.at(at, "cmdline", "must be one line".into()))
            }
            Some((_, s)) => Ok(Some(s.trim().to_string())),
        }
    }

    fn memory(&self, raw: &RawConfig) -> Result<Option<u64>, ConfigError> {
        let Some((at, s)) = self.string(&raw.memory, "memory")? else {
            return Ok(None);
        };
        let b = parse_size(s)
            .map_err(|m| self.at(at, "memory", format!("'{s}': {m}; write e.g. \"2G\"")))?;
        if b < MIN_VM_MEMORY {
            return Err(self.at(
                at,
                "memory",
                format!(
                    "'{s}' is too little for a guest that holds fsdelta in its initramfs: give at least 256M (2G is the default)"
                ),
            ));
        }
        Ok(Some(b))
    }

    fn cpus(&self, raw: &RawConfig) -> Result<Option<u32>, ConfigError> {
        let Some(v) = &raw.cpus else { return Ok(None) };
        let at = v.span().start;
        match v.get_ref().get() {
            Ok(&n) if (1..=64).contains(&n) => Ok(Some(n as u32)),
            Ok(n) => Err(self.at(at, "cpus", format!("{n} is not a vCPU count from 1 to 64"))),
            Err(written) => Err(self.at(
                at,
                "cpus",
                format!(
                    "expected a whole number, found {}: write e.g. cpus = 2",
                    written.type_str()
                ),
            )),
        }
    }
}

/// A name tag for a kernel path (`linux-image-6.1.0-47-amd64_6.1.170-3_amd64.deb` gives
/// `6.1.0-47-amd64`, `/src/linux/arch/x86/boot/bzImage` gives `linux`, an installed build
/// `DIR/boot/bzImage` such as kbuild's cache entry `<commit12>-<key>/boot/bzImage` gives its
/// directory's name), for the configuration names of [`with_kernels`].
pub fn kernel_tag(kernel: &std::path::Path) -> String {
    if kernel.as_os_str() == "host" {
        return "host".into();
    }
    let file = kernel
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut tag = file.as_str();
    for prefix in ["linux-image-", "vmlinuz-", "vmlinux-", "bzImage-"] {
        if let Some(rest) = tag.strip_prefix(prefix) {
            tag = rest;
        }
    }
    let mut tag = tag.split('_').next().unwrap_or_default().to_string();
    if matches!(tag.as_str(), "" | "bzImage" | "vmlinux" | "vmlinuz") {
        // A build tree's image: name it after the tree.
        let dir = if kernel.ends_with("arch/x86/boot/bzImage") {
            kernel.ancestors().nth(4)
        } else if kernel.parent().is_some_and(|p| p.ends_with("boot"))
            && kernel
                .ancestors()
                .nth(2)
                .and_then(|d| d.file_name())
                .is_some()
        {
            // Laid out as installed (kbuild's cache, what `bisect --kernel` boots): every
            // commit's image is `boot/bzImage`, named after the directory above.
            kernel.ancestors().nth(2)
        } else {
            kernel.parent()
        };
        let tree = dir
            .and_then(|a| a.file_name())
            .map(|n| n.to_string_lossy().into_owned());
        tag = tree.unwrap_or_else(|| "kernel".into());
    }
    let tag: String = tag
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    tag.trim_start_matches('.').chars().take(40).collect()
}

/// `fsdelta run --kernel A --kernel B [--config FILE]`: every configuration of `file` once per
/// kernel, named `CONFIG-TAG` ([`kernel_tag`]); `"host"` as a kernel runs that copy on the host.
/// Configurations that name a kernel themselves, dir targets and block devices cannot take one.
pub fn with_kernels(file: &ConfigFile, kernels: &[PathBuf]) -> Result<ConfigFile, String> {
    let mut tags: Vec<String> = Vec::new();
    for k in kernels {
        let base = kernel_tag(k);
        let mut tag = base.clone();
        let mut n = 1;
        while tags.contains(&tag) {
            n += 1;
            tag = format!("{base}-{n}");
        }
        tags.push(tag);
    }
    let mut configs = Vec::new();
    for c in &file.configs {
        if c.vm.is_some() {
            return Err(format!(
                "config '{}' names its own kernel: --kernel applies to configurations without one; remove one or the other",
                c.name
            ));
        }
        for (k, tag) in kernels.iter().zip(&tags) {
            let mut copy = c.clone();
            copy.name = format!("{}-{tag}", c.name).chars().take(64).collect();
            if k.as_os_str() != "host" {
                match (&c.fs, &c.device) {
                    (FsKind::Dir, _) => {
                        return Err(format!(
                            "config '{}' is a dir target, a directory of the host: it cannot run in a guest of --kernel {}",
                            c.name,
                            k.display()
                        ));
                    }
                    (_, Device::Block { path }) => {
                        return Err(format!(
                            "config '{}': passing the block device {} through to a guest is not supported yet: use device = \"loop:SIZE\"",
                            c.name,
                            path.display()
                        ));
                    }
                    _ => {}
                }
                copy.vm = Some(VmConfig {
                    kernel: k.clone(),
                    build: None,
                    modules: None,
                    cmdline: None,
                    memory_bytes: None,
                    cpus: None,
                });
            }
            configs.push(copy);
        }
    }
    Ok(ConfigFile {
        scratch: file.scratch.clone(),
        configs,
    })
}

/// The pairs `--kernel` compares in a file made by [`with_kernels`] with `kernels` kernels:
/// for every original configuration, its first kernel's copy against each other kernel's.
pub fn kernel_pairs(with: &ConfigFile, kernels: usize) -> Vec<(String, String)> {
    with.configs
        .chunks(kernels.max(1))
        .flat_map(|g| g[1..].iter().map(|c| (g[0].name.clone(), c.name.clone())))
        .collect()
}

/// The configuration `--kernel` uses without `--config`: ext4 on a 2 GiB loop image.
pub fn default_kernel_file() -> ConfigFile {
    parse(
        "[[config]]\nname = \"ext4\"\nfs = \"ext4\"\ndevice = \"loop:2G\"\n",
        "(default)",
    )
    .expect("the default configuration parses")
}

/// Parse a size such as `4G`, `512M`, `4GiB`, `1T` or a plain number of bytes (binary units:
/// K = 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if digits == 0 {
        return Err("a size starts with a number".into());
    }
    let n: u64 = s[..digits]
        .parse()
        .map_err(|_| "the number is too large".to_string())?;
    let unit = s[digits..].trim();
    let shift = match unit {
        "" | "B" => 0,
        "K" | "k" | "KiB" | "KB" => 10,
        "M" | "MiB" | "MB" => 20,
        "G" | "GiB" | "GB" => 30,
        "T" | "TiB" | "TB" => 40,
        other => {
            return Err(format!(
                "unknown unit '{other}' (K, M, G, T are powers of 1024)"
            ));
        }
    };
    let bytes = n
        .checked_mul(1u64 << shift)
        .ok_or_else(|| "the size is too large".to_string())?;
    if bytes == 0 {
        return Err("the size must be larger than zero".into());
    }
    Ok(bytes)
}

/// Split options into words as a POSIX shell would (white space separates; single quotes, double
/// quotes and backslashes quote), without expanding anything.
/// The `offset=N` of mkfs.ext4's extended options (`-E offset=N`, `-Eoffset=N`, or one of a
/// comma-separated list), as written.
fn ext_offset(words: &[String]) -> Option<String> {
    let mut values = Vec::new();
    let mut it = words.iter();
    while let Some(w) = it.next() {
        if w == "-E" {
            values.extend(it.next().map(String::as_str));
        } else if let Some(v) = w.strip_prefix("-E") {
            values.push(v);
        }
    }
    values
        .iter()
        .flat_map(|v| v.split(','))
        .find(|o| o.trim().starts_with("offset="))
        .map(|o| o.trim().to_string())
}

pub fn split_words(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err(unterminated("'")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => cur.push(c),
                            Some(c) => {
                                cur.push('\\');
                                cur.push(c);
                            }
                            None => return Err(unterminated("\"")),
                        },
                        Some(c) => cur.push(c),
                        None => return Err(unterminated("\"")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => cur.push(c),
                    None => return Err("ends with a lone backslash: remove it".into()),
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

fn unterminated(q: &str) -> String {
    format!("unterminated {q} quote: close it")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> ConfigError {
        parse(text, "t.toml").unwrap_err()
    }

    #[test]
    fn the_issue_example_parses() {
        let text = r#"scratch = "/var/tmp/fsdelta"      # loop images and mount points live here

[[config]]
name = "btrfs-zstd"
fs = "btrfs"
device = "loop:4G"
mkfs = "-f"                       # extra mkfs options
mount = "compress-force=zstd"     # mount options
fresh = "sample"                  # or "run"

[[config]]
name = "nvme-xfs"
fs = "xfs"
device = "/dev/nvme1n1"
destroy = true
"#;
        let f = parse(text, "t.toml").unwrap();
        assert_eq!(f.scratch, PathBuf::from("/var/tmp/fsdelta"));
        assert_eq!(f.configs.len(), 2);
        let a = &f.configs[0];
        assert_eq!(a.name, "btrfs-zstd");
        assert_eq!(a.fs, FsKind::Btrfs);
        assert_eq!(
            a.device,
            Device::Loop {
                size_bytes: 4 << 30
            }
        );
        assert_eq!(a.mkfs_options, vec!["-f"]);
        assert_eq!(a.mount_options, "compress-force=zstd");
        assert_eq!(a.fresh, Fresh::Sample);
        assert_eq!(a.line, 3);
        let b = &f.configs[1];
        assert_eq!(
            b.device,
            Device::Block {
                path: "/dev/nvme1n1".into()
            }
        );
        assert_eq!(b.fresh, Fresh::Sample);
        assert_eq!(b.line, 11);
    }

    #[test]
    fn tmpfs_dir_and_defaults() {
        let text = r#"
[[config]]
name = "ram"
fs = "tmpfs"
size = "512M"
fresh = "run"
before = "echo hi"
after = "true"

[[config]]
name = "here"
fs = "dir"
path = "/srv/bench"
"#;
        let f = parse(text, "t.toml").unwrap();
        assert_eq!(f.scratch, PathBuf::from(DEFAULT_SCRATCH));
        assert_eq!(
            f.configs[0].device,
            Device::Memory {
                size_bytes: Some(512 << 20)
            }
        );
        assert_eq!(f.configs[0].fresh, Fresh::Run);
        assert_eq!(f.configs[0].before.as_deref(), Some("echo hi"));
        assert_eq!(
            f.configs[1].device,
            Device::Existing {
                path: "/srv/bench".into()
            }
        );
    }

    #[test]
    fn f2fs_takes_a_loop_or_block_device_with_mkfs_and_mount_options() {
        let text = r#"
[[config]]
name = "f2fs-lz4"
fs = "f2fs"
device = "loop:1G"
mkfs = "-O extra_attr,compression"
mount = "compress_algorithm=lz4"

[[config]]
name = "f2fs-nvme"
fs = "f2fs"
device = "/dev/nvme1n1"
destroy = true

[[config]]
name = "f2fs-guest"
fs = "f2fs"
device = "loop:512M"
kernel = "/boot/vmlinuz-6.1"
"#;
        let f = parse(text, "t.toml").unwrap();
        let a = &f.configs[0];
        assert_eq!(a.fs, FsKind::F2fs);
        assert_eq!(a.fs.as_str(), "f2fs");
        assert!(a.fs.needs_mkfs() && !a.fs.read_only());
        assert_eq!(
            a.device,
            Device::Loop {
                size_bytes: 1 << 30
            }
        );
        assert_eq!(a.mkfs_options, vec!["-O", "extra_attr,compression"]);
        assert_eq!(a.mount_options, "compress_algorithm=lz4");
        assert_eq!(
            f.configs[1].device,
            Device::Block {
                path: "/dev/nvme1n1".into()
            }
        );
        let vm = f.configs[2].vm.as_ref().expect("f2fs runs in a guest too");
        assert_eq!(vm.kernel, PathBuf::from("/boot/vmlinuz-6.1"));

        for (body, key, says) in [
            ("fs = \"f2fs\"", "device", "needs a device"),
            (
                "fs = \"f2fs\"\ndevice = \"/dev/sdb\"",
                "destroy",
                "add destroy = true",
            ),
            (
                "fs = \"f2fs\"\ndevice = \"loop:1G\"\nsize = \"1G\"",
                "size",
                "loop:SIZE",
            ),
            (
                "fs = \"f2fs\"\ndevice = \"loop:1G\"\nsource = \"/t\"",
                "source",
                "erofs",
            ),
        ] {
            let e = err(&format!("[[config]]\nname = \"c\"\n{body}\n"));
            assert_eq!(e.key.as_deref(), Some(key), "{body}: {e}");
            assert!(e.to_string().contains(says), "{body}: {e}");
        }
        let e = err("[[config]]\nname = \"c\"\nfs = \"f2f\"\n");
        assert!(
            e.to_string()
                .contains("use one of btrfs, ext4, xfs, f2fs, erofs, tmpfs, dir"),
            "{e}"
        );
    }

    #[test]
    fn a_block_device_without_destroy_is_refused_with_the_fix() {
        let e = err("[[config]]\nname = \"n\"\nfs = \"xfs\"\ndevice = \"/dev/sdb\"\n");
        assert_eq!(e.config.as_deref(), Some("n"));
        assert_eq!(e.key.as_deref(), Some("destroy"));
        assert_eq!(e.line, Some(4));
        assert!(e.to_string().contains("add destroy = true"), "{e}");
        let e =
            err("[[config]]\nname = \"n\"\nfs = \"xfs\"\ndevice = \"/dev/sdb\"\ndestroy = false\n");
        assert_eq!(e.line, Some(5));
        let e = err(
            "[[config]]\nname = \"n\"\nfs = \"xfs\"\ndevice = \"/dev/sdb\"\ndestroy = \"yes\"\n",
        );
        assert!(e.to_string().contains("without quotes"), "{e}");
    }

    #[test]
    fn unknown_keys_are_named() {
        let e = err(
            "[[config]]\nname = \"n\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nmout = \"noatime\"\n",
        );
        assert_eq!(e.key.as_deref(), Some("mout"));
        assert_eq!(e.config.as_deref(), Some("n"));
        assert_eq!(e.line, Some(5));
        let s = e.to_string();
        assert!(
            s.starts_with("t.toml:5: config 'n': key 'mout': unknown key"),
            "{s}"
        );
        let e = err("scrach = \"/x\"\n[[config]]\nname = \"n\"\nfs = \"tmpfs\"\n");
        assert_eq!(e.key.as_deref(), Some("scrach"));
        assert_eq!(e.line, Some(1));
    }

    #[test]
    fn duplicate_names_give_both_lines() {
        let text = "[[config]]\nname = \"a\"\nfs = \"tmpfs\"\n\n[[config]]\nname = \"a\"\nfs = \"tmpfs\"\n";
        let e = err(text);
        assert_eq!(e.line, Some(5));
        assert_eq!(e.key.as_deref(), Some("name"));
        assert!(e.to_string().contains("line 1"), "{e}");
    }

    #[test]
    fn keys_that_do_not_fit_the_filesystem_are_refused() {
        let cases = [
            ("fs = \"tmpfs\"\ndevice = \"loop:1G\"", "device"),
            ("fs = \"tmpfs\"\nmkfs = \"-f\"", "mkfs"),
            ("fs = \"dir\"\npath = \"/x\"\nmount = \"noatime\"", "mount"),
            ("fs = \"dir\"\npath = \"/x\"\ndestroy = true", "destroy"),
            ("fs = \"dir\"", "path"),
            ("fs = \"dir\"\npath = \"rel/x\"", "path"),
            ("fs = \"ext4\"", "device"),
            ("fs = \"ext4\"\ndevice = \"loop:1G\"\nsize = \"1G\"", "size"),
            ("fs = \"ext4\"\ndevice = \"loop:lots\"", "device"),
            ("fs = \"ext4\"\ndevice = \"sdb\"", "device"),
            ("fs = \"zfs\"\ndevice = \"loop:1G\"", "fs"),
            (
                "fs = \"ext4\"\ndevice = \"loop:1G\"\nfresh = \"always\"",
                "fresh",
            ),
            (
                "fs = \"ext4\"\ndevice = \"loop:1G\"\nmount = \"a, b\"",
                "mount",
            ),
            (
                "fs = \"ext4\"\ndevice = \"loop:1G\"\nmount = \"a,,b\"",
                "mount",
            ),
            (
                "fs = \"ext4\"\ndevice = \"loop:1G\"\nmkfs = \"-O 'x\"",
                "mkfs",
            ),
            (
                "fs = \"ext4\"\ndevice = \"loop:1G\"\nbefore = \" \"",
                "before",
            ),
            (
                "fs = \"tmpfs\"\nsize = \"1G\"\nmount = \"size=2G\"",
                "mount",
            ),
            ("fs = 4", "fs"),
            ("fs = \"erofs\"", "source"),
            ("fs = \"erofs\"\nsource = \"rel\"", "source"),
            (
                "fs = \"erofs\"\nsource = \"/t\"\ndevice = \"loop:1G\"",
                "device",
            ),
            ("fs = \"erofs\"\nsource = \"/t\"\ndestroy = true", "destroy"),
            (
                "fs = \"ext4\"\ndevice = \"loop:1G\"\nsource = \"/t\"",
                "source",
            ),
        ];
        for (body, key) in cases {
            let e = err(&format!("[[config]]\nname = \"c\"\n{body}\n"));
            assert_eq!(e.key.as_deref(), Some(key), "{body}: {e}");
            assert_eq!(e.config.as_deref(), Some("c"), "{body}: {e}");
            assert!(e.line.is_some(), "{body}: {e}");
        }
    }

    #[test]
    fn file_level_mistakes() {
        let e = err("scratch = \"/x\"\n");
        assert_eq!(e.key.as_deref(), Some("config"));
        let e = err("scratch = \"rel\"\n[[config]]\nname = \"a\"\nfs = \"tmpfs\"\n");
        assert_eq!(e.key.as_deref(), Some("scratch"));
        let e = err("[[config]]\nfs = \"tmpfs\"\n");
        assert_eq!(e.key.as_deref(), Some("name"));
        assert_eq!(e.config.as_deref(), Some("#1"));
        let e = err("[[config]]\nname = \"a/b\"\nfs = \"tmpfs\"\n");
        assert_eq!(e.key.as_deref(), Some("name"));
        let e = err("[[config]\nname = 1\n");
        assert_eq!(e.line, Some(1));
        assert!(e.to_string().contains("not valid TOML"), "{e}");
    }

    #[test]
    fn the_shipped_examples_parse() {
        let btrfs = parse(
            include_str!("../../examples/btrfs-compression.toml"),
            "btrfs-compression.toml",
        )
        .unwrap();
        let opts: Vec<&str> = btrfs
            .configs
            .iter()
            .map(|c| c.mount_options.as_str())
            .collect();
        assert_eq!(
            opts,
            [
                "compress-force=lzo",
                "compress-force=zlib",
                "compress-force=zstd",
                ""
            ]
        );
        assert!(btrfs.configs.iter().all(|c| c.fs == FsKind::Btrfs
            && c.device
                == Device::Loop {
                    size_bytes: 4 << 30
                }));
        let ext4_xfs = parse(
            include_str!("../../examples/ext4-vs-xfs.toml"),
            "ext4-vs-xfs.toml",
        )
        .unwrap();
        let fs: Vec<FsKind> = ext4_xfs.configs.iter().map(|c| c.fs).collect();
        assert_eq!(fs, [FsKind::Ext4, FsKind::Xfs]);
    }

    #[test]
    fn a_kernel_makes_a_guest_configuration() {
        let f = parse(
            r#"[[config]]
name = "a"
fs = "ext4"
device = "loop:1G"
kernel = "/k/vmlinuz-6.1"
modules = "/k/modules"
cmdline = " mitigations=off "
memory = "1G"
cpus = 1

[[config]]
name = "b"
fs = "ext4"
device = "loop:1G"
kernel = "host"
"#,
            "t.toml",
        )
        .unwrap();
        assert_eq!(
            f.configs[0].vm,
            Some(VmConfig {
                kernel: PathBuf::from("/k/vmlinuz-6.1"),
                modules: Some(PathBuf::from("/k/modules")),
                cmdline: Some("mitigations=off".into()),
                memory_bytes: Some(1 << 30),
                cpus: Some(1),
                build: None,
            })
        );
        assert_eq!(f.configs[1].vm, None);
    }

    #[test]
    fn a_kernel_table_names_a_commit_to_build() {
        let base = "[[config]]\nname = \"p\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\n";
        let f = parse(
            &format!(
                "{base}kernel = {{ tree = \"/src/linux\", commit = \"v6.1\", config = \"g.config\" }}\n"
            ),
            "t.toml",
        )
        .unwrap();
        let vm = f.configs[0].vm.as_ref().unwrap();
        assert_eq!(vm.kernel, PathBuf::from("/src/linux@v6.1"));
        assert_eq!(
            vm.build,
            Some(KernelBuild {
                tree: "/src/linux".into(),
                commit: "v6.1".into(),
                config: Some("g.config".into()),
            })
        );
        assert_eq!(kernel_tag(&vm.kernel), "linux-v6.1");
        let f = parse(
            &format!("{base}kernel = {{ tree = \"linux\", commit = \"HEAD\" }}\n"),
            "t.toml",
        )
        .unwrap();
        assert_eq!(
            f.configs[0]
                .vm
                .as_ref()
                .unwrap()
                .build
                .as_ref()
                .unwrap()
                .config,
            None
        );
        let err = |k: &str| {
            parse(&format!("{base}kernel = {k}\n"), "t.toml")
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err("{ tree = \"/src/linux\" }"),
            "t.toml:5: config 'p': key 'kernel': the kernel table has no 'commit': write kernel = { tree = \"/src/linux\", commit = \"v6.17\" } (config is optional)"
        );
        assert_eq!(
            err("{ tree = \"/l\", commit = \"a\", branch = \"x\" }"),
            "t.toml:5: config 'p': key 'kernel': unknown key 'branch' in the kernel table; it knows only tree, commit, config: remove it or check its spelling"
        );
        assert_eq!(
            err("{ tree = \"/l\", commit = 3 }"),
            "t.toml:5: config 'p': key 'kernel': 'commit' in the kernel table must be a string, found integer: put it in double quotes"
        );
        assert!(err("{ tree = \"/l\", commit = \"a b\" }").contains("holds a space"));
        assert!(
            err("{ tree = \"\", commit = \"a\" }").contains("'tree' in the kernel table is empty")
        );
    }

    #[test]
    fn two_kernels_apply_to_every_configuration() {
        let f = parse(
            "[[config]]\nname = \"x\"\nfs = \"xfs\"\ndevice = \"loop:1G\"\n\n[[config]]\nname = \"t\"\nfs = \"tmpfs\"\n",
            "t.toml",
        )
        .unwrap();
        let ks = [
            PathBuf::from("/c/linux-image-6.1.0-47-amd64_6.1.170-3_amd64.deb"),
            PathBuf::from("/src/linux/arch/x86/boot/bzImage"),
            PathBuf::from("host"),
        ];
        let g = with_kernels(&f, &ks).unwrap();
        let names: Vec<&str> = g.configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "x-6.1.0-47-amd64",
                "x-linux",
                "x-host",
                "t-6.1.0-47-amd64",
                "t-linux",
                "t-host"
            ]
        );
        assert_eq!(g.configs[0].vm.as_ref().unwrap().kernel, ks[0]);
        assert_eq!(g.configs[2].vm, None);
        assert_eq!(
            kernel_tag(std::path::Path::new("/boot/vmlinuz-6.18.0+")),
            "6.18.0-"
        );
        assert_eq!(
            kernel_tag(std::path::Path::new(
                "/var/cache/fsdelta/kbuild/built/6cebe43c0908-f3f0059fb2610462/boot/bzImage"
            )),
            "6cebe43c0908-f3f0059fb2610462"
        );
        assert_eq!(kernel_tag(std::path::Path::new("/boot/bzImage")), "boot");
        let twice = with_kernels(&f, &[ks[0].clone(), ks[0].clone()]).unwrap();
        assert_eq!(twice.configs[1].name, "x-6.1.0-47-amd64-2");
        let d = parse(
            "[[config]]\nname = \"d\"\nfs = \"dir\"\npath = \"/x\"\n",
            "t",
        )
        .unwrap();
        assert!(
            with_kernels(&d, &ks[..1])
                .unwrap_err()
                .contains("dir target")
        );
        assert!(with_kernels(&d, &ks[2..]).is_ok());
        let own = with_kernels(&g, &ks[..1]).unwrap_err();
        assert!(own.contains("names its own kernel"), "{own}");
        assert_eq!(default_kernel_file().configs[0].fs, FsKind::Ext4);
    }

    #[test]
    fn guest_keys_are_checked() {
        let base = "[[config]]\nname = \"a\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\n";
        let e = err(&format!("{base}memory = \"2G\"\n"));
        assert_eq!(e.key.as_deref(), Some("memory"));
        assert!(e.message.contains("add kernel"), "{e}");
        let e = err(&format!("{base}kernel = \"/k\"\nmemory = \"100M\"\n"));
        assert!(e.message.contains("at least 256M"), "{e}");
        let e = err(&format!("{base}kernel = \"/k\"\ncpus = 0\n"));
        assert!(e.message.contains("from 1 to 64"), "{e}");
        let e = err(&format!("{base}kernel = \"/k\"\ncpus = \"2\"\n"));
        assert!(e.message.contains("whole number"), "{e}");
        let e = err("[[config]]\nname = \"d\"\nfs = \"dir\"\npath = \"/x\"\nkernel = \"/k\"\n");
        assert!(e.message.contains("cannot be given to a guest"), "{e}");
        let e = err(
            "[[config]]\nname = \"d\"\nfs = \"xfs\"\ndevice = \"/dev/sdz\"\ndestroy = true\nkernel = \"/k\"\n",
        );
        assert!(e.message.contains("not supported yet"), "{e}");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("1T"), Ok(1 << 40));
        assert!(parse_size("0").is_err());
        assert!(parse_size("G").is_err());
        assert!(parse_size("4Q").is_err());
        assert!(parse_size("99999999999999999999").is_err());
        assert!(parse_size("17000000T").is_err());
    }

    #[test]
    fn words_split_like_a_shell() {
        assert_eq!(
            split_words("-O ^has_journal  -L 'my label' -E \"a=1,b=2\" x\\ y").unwrap(),
            vec![
                "-O",
                "^has_journal",
                "-L",
                "my label",
                "-E",
                "a=1,b=2",
                "x y"
            ]
        );
        assert_eq!(split_words("").unwrap(), Vec::<String>::new());
        assert_eq!(split_words("''").unwrap(), vec![""]);
        assert!(split_words("\"open").is_err());
        assert!(split_words("a\\").is_err());
    }

    /// One bad input per message `parse` can give, with the whole message (file, line, config,
    /// key and the fix), recorded on the hand-walking parser before the serde rewrite.
    const CONFIG_MESSAGES: &[(&str, &str)] = &[
        (
            "[[config]\nname = 1\n",
            "t.toml:1: not valid TOML: unclosed array table, expected `]`; see examples/*.toml for the shape",
        ),
        (
            "x = 1\n[[config]]\nname = \"a\"\nfs = \"tmpfs\"\n",
            "t.toml:1: key 'x': unknown key; the top level knows only scratch, config: remove it or check its spelling",
        ),
        (
            "scratch = 1\n[[config]]\nname = \"a\"\nfs = \"tmpfs\"\n",
            "t.toml:1: key 'scratch': expected a string, found integer: put the value in double quotes",
        ),
        (
            "scratch = \"rel\"\n[[config]]\nname = \"a\"\nfs = \"tmpfs\"\n",
            "t.toml:1: key 'scratch': 'rel' is not an absolute path: write it from '/', e.g. \"/var/tmp/fsdelta\"",
        ),
        (
            "scratch = \"/x\"\n",
            "t.toml: key 'config': no [[config]] entry: add at least one, e.g. [[config]] name = \"ext4\" fs = \"ext4\" device = \"loop:4G\"",
        ),
        (
            "config = 1\n",
            "t.toml:1: key 'config': must be an array of tables: write each entry as a [[config]] section",
        ),
        (
            "config = []\n",
            "t.toml:1: key 'config': is empty: add at least one [[config]] section",
        ),
        (
            "config = [1]\n",
            "t.toml:1: config '#1': key 'config': entry is not a table: write each entry as a [[config]] section",
        ),
        (
            "[[config]]\nname = \"a\"\nfs = \"tmpfs\"\n\n[[config]]\nname = \"a\"\nfs = \"tmpfs\"\n",
            "t.toml:5: config 'a': key 'name': the name is already used by the configuration at line 1: names must be unique, rename one",
        ),
        (
            "[[config]]\nfs = \"tmpfs\"\n",
            "t.toml:1: config '#1': key 'name': missing: give every configuration a unique name, e.g. name = \"btrfs-zstd\"",
        ),
        (
            "[[config]]\nname = 1\nfs = \"tmpfs\"\n",
            "t.toml:2: config '#1': key 'name': expected a string, found integer: put the value in double quotes",
        ),
        (
            "[[config]]\nname = \".a\"\nfs = \"tmpfs\"\n",
            "t.toml:2: config '#1': key 'name': '.a' is not a usable name: use 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'",
        ),
        (
            "[[config]]\nname = \"n\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nmout = \"noatime\"\n",
            "t.toml:5: config 'n': key 'mout': unknown key; a [[config]] knows only name, fs, device, destroy, mkfs, mount, fresh, before, after, path, size, source, kernel, modules, cmdline, memory, cpus: remove it or check its spelling",
        ),
        (
            "[[config]]\nname = \"c\"\n",
            "t.toml:1: config 'c': key 'fs': missing: say which filesystem, one of btrfs, ext4, xfs, f2fs, erofs, tmpfs, dir",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = 4\n",
            "t.toml:3: config 'c': key 'fs': expected a string, found integer: put the value in double quotes",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"zfs\"\n",
            "t.toml:3: config 'c': key 'fs': unknown filesystem 'zfs': use one of btrfs, ext4, xfs, f2fs, erofs, tmpfs, dir",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"xfs\"\ndevice = \"/dev/sdb\"\ndestroy = \"yes\"\n",
            "t.toml:5: config 'c': key 'destroy': expected true or false, found string: write destroy = true (without quotes)",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nsource = \"/t\"\n",
            "t.toml:5: config 'c': key 'source': not allowed with fs = \"ext4\": source is the tree an fs = \"erofs\" image is built from",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"erofs\"\nsource = \"/t\"\ndevice = \"loop:1G\"\n",
            "t.toml:5: config 'c': key 'device': not allowed with fs = \"erofs\": fsdelta builds the image from source and attaches it to a loop device",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"erofs\"\nsource = \"/t\"\nsize = \"1G\"\n",
            "t.toml:5: config 'c': key 'size': not allowed with fs = \"erofs\": the image is as large as the tree it packs",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"erofs\"\nsource = \"/t\"\npath = \"/p\"\n",
            "t.toml:5: config 'c': key 'path': not allowed with fs = \"erofs\": give the tree to pack as source = \"/a/dir\"",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"erofs\"\nsource = \"/t\"\ndestroy = true\n",
            "t.toml:5: config 'c': key 'destroy': not allowed with fs = \"erofs\": an erofs image destroys nothing",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"erofs\"\n",
            "t.toml:1: config 'c': key 'source': missing: fs = \"erofs\" needs source = \"/a/dir\", the tree mkfs.erofs packs into the image",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"erofs\"\nsource = \"rel\"\n",
            "t.toml:4: config 'c': key 'source': 'rel' is not an absolute path: write it from '/'",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"erofs\"\nsource = 1\n",
            "t.toml:4: config 'c': key 'source': expected a string, found integer: put the value in double quotes",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\npath = \"/p\"\n",
            "t.toml:5: config 'c': key 'path': not allowed with fs = \"ext4\": path is for fs = \"dir\"; give a device = \"loop:SIZE\" or a block device",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nsize = \"1G\"\n",
            "t.toml:5: config 'c': key 'size': not allowed with fs = \"ext4\": size is for tmpfs; for a loop image write device = \"loop:SIZE\"",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\n",
            "t.toml:1: config 'c': key 'device': missing: fs = \"ext4\" needs a device: \"loop:4G\" for a sparse image fsdelta creates, or a block device path with destroy = true",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:lots\"\n",
            "t.toml:4: config 'c': key 'device': 'loop:lots': a size starts with a number; write e.g. \"loop:4G\"",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:0\"\n",
            "t.toml:4: config 'c': key 'device': 'loop:0': the size must be larger than zero; write e.g. \"loop:4G\"",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:4Q\"\n",
            "t.toml:4: config 'c': key 'device': 'loop:4Q': unknown unit 'Q' (K, M, G, T are powers of 1024); write e.g. \"loop:4G\"",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:99999999999999999999\"\n",
            "t.toml:4: config 'c': key 'device': 'loop:99999999999999999999': the number is too large; write e.g. \"loop:4G\"",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:17000000T\"\n",
            "t.toml:4: config 'c': key 'device': 'loop:17000000T': the size is too large; write e.g. \"loop:4G\"",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"xfs\"\ndevice = \"/dev/sdb\"\n",
            "t.toml:4: config 'c': key 'destroy': device '/dev/sdb' is a block device and mkfs destroys everything on it: add destroy = true to this configuration if that is what you want, or use device = \"loop:SIZE\"",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"xfs\"\ndevice = \"/dev/sdb\"\ndestroy = false\n",
            "t.toml:5: config 'c': key 'destroy': device '/dev/sdb' is a block device and mkfs destroys everything on it: add destroy = true to this configuration if that is what you want, or use device = \"loop:SIZE\"",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"sdb\"\n",
            "t.toml:4: config 'c': key 'device': 'sdb' is neither loop:SIZE nor an absolute block device path: write \"loop:4G\" or \"/dev/sdX\"",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = true\n",
            "t.toml:4: config 'c': key 'device': expected a string, found boolean: put the value in double quotes",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"tmpfs\"\ndevice = \"loop:1G\"\n",
            "t.toml:4: config 'c': key 'device': not allowed with fs = \"tmpfs\": a tmpfs has no device; use size = \"2G\" to limit it",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"tmpfs\"\nmkfs = \"-f\"\n",
            "t.toml:4: config 'c': key 'mkfs': not allowed with fs = \"tmpfs\": a tmpfs is not made by mkfs",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"tmpfs\"\ndestroy = true\n",
            "t.toml:4: config 'c': key 'destroy': not allowed with fs = \"tmpfs\": a tmpfs destroys nothing",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"tmpfs\"\npath = \"/p\"\n",
            "t.toml:4: config 'c': key 'path': not allowed with fs = \"tmpfs\": path is for fs = \"dir\"",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"tmpfs\"\nsize = \"2X\"\n",
            "t.toml:4: config 'c': key 'size': '2X': unknown unit 'X' (K, M, G, T are powers of 1024); write e.g. \"2G\"",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"dir\"\ndevice = \"loop:1G\"\n",
            "t.toml:4: config 'c': key 'device': not allowed with fs = \"dir\": a dir target uses an existing directory: give path = \"/some/dir\"",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"dir\"\npath = \"/x\"\nmkfs = \"-f\"\n",
            "t.toml:5: config 'c': key 'mkfs': not allowed with fs = \"dir\": a dir target is not formatted",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"dir\"\npath = \"/x\"\nmount = \"noatime\"\n",
            "t.toml:5: config 'c': key 'mount': not allowed with fs = \"dir\": a dir target is not mounted by fsdelta",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"dir\"\npath = \"/x\"\ndestroy = true\n",
            "t.toml:5: config 'c': key 'destroy': not allowed with fs = \"dir\": fsdelta never destroys a dir target",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"dir\"\npath = \"/x\"\nsize = \"1G\"\n",
            "t.toml:5: config 'c': key 'size': not allowed with fs = \"dir\": size is for tmpfs",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"dir\"\n",
            "t.toml:1: config 'c': key 'path': missing: fs = \"dir\" needs path = \"/an/existing/empty/directory\"",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"dir\"\npath = \"rel/x\"\n",
            "t.toml:4: config 'c': key 'path': 'rel/x' is not an absolute path: write it from '/'",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nmkfs = \"-O 'x\"\n",
            "t.toml:5: config 'c': key 'mkfs': unterminated ' quote: close it",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nmkfs = \"-O \\\"x\"\n",
            "t.toml:5: config 'c': key 'mkfs': unterminated \" quote: close it",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nmkfs = \"-O x\\\\\"\n",
            "t.toml:5: config 'c': key 'mkfs': ends with a lone backslash: remove it",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nmkfs = \"-E offset=4096\"\n",
            "t.toml:5: config 'c': key 'mkfs': -E offset=4096 makes mkfs.ext4 write the filesystem that many bytes into the device, where mount does not look for it (the kernel then finds no ext4 and refuses the mount): remove offset=4096 from mkfs =",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nmkfs = 1\n",
            "t.toml:5: config 'c': key 'mkfs': expected a string, found integer: put the value in double quotes",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nmount = \"a, b\"\n",
            "t.toml:5: config 'c': key 'mount': 'a, b' contains white space: separate mount options with commas, e.g. \"noatime,compress=zstd\"",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nmount = \"a,,b\"\n",
            "t.toml:5: config 'c': key 'mount': 'a,,b' has an empty option: remove the doubled or trailing comma",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"tmpfs\"\nsize = \"1G\"\nmount = \"size=2G\"\n",
            "t.toml:5: config 'c': key 'mount': size= is given twice (here and in key 'size'): keep one",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nfresh = \"always\"\n",
            "t.toml:5: config 'c': key 'fresh': 'always' is not known: use \"sample\" (a new filesystem for every sample) or \"run\" (once per run)",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nbefore = \" \"\n",
            "t.toml:5: config 'c': key 'before': is empty: remove the key or give a shell command",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nafter = [\"x\"]\n",
            "t.toml:5: config 'c': key 'after': expected a string, found array: put the value in double quotes",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nkernel = \" \"\n",
            "t.toml:5: config 'c': key 'kernel': is empty: give a kernel path, or \"host\" to run here (was ' ')",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nmemory = \"2G\"\n",
            "t.toml:5: config 'c': key 'memory': only for a configuration that boots a kernel: add kernel = \"PATH\" or remove this key",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\ncpus = 2\n",
            "t.toml:5: config 'c': key 'cpus': only for a configuration that boots a kernel: add kernel = \"PATH\" or remove this key",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"dir\"\npath = \"/x\"\nkernel = \"/k\"\n",
            "t.toml:5: config 'c': key 'kernel': a dir target is a directory of the host and cannot be given to a guest: use fs = \"ext4\" (or btrfs, xfs, f2fs) with device = \"loop:SIZE\", or tmpfs",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"xfs\"\ndevice = \"/dev/sdz\"\ndestroy = true\nkernel = \"/k\"\n",
            "t.toml:6: config 'c': key 'kernel': passing the block device /dev/sdz through to a guest is not supported yet: use device = \"loop:SIZE\"",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nkernel = \"/k\"\ncmdline = \"\"\"\na\nb\"\"\"\n",
            "t.toml:6: config 'c': key 'cmdline': must be one line",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nkernel = \"/k\"\nmemory = \"lots\"\n",
            "t.toml:6: config 'c': key 'memory': 'lots': a size starts with a number; write e.g. \"2G\"",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nkernel = \"/k\"\nmemory = \"100M\"\n",
            "t.toml:6: config 'c': key 'memory': '100M' is too little for a guest that holds fsdelta in its initramfs: give at least 256M (2G is the default)",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nkernel = \"/k\"\ncpus = 0\n",
            "t.toml:6: config 'c': key 'cpus': 0 is not a vCPU count from 1 to 64",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nkernel = \"/k\"\ncpus = 65\n",
            "t.toml:6: config 'c': key 'cpus': 65 is not a vCPU count from 1 to 64",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nkernel = \"/k\"\ncpus = 0x10\n",
            "(parsed)",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nkernel = \"/k\"\ncpus = \"2\"\n",
            "t.toml:6: config 'c': key 'cpus': expected a whole number, found string: write e.g. cpus = 2",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nkernel = \"/k\"\nmodules = 1\n",
            "t.toml:6: config 'c': key 'modules': expected a string, found integer: put the value in double quotes",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nkernel = 1\n",
            "t.toml:5: config 'c': key 'kernel': expected a string or a table, found integer: give a kernel path (an image, a .deb, a build tree, or TREE@COMMIT), \"host\" to run here, or a commit of a kernel git tree as { tree = \"/src/linux\", commit = \"v6.17\" }",
        ),
        // The hand-walking parser said "t.toml:6: config 'c': key 'cpus': 99999999999999999999
        // is not a vCPU count from 1 to 64": a number beyond 64 bits does not read into a TOML
        // value, so the line stays and the words are the reader's.
        (
            "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nkernel = \"/k\"\ncpus = 99999999999999999999\n",
            "t.toml:6: invalid type: integer `99999999999999999999` as i128, expected any valid TOML value",
        ),
        (
            "[[config]]\nname = \"c\"\nfs = 1979-05-27\n",
            "t.toml:3: config 'c': key 'fs': expected a string, found datetime: put the value in double quotes",
        ),
    ];

    #[test]
    fn every_message_keeps_its_text() {
        let mut bad = Vec::new();
        for (input, want) in CONFIG_MESSAGES {
            let got = match parse(input, "t.toml") {
                Ok(_) => "(parsed)".to_string(),
                Err(e) => e.to_string(),
            };
            if got != *want {
                bad.push(format!("        ({input:?}, {got:?}),"));
            }
        }
        assert!(bad.is_empty(), "messages differ:\n{}", bad.join("\n"));
    }
}
