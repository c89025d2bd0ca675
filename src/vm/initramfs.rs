//! The guest's initial root filesystem, as three cpio archives the kernel unpacks one after the
//! other: a base per kernel and module list (static busybox, the modules in load order, `/init`),
//! cached; a payload per fsdelta binary (the binary, stripped when `strip` is there, and the
//! shared libraries `ldd` names), cached; and a tiny job archive per boot (`/job.json`).
//!
//! Why: no guest distribution, no 9p, nothing on the host to configure; the guest is exactly
//! the kernel under test plus what it must run. Must never put a host file into an archive
//! without reading it through (symlinks are resolved, so the guest gets contents, not links to
//! paths it does not have).

use super::cpio::Archive;
use super::job::RESULTS_DEVICE;
use super::modules::ModuleFile;
use super::{VmError, elf, hash_key, write_atomically};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where busybox-static installs its binary.
pub const BUSYBOX: &str = "/bin/busybox";

/// Markers `/init` prints on the console; the host watches for them.
pub const READY_MARKER: &str = "FSDELTA-READY";
/// Printed with the job's exit code when the job ends (`FSDELTA-END 0`).
pub const END_MARKER: &str = "FSDELTA-END";
/// Printed when a module does not load (`FSDELTA-MODFAIL ext4`).
pub const MODFAIL_MARKER: &str = "FSDELTA-MODFAIL";
/// Printed when the guest lacks a filesystem driver (`FSDELTA-NOFS ext4`).
pub const NOFS_MARKER: &str = "FSDELTA-NOFS";

/// Bump when `/init` or the layout changes, so cached archives are rebuilt.
const LAYOUT_VERSION: &str = "2";

/// Where `/init` mounts the host's root directory (read-only, 9p) in the guest.
pub const HOST_ROOT: &str = "/host";
/// Where, inside the host's root as the guest sees it, `/init` puts the fsdelta binary and the
/// job (a tmpfs over the host's `/run`).
pub const GUEST_RUN_DIR: &str = "/run/fsdelta";
/// Printed when the host's root could not be mounted (`FSDELTA-NOHOST <why>`).
pub const NOHOST_MARKER: &str = "FSDELTA-NOHOST";
/// The `PATH` of commands run inside the host's root.
const HOST_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The guest's `/init`: mount the pseudo filesystems, load the modules in order, check the
/// filesystem driver, mount the host's root read-only over 9p when `host_root` (with tmpfs over
/// its `/run` and `/mnt`, a writable overlay over its `/tmp` and `/var/tmp` so that the host's
/// files there stay visible (a tmpfs when the kernel has no overlayfs), and the guest's `/proc`,
/// `/sys`, `/dev` and tracefs), say ready, run the job (inside the host's root when it is there, so commands,
/// hooks and perf are the host's), say how it ended, power off.
fn init_script(fs: &str, host_root: bool) -> String {
    let share = if host_root {
        format!(
            r#"mkdir -p {HOST_ROOT}
if mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose {tag} {HOST_ROOT} 2>/tmp/9p.err; then
  mkdir -p /ovl && mount -t tmpfs -o mode=0700 tmpfs /ovl
  for d in tmp var/tmp; do
    [ -d {HOST_ROOT}/$d ] || continue
    mkdir -p /ovl/$d/u /ovl/$d/w && chmod 1777 /ovl/$d/u
    mount -t overlay overlay -o lowerdir={HOST_ROOT}/$d,upperdir=/ovl/$d/u,workdir=/ovl/$d/w {HOST_ROOT}/$d 2>/dev/null \
      || mount -t tmpfs -o mode=1777 tmpfs {HOST_ROOT}/$d
  done
  for d in run mnt; do
    [ -d {HOST_ROOT}/$d ] && mount -t tmpfs -o mode=0755 tmpfs {HOST_ROOT}/$d
  done
  mount -o bind /proc {HOST_ROOT}/proc && mount -o bind /sys {HOST_ROOT}/sys && mount -o bind /dev {HOST_ROOT}/dev
  mount -t tracefs nodev {HOST_ROOT}/sys/kernel/tracing 2>/dev/null
  mkdir -p {HOST_ROOT}{GUEST_RUN_DIR}
  if [ -f /job.json ]; then
    cp /job.json {HOST_ROOT}{GUEST_RUN_DIR}/job.json
    : > {HOST_ROOT}{GUEST_RUN_DIR}/fsdelta
    mount -o bind /bin/fsdelta {HOST_ROOT}{GUEST_RUN_DIR}/fsdelta
  fi
else
  echo "{NOHOST_MARKER} $(cat /tmp/9p.err)"
fi
"#,
            tag = super::qemu::HOST_ROOT_TAG
        )
    } else {
        String::new()
    };
    format!(
        r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /tmp /mnt
mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
while read m; do
  insmod /lib/modules/fsdelta/$m.ko 2>/dev/console || echo "{MODFAIL_MARKER} $m"
done < /lib/modules/fsdelta/order
if [ "{fs}" != tmpfs ] && ! grep -qw "{fs}" /proc/filesystems; then
  echo "{NOFS_MARKER} {fs}"
fi
{share}echo "{READY_MARKER}"
stty -F {RESULTS_DEVICE} raw -echo 2>/dev/null
if [ -x {HOST_ROOT}{GUEST_RUN_DIR}/fsdelta ] && [ -f {HOST_ROOT}{GUEST_RUN_DIR}/job.json ]; then
  HOME=/root PATH={HOST_PATH} /bin/busybox chroot {HOST_ROOT} {GUEST_RUN_DIR}/fsdelta guest-run {GUEST_RUN_DIR}/job.json {RESULTS_DEVICE}
  echo "{END_MARKER} $?"
elif [ -x /bin/fsdelta ] && [ -f /job.json ]; then
  /bin/fsdelta guest-run /job.json {RESULTS_DEVICE}
  echo "{END_MARKER} $?"
else
  echo "{END_MARKER} 127"
fi
sync
poweroff -f
"#
    )
}

