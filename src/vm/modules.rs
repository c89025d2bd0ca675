//! Which kernel modules a guest needs and in which order to load them: the filesystem's driver
//! and the virtio disk's, with their dependencies read from `modules.dep` when the tree has one
//! (an installed `/lib/modules/RELEASE`) or else from each module's `.modinfo` section
//! (`depends=`, `softdep=`), as a Debian package or a build tree has no `modules.dep`.
//!
//! Why: the guest has no modprobe database and no udev; loading exactly these modules, in
//! dependency order, from the initramfs is what makes a stock distribution kernel usable. A
//! driver that is neither built in (`modules.builtin`) nor present as a module is an error that
//! names the module and its config option, before anything boots.
//!
//! Must never load or modify anything on the host: it only reads files.

use super::{VmError, elf};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A module to put into the initramfs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleFile {
    /// Its name (`-` written as `_`).
    pub name: String,
    /// The file (`.ko`, `.ko.xz`, `.ko.zst` or `.ko.gz`).
    pub path: PathBuf,
}

impl ModuleFile {
    /// The uncompressed module, ready for insmod.
    pub fn read(&self) -> Result<Vec<u8>, VmError> {
        read_module(&self.path)
    }
}

/// What a guest must have for a configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Need {
    /// Module name.
    pub module: String,
    /// The config option (without `CONFIG_`).
    pub option: String,
    /// Why (for the error message).
    pub why: String,
}

/// The drivers a guest with this filesystem (and, when `disk`, a virtio disk) needs.
pub fn needs(fs: &str, disk: bool) -> Vec<Need> {
    let mut v = Vec::new();
    if disk {
        v.push(Need {
            module: "virtio_pci".into(),
            option: "VIRTIO_PCI".into(),
            why: "the virtio disk's PCI transport".into(),
        });
        v.push(Need {
            module: "virtio_blk".into(),
            option: "VIRTIO_BLK".into(),
            why: "the disk under test is a virtio block device".into(),
        });
    }
    let option = match fs {
        "tmpfs" => return v,
        "ext4" => "EXT4_FS".to_string(),
        "btrfs" => "BTRFS_FS".to_string(),
        "xfs" => "XFS_FS".to_string(),
        "f2fs" => "F2FS_FS".to_string(),
        other => format!("{}_FS", other.to_uppercase()),
    };
    v.push(Need {
        module: fs.to_string(),
        option,
        why: format!("fs = \"{fs}\""),
    });
    // The checksum ext4, btrfs and xfs metadata use; a soft dependency the kernel would
    // request through modprobe, which the guest does not have.
    if matches!(fs, "ext4" | "btrfs" | "xfs" | "f2fs") {
        v.push(Need {
            module: "crc32c_generic".into(),
            option: "CRYPTO_CRC32C".into(),
            why: format!("{fs} metadata checksums (crc32c)"),
        });
    }
    v
}

/// The drivers the guest needs to mount the host's root directory read-only over virtio-9p
/// (the host's userland in the guest: commands, hooks, perf, the files tests read).
pub fn host_root_needs() -> Vec<Need> {
    vec![
        Need {
            module: "virtio_pci".into(),
            option: "VIRTIO_PCI".into(),
            why: "the host's root directory is shared over virtio (PCI transport)".into(),
        },
        Need {
            module: "9pnet_virtio".into(),
            option: "NET_9P_VIRTIO".into(),
            why: "the host's root directory is shared over virtio-9p".into(),
        },
        Need {
            module: "9p".into(),
            option: "9P_FS".into(),
            why: "the host's root directory is mounted with 9p in the guest".into(),
        },
    ]
}

/// Wanted, not needed: overlayfs keeps the host's `/tmp` and `/var/tmp` visible and writable in
/// the guest (without it they are empty tmpfs there).
pub fn host_root_wants() -> Vec<Need> {
    vec![Need {
        module: "overlay".into(),
        option: "OVERLAY_FS".into(),
        why: "the host's /tmp is overlaid writable in the guest".into(),
    }]
}

fn norm(name: &str) -> String {
    name.replace('-', "_")
}

/// The module name of a file name (`virtio-blk.ko.xz` -> `virtio_blk`).
fn module_name(file: &str) -> Option<String> {
    let stem = [".ko", ".ko.xz", ".ko.zst", ".ko.gz"]
        .iter()
        .find_map(|ext| file.strip_suffix(ext))?;
    Some(norm(stem))
}

