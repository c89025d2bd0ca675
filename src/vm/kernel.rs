//! What to boot: a kernel path as the user has it, resolved into the file QEMU's `-kernel` gets,
//! the kernel release, and where its modules are.
//!
//! Accepted: a bzImage/vmlinuz (the x86 boot header `HdrS`), an uncompressed ELF `vmlinux`, a
//! kernel build tree (or its `arch/x86/boot/bzImage`; modules are the tree's `.ko` files), and a
//! Debian `linux-image-*.deb` (unpacked with `dpkg-deb -x` into the cache). From a bzImage the
//! ELF vmlinux is extracted (its compressed payload, located by the boot header) and cached:
//! booting it through its PVH entry skips the guest's own decompression (3.4 s under TCG).
//!
//! Must never modify what the user gave: everything derived goes to the cache directory,
//! written atomically.

use super::{VmError, elf, hash_key, write_atomically};
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What the user's path was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelKind {
    /// A compressed x86 boot image (bzImage, vmlinuz).
    BzImage,
    /// An uncompressed ELF vmlinux.
    Vmlinux,
    /// A kernel build tree.
    BuildTree,
    /// A Debian `linux-image-*.deb`.
    Deb,
}

impl KernelKind {
    /// A short name for listings and facts.
    pub fn as_str(self) -> &'static str {
        match self {
            KernelKind::BzImage => "bzImage",
            KernelKind::Vmlinux => "vmlinux",
            KernelKind::BuildTree => "build tree",
            KernelKind::Deb => "deb",
        }
    }
}

/// A resolved kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// The path as given.
    pub given: PathBuf,
    /// What it was.
    pub kind: KernelKind,
    /// The file QEMU boots (`-kernel`).
    pub boot: PathBuf,
    /// Whether `boot` is an ELF with the PVH entry (else a bzImage).
    pub pvh: bool,
    /// The kernel release (`6.1.0-47-amd64`).
    pub release: String,
    /// Where its modules are (`lib/modules/RELEASE`, a build tree), if anywhere.
    pub modules: Option<PathBuf>,
}

fn kernel_err(path: &Path, message: impl Into<String>) -> VmError {
    VmError::Kernel {
        path: path.display().to_string(),
        message: message.into(),
    }
}

const NOT_A_KERNEL: &str = "is not a kernel: neither an x86 bzImage/vmlinuz (no 'HdrS' boot header at offset 0x202), an ELF vmlinux, a kernel build tree (arch/x86/boot/bzImage) nor a Debian linux-image-*.deb; give one of those";

/// Resolve `given` (with the configuration's `modules`, when it names them); derived files go
/// under `cache`.
pub fn resolve(given: &Path, modules: Option<&Path>, cache: &Path) -> Result<Kernel, VmError> {
    let meta = fs::metadata(given).map_err(|e| {
        kernel_err(
            given,
            format!("{e}; give the path of a bzImage, vmlinux, build tree or linux-image .deb"),
        )
    })?;
    let mut k = if meta.is_dir() {
        let bz = given.join("arch/x86/boot/bzImage");
        if !bz.is_file() {
            return Err(kernel_err(
                given,
                "is a directory but not a built kernel tree (no arch/x86/boot/bzImage): run make, or give the kernel file itself",
            ));
        }
        let mut k = from_bzimage(given, &bz, cache)?;
        k.kind = KernelKind::BuildTree;
        k.modules = Some(given.to_path_buf());
        k
    } else {
        let mut head = vec![0u8; 0x210];
        let n = fs::File::open(given)
            .and_then(|mut f| f.read(&mut head))
            .map_err(|e| VmError::io("read", given, e))?;
        head.truncate(n);
        if head.starts_with(b"!<arch>\n") {
            from_deb(given, cache)?
        } else if elf::is_elf64(&head) {
            from_vmlinux(given)?
        } else if head.len() >= 0x206 && &head[0x202..0x206] == b"HdrS" {
            let mut k = from_bzimage(given, given, cache)?;
            // A build tree's arch/x86/boot/bzImage: its modules are in the tree.
            if k.modules.is_none()
                && let Some(tree) = given.parent().and_then(Path::parent).and_then(Path::parent)
                && given.ends_with("arch/x86/boot/bzImage")
            {
                k.kind = KernelKind::BuildTree;
                k.modules = Some(tree.to_path_buf());
            }
            k
        } else {
            return Err(kernel_err(given, NOT_A_KERNEL));
        }
    };
    if let Some(m) = modules {
        if !m.is_dir() {
            return Err(kernel_err(
                given,
                format!(
                    "modules = \"{}\" is not a directory: give the kernel's lib/modules/RELEASE (or its build tree)",
                    m.display()
                ),
            ));
        }
        k.modules = Some(m.to_path_buf());
    }
    k.given = given.to_path_buf();
    Ok(k)
}