/// Check that `/bin/busybox` is there and static (the dynamic `busybox` package installs the
/// same path, but its binary cannot run in the guest).
pub fn check_busybox() -> Result<PathBuf, VmError> {
    let p = PathBuf::from(BUSYBOX);
    let missing = || VmError::Missing {
        program: "static busybox (/bin/busybox)".into(),
        package: "busybox-static".into(),
    };
    let d = fs::read(&p).map_err(|_| missing())?;
    match elf::is_dynamic(&d) {
        Some(false) => Ok(p),
        _ => Err(missing()),
    }
}

/// The base archive for a kernel, its modules and a filesystem: built once, then read from the
/// cache.
pub fn base(
    release: &str,
    modules: &[ModuleFile],
    fs: &str,
    host_root: bool,
    cache: &Path,
) -> Result<PathBuf, VmError> {
    let busybox = check_busybox()?;
    let bb_meta = fs::metadata(&busybox).map_err(|e| VmError::io("stat", &busybox, e))?;
    let mut key_parts: Vec<Vec<u8>> = vec![
        LAYOUT_VERSION.into(),
        release.into(),
        fs.into(),
        vec![u8::from(host_root)],
        bb_meta.len().to_le_bytes().to_vec(),
        bb_meta.mtime().to_le_bytes().to_vec(),
    ];
    for m in modules {
        let meta = fs::metadata(&m.path).map_err(|e| VmError::io("stat", &m.path, e))?;
        key_parts.push(m.path.as_os_str().as_encoded_bytes().to_vec());
        key_parts.push(meta.len().to_le_bytes().to_vec());
        key_parts.push(meta.mtime().to_le_bytes().to_vec());
    }
    let refs: Vec<&[u8]> = key_parts.iter().map(Vec::as_slice).collect();
    let path = cache.join(format!("initramfs/base-{release}-{}.cpio", hash_key(&refs)));
    if path.is_file() {
        return Ok(path);
    }
    let mut a = Archive::new();
    for d in [
        "bin",
        "dev",
        "proc",
        "sys",
        "tmp",
        "mnt",
        "lib",
        "lib/modules",
    ] {
        a.dir(d);
    }
    a.dir("lib/modules/fsdelta");
    let bb = fs::read(&busybox).map_err(|e| VmError::io("read", &busybox, e))?;
    a.file("bin/busybox", 0o755, &bb);
    a.symlink("bin/sh", "busybox");
    let mut order = String::new();
    for m in modules {
        a.file(
            &format!("lib/modules/fsdelta/{}.ko", m.name),
            0o644,
            &m.read()?,
        );
        order.push_str(&m.name);
        order.push('\n');
    }
    a.file("lib/modules/fsdelta/order", 0o644, order.as_bytes());
    a.file("init", 0o755, init_script(fs, host_root).as_bytes());
    write_atomically(&path, &a.finish())?;
    Ok(path)
}