fn read_module(path: &Path) -> Result<Vec<u8>, VmError> {
    let raw = fs::read(path).map_err(|e| VmError::io("read", path, e))?;
    let name = path.to_string_lossy();
    let cmd = |program: &str, package: &str| -> Result<Vec<u8>, VmError> {
        let p = super::find_program(program).ok_or_else(|| VmError::Missing {
            program: program.into(),
            package: package.into(),
        })?;
        let out = std::process::Command::new(p)
            .arg("-dc")
            .arg(path)
            .output()
            .map_err(|e| VmError::io("decompress", path, e))?;
        if !out.status.success() {
            return Err(VmError::Unsupported(format!(
                "cannot decompress {}: {}",
                path.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(out.stdout)
    };
    if name.ends_with(".xz") {
        cmd("xz", "xz-utils")
    } else if name.ends_with(".zst") {
        cmd("zstd", "zstd")
    } else if name.ends_with(".gz") {
        let mut v = Vec::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_end(&mut v)
            .map_err(|e| VmError::io("decompress", path, e))?;
        Ok(v)
    } else {
        Ok(raw)
    }
}

/// The modules of one kernel.
#[derive(Debug)]
pub struct ModuleTree {
    root: PathBuf,
    files: BTreeMap<String, PathBuf>,
    /// From modules.dep, when the tree has it.
    dep: Option<BTreeMap<String, Vec<String>>>,
    /// From modules.builtin, when the tree has it.
    builtin: Option<BTreeSet<String>>,
}

impl ModuleTree {
    /// Index the modules under `root` (a `lib/modules/RELEASE` or a build tree).
    pub fn open(root: &Path) -> Result<ModuleTree, VmError> {
        let mut files = BTreeMap::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let Ok(rd) = fs::read_dir(&dir) else { continue };
            for e in rd.filter_map(Result::ok) {
                let Ok(ft) = e.file_type() else { continue };
                let name = e.file_name().to_string_lossy().into_owned();
                if ft.is_dir() {
                    // Skip VCS metadata; symlinks (build, source) are not followed.
                    if !name.starts_with('.') {
                        stack.push(e.path());
                    }
                } else if ft.is_file()
                    && let Some(m) = module_name(&name)
                {
                    files.entry(m).or_insert_with(|| e.path());
                }
            }
        }
        let dep = fs::read_to_string(root.join("modules.dep"))
            .ok()
            .map(|text| {
                let mut map = BTreeMap::new();
                for line in text.lines() {
                    let Some((file, deps)) = line.split_once(':') else {
                        continue;
                    };
                    let name_of = |f: &str| {
                        Path::new(f)
                            .file_name()
                            .and_then(|n| module_name(&n.to_string_lossy()))
                    };
                    if let Some(n) = name_of(file) {
                        map.insert(n, deps.split_whitespace().filter_map(name_of).collect());
                    }
                }
                map
            });
        let builtin = fs::read_to_string(root.join("modules.builtin"))
            .ok()
            .map(|text| {
                text.lines()
                    .filter_map(|l| Path::new(l.trim()).file_name())
                    .filter_map(|n| module_name(&n.to_string_lossy()))
                    .collect()
            });
        Ok(ModuleTree {
            root: root.to_path_buf(),
            files,
            dep,
            builtin,
        })
    }

    /// Where the modules were looked for.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the tree says `name` is built into the kernel.
    pub fn is_builtin(&self, name: &str) -> bool {
        self.builtin
            .as_ref()
            .is_some_and(|b| b.contains(&norm(name)))
    }

    /// Resolve a soft dependency or alias-like name (`crypto-crc32c`, `sha256`) to a module
    /// file, if any: the name itself, without `crypto-`, or its `_generic` implementation.
    fn find_soft(&self, name: &str) -> Option<String> {
        let n = norm(name);
        let bare = n.strip_prefix("crypto_").unwrap_or(&n).to_string();
        [n.clone(), bare.clone(), format!("{bare}_generic")]
            .into_iter()
            .find(|c| self.files.contains_key(c))
    }

    /// The hard and soft dependencies of a module.
    fn deps_of(&self, name: &str) -> Result<Vec<String>, VmError> {
        let mut out = Vec::new();
        if let Some(dep) = &self.dep
            && let Some(d) = dep.get(name)
        {
            out.extend(d.iter().cloned());
        }
        let path = &self.files[name];
        let data = read_module(path)?;
        if let Some(info) = elf::section(&data, ".modinfo") {
            for kv in info.split(|&b| b == 0) {
                let kv = String::from_utf8_lossy(kv);
                if let Some(d) = kv.strip_prefix("depends=") {
                    out.extend(d.split(',').filter(|s| !s.is_empty()).map(norm));
                } else if let Some(s) = kv.strip_prefix("softdep=") {
                    out.extend(
                        s.split_whitespace()
                            .filter(|w| !w.ends_with(':'))
                            .filter_map(|w| self.find_soft(w)),
                    );
                }
            }
        }
        out.dedup();
        Ok(out)
    }

    /// The modules to load for `needs`, dependencies first; built-in drivers need nothing.
    /// `release` names the kernel in errors.
    pub fn resolve(&self, needs: &[Need], release: &str) -> Result<Vec<ModuleFile>, VmError> {
        let mut order: Vec<String> = Vec::new();
        let mut seen = BTreeSet::new();
        for need in needs {
            let name = norm(&need.module);
            if self.is_builtin(&name) {
                continue;
            }
            if !self.files.contains_key(&name) {
                // crc32c may be provided by another implementation built in or as a module.
                if name == "crc32c_generic"
                    && (self.files.contains_key("crc32c_intel")
                        || self.is_builtin("crc32c_intel")
                        || self.builtin.is_none())
                {
                    if self.files.contains_key("crc32c_intel") {
                        self.visit("crc32c_intel", &mut seen, &mut order, 0)?;
                    }
                    continue;
                }
                // Without modules.builtin we cannot tell: the guest checks for the driver.
                if self.builtin.is_none() {
                    continue;
                }
                return Err(VmError::MissingModule {
                    release: release.to_string(),
                    module: name,
                    option: need.option.clone(),
                    searched: self.root.display().to_string(),
                    why: need.why.clone(),
                });
            }
            self.visit(&name, &mut seen, &mut order, 0)?;
        }
        Ok(order
            .into_iter()
            .map(|name| ModuleFile {
                path: self.files[&name].clone(),
                name,
            })
            .collect())
    }

    fn visit(
        &self,
        name: &str,
        seen: &mut BTreeSet<String>,
        order: &mut Vec<String>,
        depth: usize,
    ) -> Result<(), VmError> {
        if depth > 64 || !seen.insert(name.to_string()) {
            return Ok(());
        }
        for d in self.deps_of(name)? {
            if self.files.contains_key(&d) {
                self.visit(&d, seen, order, depth + 1)?;
            }
        }
        order.push(name.to_string());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake module: an ELF header with one `.modinfo` section (and the section-name table).
    fn fake_ko(modinfo: &str) -> Vec<u8> {
        let shstr = b"\0.modinfo\0.shstrtab\0";
        let info = modinfo.replace(';', "\0").into_bytes();
        let mut d = vec![0u8; 64];
        d[..4].copy_from_slice(b"\x7fELF");
        d[4] = 2;
        d[5] = 1;
        let info_off = d.len();
        d.extend_from_slice(&info);
        let str_off = d.len();
        d.extend_from_slice(shstr);
        let shoff = d.len();
        let sh = |name: u32, off: usize, size: usize| {
            let mut h = vec![0u8; 64];
            h[..4].copy_from_slice(&name.to_le_bytes());
            h[0x18..0x20].copy_from_slice(&(off as u64).to_le_bytes());
            h[0x20..0x28].copy_from_slice(&(size as u64).to_le_bytes());
            h
        };
        d.extend(sh(0, 0, 0));
        d.extend(sh(1, info_off, info.len()));
        d.extend(sh(10, str_off, shstr.len()));
        d[0x28..0x30].copy_from_slice(&(shoff as u64).to_le_bytes());
        d[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        d[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes());
        d[0x3e..0x40].copy_from_slice(&2u16.to_le_bytes());
        d
    }

    #[test]
    fn dependencies_come_first_and_soft_ones_resolve() {
        let dir = tempfile::tempdir().unwrap();
        let k = dir.path().join("kernel/fs");
        fs::create_dir_all(&k).unwrap();
        fs::write(
            k.join("ext4.ko"),
            fake_ko("softdep=pre: crypto-crc32c;depends=jbd2,mbcache;name=ext4;"),
        )
        .unwrap();
        fs::write(k.join("jbd2.ko"), fake_ko("depends=;name=jbd2;")).unwrap();
        fs::write(k.join("mbcache.ko"), fake_ko("depends=;name=mbcache;")).unwrap();
        fs::write(k.join("crc32c_generic.ko"), fake_ko("depends=;")).unwrap();
        fs::write(k.join("virtio_blk.ko"), fake_ko("depends=virtio;")).unwrap();
        fs::write(k.join("virtio.ko"), fake_ko("depends=;")).unwrap();
        fs::write(
            dir.path().join("modules.builtin"),
            "kernel/drivers/virtio/virtio_pci.ko\n",
        )
        .unwrap();
        let tree = ModuleTree::open(dir.path()).unwrap();
        let got: Vec<String> = tree
            .resolve(&needs("ext4", true), "6.1-test")
            .unwrap()
            .into_iter()
            .map(|m| m.name)
            .collect();
        assert_eq!(
            got,
            [
                "virtio",
                "virtio_blk",
                "crc32c_generic",
                "jbd2",
                "mbcache",
                "ext4"
            ]
        );
        let e = tree
            .resolve(&needs("xfs", true), "6.1-test")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no xfs driver (CONFIG_XFS_FS)"), "{e}");
        assert!(e.contains("6.1-test"), "{e}");
        assert!(needs("tmpfs", false).is_empty());
    }
}