/// The release of a kernel from its "Linux version RELEASE " banner.
fn release_from_banner(d: &[u8]) -> Option<String> {
    let re = regex::bytes::Regex::new(r"Linux version (\S+) \(").ok()?;
    let m = re.captures(d)?;
    Some(String::from_utf8_lossy(&m[1]).into_owned())
}

fn installed_modules(release: &str) -> Option<PathBuf> {
    let p = PathBuf::from("/lib/modules").join(release);
    p.join("kernel").is_dir().then_some(p)
}

/// The modules of a kernel file where its package put them: `lib/modules/RELEASE` (or
/// `usr/lib/modules/RELEASE`) beside the `boot/` directory holding it (an unpacked package, an
/// installed system), else the host's `/lib/modules/RELEASE`.
fn modules_beside(kernel_file: &Path, release: &str) -> Option<PathBuf> {
    let root = kernel_file.parent().and_then(Path::parent);
    root.into_iter()
        .flat_map(|r| ["lib/modules", "usr/lib/modules"].map(|m| r.join(m).join(release)))
        .find(|p| p.join("kernel").is_dir() || p.join("modules.order").is_file())
        .or_else(|| installed_modules(release))
}

/// The kernel's build configuration, where its package or build tree keep it: `config-RELEASE`
/// beside the kernel file (`boot/`), `.config` of a build tree, or `/boot/config-RELEASE`.
/// `None` when there is none.
pub fn config_text(k: &Kernel) -> Option<String> {
    let mut candidates = Vec::new();
    if let Some(dir) = k.given.parent() {
        candidates.push(dir.join(format!("config-{}", k.release)));
        candidates.push(dir.join(".config"));
        // arch/x86/boot/bzImage of a build tree.
        if let Some(tree) = dir.parent().and_then(Path::parent).and_then(Path::parent) {
            candidates.push(tree.join(".config"));
        }
    }
    if k.given.is_dir() {
        candidates.push(k.given.join(".config"));
    }
    if let Some(dir) = k.boot.parent() {
        candidates.push(dir.join(format!("config-{}", k.release)));
    }
    candidates.push(PathBuf::from(format!("/boot/config-{}", k.release)));
    candidates
        .into_iter()
        .find_map(|p| fs::read_to_string(p).ok())
}

/// How a kernel configuration builds `option` (without `CONFIG_`): `Some('y')`, `Some('m')`,
/// or `None` when it is not set.
pub fn config_value(config: &str, option: &str) -> Option<char> {
    let prefix = format!("CONFIG_{option}=");
    config
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.chars().next())
        .filter(|c| matches!(c, 'y' | 'm'))
}

fn from_vmlinux(path: &Path) -> Result<Kernel, VmError> {
    let d = fs::read(path).map_err(|e| VmError::io("read", path, e))?;
    let release = release_from_banner(&d).ok_or_else(|| {
        kernel_err(
            path,
            "is an ELF file without a 'Linux version' banner: it is not a vmlinux",
        )
    })?;
    if !elf::has_pvh_note(&d) {
        return Err(kernel_err(
            path,
            "is a vmlinux without the PVH entry note (CONFIG_PVH=n), which QEMU cannot boot directly: give its bzImage instead",
        ));
    }
    // A vmlinux at the top of a build tree has its modules in the tree.
    let tree = path
        .parent()
        .filter(|t| t.join("modules.builtin").is_file())
        .map(Path::to_path_buf);
    Ok(Kernel {
        given: path.to_path_buf(),
        kind: KernelKind::Vmlinux,
        boot: path.to_path_buf(),
        pvh: true,
        modules: tree.or_else(|| modules_beside(path, &release)),
        release,
    })
}

/// The release string a bzImage's header points at (`kernel_version`, boot protocol >= 2.00).
fn bzimage_release(d: &[u8]) -> Option<String> {
    let off = u16::from_le_bytes(d.get(0x20e..0x210)?.try_into().ok()?) as usize + 0x200;
    let s = d.get(off..off + 256)?;
    let end = s.iter().position(|&b| b == 0 || b == b' ')?;
    let r = String::from_utf8_lossy(&s[..end]).into_owned();
    (!r.is_empty()).then_some(r)
}