/// The shared libraries `ldd` lists for `binary` (absolute paths as the loader looks for them),
/// none for a static binary.
fn libraries(binary: &Path) -> Result<Vec<PathBuf>, VmError> {
    let d = fs::read(binary).map_err(|e| VmError::io("read", binary, e))?;
    if elf::is_dynamic(&d) != Some(true) {
        return Ok(Vec::new());
    }
    let ldd = super::find_program("ldd").ok_or(VmError::Missing {
        program: "ldd".into(),
        package: "libc-bin".into(),
    })?;
    let out = Command::new(ldd)
        .arg(binary)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| VmError::io("run ldd", binary, e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut libs = Vec::new();
    for line in text.lines() {
        // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)"
        let path = match line.split_once("=>") {
            Some((_, rhs)) => rhs.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(p) = path.filter(|p| p.starts_with('/')) {
            libs.push(PathBuf::from(p));
        }
    }
    Ok(libs)
}

/// The payload archive: `binary` as `/bin/fsdelta` and its libraries, cached by the binary's
/// identity (payloads no fsdelta used for a day are removed).
pub fn payload(binary: &Path, cache: &Path) -> Result<PathBuf, VmError> {
    let meta = fs::metadata(binary).map_err(|e| VmError::io("stat", binary, e))?;
    let key = hash_key(&[
        LAYOUT_VERSION.as_bytes(),
        binary.as_os_str().as_encoded_bytes(),
        &meta.len().to_le_bytes(),
        &meta.mtime().to_le_bytes(),
        &meta.ino().to_le_bytes(),
    ]);
    let dir = cache.join("initramfs");
    let path = dir.join(format!("payload-{key}.cpio"));
    if path.is_file() {
        // Mark it used, so that another fsdelta's clean-up leaves it alone.
        if let Ok(f) = fs::File::options().append(true).open(&path) {
            let _ = f.set_modified(std::time::SystemTime::now());
        }
        return Ok(path);
    }
    let mut a = Archive::new();
    a.dir("bin");
    let mut data = fs::read(binary).map_err(|e| VmError::io("read", binary, e))?;
    if let Some(strip) = super::find_program("strip") {
        let tmp = dir.join(format!(
            ".strip-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = fs::create_dir_all(&dir);
        let ok = Command::new(strip)
            .arg("--strip-debug")
            .arg("-o")
            .arg(&tmp)
            .arg(binary)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok && let Ok(stripped) = fs::read(&tmp) {
            data = stripped;
        }
        let _ = fs::remove_file(&tmp);
    }
    a.file("bin/fsdelta", 0o755, &data);
    let mut dirs = std::collections::BTreeSet::new();
    for lib in libraries(binary)? {
        let name = lib.display().to_string();
        for p in Archive::parents(&name) {
            if dirs.insert(p.clone()) {
                a.dir(&p);
            }
        }
        let bytes = fs::read(&lib).map_err(|e| VmError::io("read", &lib, e))?;
        a.file(&name, 0o755, &bytes);
    }
    write_atomically(&path, &a.finish())?;
    // Payloads of older builds are of no further use once no fsdelta has used them for a day
    // (other fsdelta binaries, other checkouts, may be booting guests with theirs right now).
    if let Ok(rd) = fs::read_dir(&dir) {
        for e in rd.filter_map(Result::ok) {
            let n = e.file_name().to_string_lossy().into_owned();
            let stale = e
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > std::time::Duration::from_secs(24 * 3600));
            if n.starts_with("payload-") && e.path() != path && stale {
                let _ = fs::remove_file(e.path());
            }
        }
    }
    Ok(path)
}

/// The per-boot archive holding `/job.json`.
pub fn job_archive(job_json: &[u8]) -> Vec<u8> {
    let mut a = Archive::new();
    a.file("job.json", 0o600, job_json);
    a.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_init_script_runs_the_job_and_powers_off() {
        let s = init_script("ext4", false);
        assert!(s.starts_with("#!/bin/busybox sh\n"));
        assert!(s.contains("grep -qw \"ext4\" /proc/filesystems"));
        assert!(s.contains("/bin/fsdelta guest-run /job.json /dev/ttyS1"));
        assert!(s.trim_end().ends_with("poweroff -f"));
        assert!(!s.contains("mount -t 9p"));
        let h = init_script("ext4", true);
        assert!(
            h.contains("mount -t 9p -o trans=virtio,version=9p2000.L,ro,"),
            "{h}"
        );
        assert!(h.contains("fsdelta-host /host"), "{h}");
        assert!(
            h.contains("/bin/busybox chroot /host /run/fsdelta/fsdelta guest-run /run/fsdelta/job.json /dev/ttyS1"),
            "{h}"
        );
    }

    #[test]
    fn this_binary_needs_libc_and_its_loader() {
        let me = std::env::current_exe().unwrap();
        let libs = libraries(&me).unwrap();
        assert!(
            libs.iter().any(|l| l.to_string_lossy().contains("libc.so")),
            "{libs:?}"
        );
        assert!(
            libs.iter()
                .any(|l| l.to_string_lossy().contains("ld-linux")),
            "{libs:?}"
        );
    }
}