fn from_bzimage(given: &Path, bz: &Path, cache: &Path) -> Result<Kernel, VmError> {
    let d = fs::read(bz).map_err(|e| VmError::io("read", bz, e))?;
    if d.len() < 0x250 || &d[0x202..0x206] != b"HdrS" {
        return Err(kernel_err(bz, NOT_A_KERNEL));
    }
    let release = bzimage_release(&d)
        .ok_or_else(|| kernel_err(bz, "has a boot header but no kernel version string"))?;
    let meta = fs::metadata(bz).map_err(|e| VmError::io("stat", bz, e))?;
    let key = hash_key(&[
        bz.as_os_str().as_encoded_bytes(),
        &meta.len().to_le_bytes(),
        &meta.mtime().to_le_bytes(),
    ]);
    let vmlinux = cache.join(format!("vmlinux/{release}-{key}"));
    let (boot, pvh) = if vmlinux.is_file() {
        (vmlinux, true)
    } else {
        match extract_vmlinux(&d) {
            Some(elf) if elf::has_pvh_note(&elf) => {
                write_atomically(&vmlinux, &elf)?;
                (vmlinux, true)
            }
            // No PVH entry or a payload we cannot decompress: boot the bzImage (slower under
            // TCG, the same kernel).
            _ => (bz.to_path_buf(), false),
        }
    };
    Ok(Kernel {
        given: given.to_path_buf(),
        kind: KernelKind::BzImage,
        boot,
        pvh,
        modules: modules_beside(given, &release),
        release,
    })
}

/// The ELF vmlinux inside a bzImage: the payload the boot header locates (`payload_offset` and
/// `payload_length`, boot protocol >= 2.08), decompressed by its magic number.
pub fn extract_vmlinux(d: &[u8]) -> Option<Vec<u8>> {
    let version = u16::from_le_bytes(d.get(0x206..0x208)?.try_into().ok()?);
    if version < 0x208 {
        return None;
    }
    let setup_sects = match *d.get(0x1f1)? {
        0 => 4,
        n => usize::from(n),
    };
    let po = u32::from_le_bytes(d.get(0x248..0x24c)?.try_into().ok()?) as usize;
    let pl = u32::from_le_bytes(d.get(0x24c..0x250)?.try_into().ok()?) as usize;
    let start = (setup_sects + 1) * 512 + po;
    let payload = d.get(start..start.checked_add(pl)?)?;
    let out = if payload.starts_with(&[0x1f, 0x8b]) {
        let mut v = Vec::new();
        flate2::read::GzDecoder::new(payload)
            .read_to_end(&mut v)
            .ok()?;
        v
    } else if payload.starts_with(b"\xfd7zXZ\0") {
        decompress_with("xz", &["-dc", "--single-stream"], payload)?
    } else if payload.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        decompress_with("zstd", &["-dcq"], payload)?
    } else if payload.starts_with(b"BZh") {
        decompress_with("bzip2", &["-dc"], payload)?
    } else if payload.starts_with(&[0x5d, 0x00]) {
        decompress_with("xz", &["-dc", "--format=lzma"], payload)?
    } else if payload.starts_with(&[0x02, 0x21, 0x4c, 0x18]) {
        decompress_with("lz4", &["-dcq"], payload)?
    } else {
        return None;
    };
    elf::is_elf64(&out).then_some(out)
}

/// Pipe `input` through a decompressor; `None` when it is missing or fails (the caller falls
/// back to booting the bzImage).
fn decompress_with(program: &str, args: &[&str], input: &[u8]) -> Option<Vec<u8>> {
    let path = super::find_program(program)?;
    let mut child = Command::new(path)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let mut out = Vec::new();
    child.stdout.take()?.read_to_end(&mut out).ok()?;
    let _ = feeder.join();
    // xz --single-stream and zstd stop at the end of the stream; trailing bytes are the
    // kernel's own padding, so the exit status may complain: the ELF check decides.
    let _ = child.wait();
    Some(out)
}

fn from_deb(deb: &Path, cache: &Path) -> Result<Kernel, VmError> {
    let meta = fs::metadata(deb).map_err(|e| VmError::io("stat", deb, e))?;
    let stem = deb
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "kernel".into());
    let key = hash_key(&[&meta.len().to_le_bytes(), &meta.mtime().to_le_bytes()]);
    let dir = cache.join(format!("kernels/{stem}-{key}"));
    if !dir.join("boot").is_dir() {
        unpack_deb(deb, &dir)?;
    }
    let boot = dir.join("boot");
    let vmlinuz = fs::read_dir(&boot)
        .map_err(|e| VmError::io("read directory", &boot, e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("vmlinuz-"))
        })
        .ok_or_else(|| {
            kernel_err(
                deb,
                "is a Debian package without boot/vmlinuz-*: give a linux-image-* package (not linux-headers or a meta package)",
            )
        })?;
    let mut k = from_bzimage(deb, &vmlinuz, cache)?;
    k.kind = KernelKind::Deb;
    let m = dir.join("lib/modules").join(&k.release);
    k.modules = m.is_dir().then_some(m);
    Ok(k)
}

/// `dpkg-deb -x` into a temporary directory beside `dir`, then rename it into place.
fn unpack_deb(deb: &Path, dir: &Path) -> Result<(), VmError> {
    let dpkg = super::find_program("dpkg-deb").ok_or(VmError::Missing {
        program: "dpkg-deb".into(),
        package: "dpkg".into(),
    })?;
    let parent = dir.parent().unwrap_or(Path::new("/"));
    fs::create_dir_all(parent).map_err(|e| VmError::io("create directory", parent, e))?;
    let tmp = parent.join(format!(
        ".unpack-{}-{}",
        std::process::id(),
        dir.file_name().unwrap_or_default().to_string_lossy()
    ));
    let _ = fs::remove_dir_all(&tmp);
    let out = Command::new(dpkg)
        .arg("-x")
        .arg(deb)
        .arg(&tmp)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| VmError::io("run dpkg-deb -x", deb, e))?;
    if !out.status.success() {
        let _ = fs::remove_dir_all(&tmp);
        return Err(kernel_err(
            deb,
            format!(
                "dpkg-deb -x failed ({}): {}; is it a complete .deb? download it again",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ));
    }
    match fs::rename(&tmp, dir) {
        Ok(()) => Ok(()),
        // Another fsdelta unpacked the same package meanwhile: keep theirs.
        Err(_) if dir.join("boot").is_dir() => {
            let _ = fs::remove_dir_all(&tmp);
            Ok(())
        }
        Err(e) => {
            let _ = fs::remove_dir_all(&tmp);
            Err(VmError::io("rename", dir, e))
        }
    }
}

/// A kernel fsdelta booted before, remembered for `fsdelta kernels`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Known {
    /// The path as the configuration gave it.
    pub path: PathBuf,
    /// Its release.
    pub release: String,
    /// What it is (`deb`, `bzImage`, ...).
    pub kind: String,
}

fn known_file(cache: &Path) -> PathBuf {
    cache.join("known-kernels.json")
}

/// The kernels remembered in `cache` (most recent first), those whose file still exists.
pub fn known(cache: &Path) -> Vec<Known> {
    let list: Vec<Known> = fs::read_to_string(known_file(cache))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    list.into_iter().filter(|k| k.path.exists()).collect()
}

/// Remember a kernel that resolved (for `fsdelta kernels`); best effort.
pub fn remember(k: &Kernel, cache: &Path) {
    let path = fs::canonicalize(&k.given).unwrap_or_else(|_| k.given.clone());
    let mut list = known(cache);
    list.retain(|x| x.path != path);
    list.insert(
        0,
        Known {
            path,
            release: k.release.clone(),
            kind: k.kind.as_str().to_string(),
        },
    );
    list.truncate(50);
    if let Ok(text) = serde_json::to_vec_pretty(&list) {
        let _ = write_atomically(&known_file(cache), &text);
    }
}

/// Debian kernel packages found in the usual download places: apt's archive cache, CI's kernel
/// cache (`/var/cache/fsdelta-ci/kernels`) and `$FSDELTA_KERNEL_DIR`.
pub fn debian_packages() -> Vec<PathBuf> {
    let mut dirs = vec![
        PathBuf::from("/var/cache/apt/archives"),
        PathBuf::from("/var/cache/fsdelta-ci/kernels"),
    ];
    if let Some(d) = std::env::var_os("FSDELTA_KERNEL_DIR") {
        dirs.insert(0, PathBuf::from(d));
    }
    let mut out = Vec::new();
    for d in dirs {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        let mut found: Vec<PathBuf> = rd
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    n.starts_with("linux-image-") && n.ends_with(".deb") && !n.contains("-dbg")
                })
            })
            .collect();
        found.sort();
        out.extend(found);
    }
    out
}

/// The release in a Debian kernel package's file name
/// (`linux-image-6.1.0-47-amd64_6.1.170-3_amd64.deb` gives `6.1.0-47-amd64`).
pub fn release_of_deb_name(name: &str) -> Option<String> {
    let rest = name.strip_prefix("linux-image-")?;
    let release = rest.split('_').next()?;
    (!release.is_empty() && release.chars().next()?.is_ascii_digit()).then(|| release.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unpacked_packages_kernel_finds_its_modules_beside_its_boot_directory() {
        let dir = tempfile::tempdir().unwrap();
        let r = "6.1.0-47-amd64";
        fs::create_dir_all(dir.path().join("boot")).unwrap();
        fs::create_dir_all(dir.path().join(format!("lib/modules/{r}/kernel"))).unwrap();
        let vmlinuz = dir.path().join(format!("boot/vmlinuz-{r}"));
        assert_eq!(
            modules_beside(&vmlinuz, r),
            Some(dir.path().join(format!("lib/modules/{r}")))
        );
        assert_eq!(modules_beside(&vmlinuz, "6.1.0-99-none"), None);
    }

    #[test]
    fn config_values_read_as_debian_writes_them() {
        // Lines of Debian's boot/config-6.1.0-47-amd64.
        let c = "CONFIG_VIRTIO_PCI=m\nCONFIG_VIRTIO_BLK=m\n# CONFIG_UBIFS_FS is not set\nCONFIG_EXT4_FS=m\nCONFIG_PVH=y\n";
        assert_eq!(config_value(c, "VIRTIO_PCI"), Some('m'));
        assert_eq!(config_value(c, "PVH"), Some('y'));
        assert_eq!(config_value(c, "VIRTIO_BLK"), Some('m'));
        assert_eq!(config_value(c, "UBIFS_FS"), None);
        assert_eq!(config_value(c, "EXT4"), None);
    }

    #[test]
    fn a_file_that_is_not_a_kernel_is_named_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("notes.txt");
        fs::write(&p, "hello, I am not a kernel\n").unwrap();
        let e = resolve(&p, None, dir.path()).unwrap_err().to_string();
        assert!(e.contains("is not a kernel"), "{e}");
        let e = resolve(dir.path(), None, dir.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a built kernel tree"), "{e}");
        let e = resolve(&dir.path().join("nope"), None, dir.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("No such file"), "{e}");
        // An ELF program that is not a vmlinux.
        let e = resolve(Path::new("/bin/ls"), None, dir.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a vmlinux"), "{e}");
    }

    #[test]
    fn banners_and_headers_give_the_release() {
        let d = b"xx\0Linux version 6.1.0-47-amd64 (debian-kernel@lists.debian.org) #1";
        assert_eq!(release_from_banner(d).as_deref(), Some("6.1.0-47-amd64"));
        let mut bz = vec![0u8; 0x400];
        bz[0x20e..0x210].copy_from_slice(&0x100u16.to_le_bytes());
        bz[0x300..0x312].copy_from_slice(b"6.18.0-rc1+ (me@x)");
        assert_eq!(bzimage_release(&bz).as_deref(), Some("6.18.0-rc1+"));
        assert_eq!(extract_vmlinux(&bz), None);
        assert_eq!(
            release_of_deb_name("linux-image-6.1.0-47-amd64_6.1.170-3_amd64.deb").as_deref(),
            Some("6.1.0-47-amd64")
        );
        assert_eq!(release_of_deb_name("linux-image-amd64_6.1_amd64.deb"), None);
    }

    #[test]
    fn remembered_kernels_are_listed_newest_first_while_they_exist() {
        let cache = tempfile::tempdir().unwrap();
        let a = cache.path().join("a");
        fs::write(&a, b"x").unwrap();
        let k = |p: &Path, r: &str| Kernel {
            given: p.to_path_buf(),
            kind: KernelKind::BzImage,
            boot: p.to_path_buf(),
            pvh: false,
            release: r.into(),
            modules: None,
        };
        remember(&k(&a, "1"), cache.path());
        remember(&k(&cache.path().join("gone"), "2"), cache.path());
        remember(&k(&a, "1"), cache.path());
        let list = known(cache.path());
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].release, "1");
    }
}
