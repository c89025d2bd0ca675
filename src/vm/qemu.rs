//! The QEMU process: the accelerator (KVM when a probe boot reaches the ready marker in time,
//! else TCG), the command line, and one boot watched to its end: the console (first serial
//! port) for the markers `/init` prints, the results file (second serial port), a timeout to
//! ready and a timeout for the whole boot, and the cancel token.
//!
//! Must never leave qemu running: it is started in its own process group (a terminal's Ctrl-C
//! reaches fsdelta, which decides), with `PR_SET_PDEATHSIG = SIGKILL` (it dies with the thread
//! that started it, even after a kill -9 of fsdelta), and [`Qemu`] kills and reaps it on drop.

use super::VmError;
use super::initramfs::{END_MARKER, MODFAIL_MARKER, NOFS_MARKER, NOHOST_MARKER, READY_MARKER};
use crate::workload::CancelToken;
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The QEMU binary for x86-64 guests.
pub const QEMU: &str = "qemu-system-x86_64";
/// Its Debian package.
pub const QEMU_PACKAGE: &str = "qemu-system-x86";

/// Find qemu-system-x86_64.
pub fn find_qemu() -> Result<PathBuf, VmError> {
    super::find_program(QEMU).ok_or(VmError::Missing {
        program: QEMU.into(),
        package: QEMU_PACKAGE.into(),
    })
}

/// How the guest's CPU runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    /// Hardware virtualisation (`-accel kvm -cpu host`).
    Kvm,
    /// QEMU's emulator (`-accel tcg,thread=multi,tb-size=512 -cpu max`).
    Tcg,
}

impl Accel {
    /// `kvm` or `tcg`.
    pub fn as_str(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }

    fn args(self) -> [&'static str; 4] {
        match self {
            Accel::Kvm => ["-accel", "kvm", "-cpu", "host"],
            Accel::Tcg => ["-accel", "tcg,thread=multi,tb-size=512", "-cpu", "max"],
        }
    }
}

/// A disk of the guest.
#[derive(Clone, Debug)]
pub struct Disk {
    /// The image file.
    pub image: PathBuf,
    /// QEMU's `cache=` mode (`none` when the image's filesystem takes O_DIRECT, else
    /// `writeback`).
    pub cache: &'static str,
    /// Attached read-only (an erofs image).
    pub read_only: bool,
}

/// Everything one boot needs.
#[derive(Clone, Debug)]
pub struct Boot {
    /// `-kernel`.
    pub kernel: PathBuf,
    /// `-initrd`.
    pub initrd: PathBuf,
    /// Extra kernel command line (the configuration's `cmdline`).
    pub cmdline: Option<String>,
    /// The accelerator.
    pub accel: Accel,
    /// vCPUs.
    pub cpus: u32,
    /// Memory in bytes.
    pub memory_bytes: u64,
    /// virtio disks, in order (`/dev/vda`, `/dev/vdb`, ...).
    pub disks: Vec<Disk>,
    /// The console log (first serial port).
    pub console: PathBuf,
    /// The results (second serial port).
    pub results: PathBuf,
    /// qemu's standard error.
    pub stderr: PathBuf,
    /// qemu's pid file.
    pub pidfile: PathBuf,
    /// Most time from start to the ready marker.
    pub ready_timeout: Duration,
    /// Most time for the whole boot.
    pub total_timeout: Duration,
    /// Share the host's root directory read-only with the guest (virtio-9p, tag
    /// [`HOST_ROOT_TAG`]), so that its commands, hooks, tools and files are the host's.
    pub host_root: bool,
}

/// The 9p mount tag of the host's root directory in the guest.
pub const HOST_ROOT_TAG: &str = "fsdelta-host";

/// What qemu prints when KVM cannot run the guest's code; the VM is paused, not ended, so
/// qemu is killed when it appears.
pub const KVM_FAILURE: &str = "KVM internal error";

impl Boot {
    /// The kernel command line.
    pub fn append(&self) -> String {
        // no_timer_check: under TCG on a loaded host the guest's early IO-APIC timer check can
        // miss its ticks and panic ("IO-APIC + timer doesn't work!"; seen at load 20 on 2
        // CPUs); QEMU's timer is known to work.
        let mut s = "console=ttyS0 panic=-1 quiet no_timer_check fsdelta.guest=1".to_string();
        if let Some(c) = &self.cmdline {
            s.push(' ');
            s.push_str(c);
        }
        s
    }

    /// The arguments of qemu.
    pub fn args(&self) -> Vec<String> {
        let mut a: Vec<String> = [
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-no-reboot",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(self.accel.args().iter().map(|s| s.to_string()));
        a.extend([
            "-m".into(),
            format!("{}M", self.memory_bytes >> 20),
            "-smp".into(),
            self.cpus.to_string(),
            "-kernel".into(),
            self.kernel.display().to_string(),
            "-initrd".into(),
            self.initrd.display().to_string(),
            "-append".into(),
            self.append(),
        ]);
        for d in &self.disks {
            a.push("-drive".into());
            a.push(format!(
                "file={},format=raw,if=virtio,cache={},{}",
                d.image.display().to_string().replace(',', ",,"),
                d.cache,
                if d.read_only {
                    "readonly=on"
                } else {
                    "discard=unmap"
                }
            ));
        }
        for (id, path) in [("con", &self.console), ("res", &self.results)] {
            a.push("-chardev".into());
            a.push(format!(
                "file,id={id},path={}",
                path.display().to_string().replace(',', ",,")
            ));
            a.push("-serial".into());
            a.push(format!("chardev:{id}"));
        }
        if self.host_root {
            // Read-only: nothing in the guest can write to the host's files. `multidevs=remap`
            // keeps inode numbers unique across the host's mounts.
            a.push("-virtfs".into());
            a.push(format!(
                "local,path=/,mount_tag={HOST_ROOT_TAG},security_model=none,readonly=on,multidevs=remap"
            ));
        }
        a.push("-pidfile".into());
        a.push(self.pidfile.display().to_string());
        a
    }
}

/// How a boot ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Ending {
    /// The job ran to its end with this exit code and the guest powered off.
    Finished {
        /// guest-run's exit code.
        code: i32,
    },
    /// The guest did not reach ready, or did not finish, in time; qemu was killed.
    Timeout {
        /// Whether it had reached the ready marker.
        ready: bool,
        /// The timeout that expired.
        after: Duration,
    },
    /// qemu ended without the end marker (a guest panic reboots, and -no-reboot ends qemu).
    Crashed {
        /// qemu's exit status.
        status: String,
    },
}

/// What one boot gave.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Seconds from qemu's start to the ready marker, when it came.
    pub boot_s: Option<f64>,
    /// How it ended.
    pub ending: Ending,
    /// The last lines of the console.
    pub console_tail: String,
    /// The results channel's bytes.
    pub results: Vec<u8>,
    /// Modules whose insmod failed.
    pub modfail: Vec<String>,
    /// The filesystem the guest kernel lacks, if it said so.
    pub nofs: Option<String>,
    /// qemu's standard error (first lines), for a qemu that would not start.
    pub stderr: String,
    /// Why the guest could not mount the host's root directory, if it said so.
    pub nohost: Option<String>,
}

/// A running qemu; killed and reaped on drop.
#[derive(Debug)]
pub struct Qemu {
    child: Option<Child>,
}

impl Qemu {
    /// Start qemu with `boot`'s arguments.
    pub fn start(qemu: &Path, boot: &Boot) -> Result<Qemu, VmError> {
        for p in [&boot.console, &boot.results] {
            fs::write(p, b"").map_err(|e| VmError::io("create", p, e))?;
        }
        let stderr =
            fs::File::create(&boot.stderr).map_err(|e| VmError::io("create", &boot.stderr, e))?;
        let mut cmd = Command::new(qemu);
        cmd.args(boot.args())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .process_group(0);
        crate::os::child::dies_with_this_thread(&mut cmd);
        let child = cmd.spawn().map_err(|e| VmError::io("start", qemu, e))?;
        Ok(Qemu { child: Some(child) })
    }

    /// The process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Kill (SIGKILL) and reap.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn try_wait(&mut self) -> Option<std::process::ExitStatus> {
        let c = self.child.as_mut()?;
        match c.try_wait() {
            Ok(Some(s)) => {
                self.child = None;
                Some(s)
            }
            _ => None,
        }
    }
}

impl Drop for Qemu {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| l.trim_end_matches('\r'))
        .collect::<Vec<_>>()
        .join("\n")
}

fn read_from(path: &Path, offset: &mut u64, into: &mut Vec<u8>) {
    if let Ok(mut f) = fs::File::open(path)
        && f.seek(SeekFrom::Start(*offset)).is_ok()
        && let Ok(n) = f.read_to_end(into)
    {
        *offset += n as u64;
    }
}

/// Boot once and watch it to its end (see the module docs). On cancel, qemu is killed and
/// [`VmError::Cancelled`] returned.
pub fn run(qemu: &Path, boot: &Boot, cancel: &CancelToken) -> Result<Outcome, VmError> {
    let t0 = Instant::now();
    let mut q = Qemu::start(qemu, boot)?;
    let mut console = Vec::new();
    let mut offset = 0u64;
    let mut boot_s = None;
    let mut end_code: Option<i32> = None;
    let mut end_seen_at: Option<Instant> = None;
    let ending = loop {
        std::thread::sleep(Duration::from_millis(10));
        let exited = q.try_wait();
        read_from(&boot.console, &mut offset, &mut console);
        let text = String::from_utf8_lossy(&console);
        if boot_s.is_none() && text.lines().any(|l| l.trim_end() == READY_MARKER) {
            boot_s = Some(t0.elapsed().as_secs_f64());
        }
        if end_code.is_none()
            && let Some(code) = text.lines().find_map(|l| {
                l.trim_end()
                    .strip_prefix(END_MARKER)
                    .and_then(|c| c.trim().parse::<i32>().ok())
            })
        {
            end_code = Some(code);
            end_seen_at = Some(Instant::now());
        }
        if cancel.is_cancelled() {
            q.kill();
            return Err(VmError::Cancelled);
        }
        // A KVM emulation failure pauses the guest for ever: end it at once.
        if boot.accel == Accel::Kvm
            && fs::read_to_string(&boot.stderr).is_ok_and(|e| e.contains(KVM_FAILURE))
        {
            q.kill();
            break Ending::Crashed {
                status: KVM_FAILURE.to_string(),
            };
        }
        if let Some(status) = exited {
            read_from(&boot.console, &mut offset, &mut console);
            let text = String::from_utf8_lossy(&console);
            let code = end_code.or_else(|| {
                text.lines().find_map(|l| {
                    l.trim_end()
                        .strip_prefix(END_MARKER)
                        .and_then(|c| c.trim().parse::<i32>().ok())
                })
            });
            break match code {
                Some(code) => Ending::Finished { code },
                None => Ending::Crashed {
                    status: status.to_string(),
                },
            };
        }
        // After the end marker the guest syncs and powers off; give it a moment.
        if let Some(at) = end_seen_at
            && at.elapsed() > Duration::from_secs(20)
        {
            q.kill();
            break Ending::Finished {
                code: end_code.unwrap_or(0),
            };
        }
        let elapsed = t0.elapsed();
        if boot_s.is_none() && elapsed > boot.ready_timeout {
            q.kill();
            break Ending::Timeout {
                ready: false,
                after: boot.ready_timeout,
            };
        }
        if elapsed > boot.total_timeout {
            q.kill();
            break Ending::Timeout {
                ready: boot_s.is_some(),
                after: boot.total_timeout,
            };
        }
    };
    drop(q);
    let text = String::from_utf8_lossy(&console).into_owned();
    let modfail = text
        .lines()
        .filter_map(|l| l.trim_end().strip_prefix(MODFAIL_MARKER))
        .map(|m| m.trim().to_string())
        .collect();
    let nofs = text
        .lines()
        .find_map(|l| l.trim_end().strip_prefix(NOFS_MARKER))
        .map(|m| m.trim().to_string());
    let nohost = text
        .lines()
        .find_map(|l| l.trim_end().strip_prefix(NOHOST_MARKER))
        .map(|m| m.trim().to_string());
    let results = fs::read(&boot.results).unwrap_or_default();
    let stderr = fs::read_to_string(&boot.stderr).unwrap_or_default();
    Ok(Outcome {
        boot_s,
        ending,
        console_tail: tail(&text, 25),
        results,
        modfail,
        nofs,
        stderr: tail(&stderr, 5),
        nohost,
    })
}

/// Which accelerator to use: `$FSDELTA_VM_ACCEL` (`kvm` or `tcg`) when set; else TCG when
/// /dev/kvm cannot be opened; else a probe boot of `boot` (its job-less initramfs reaches the
/// ready marker and powers off) under KVM, which must reach ready within `probe_timeout`. The
/// answer is cached per host boot (`/proc/sys/kernel/random/boot_id`) and qemu binary. Returns
/// the accelerator and, when it fell back to TCG, why.
pub fn choose_accel(
    qemu: &Path,
    probe: &Boot,
    cache: &Path,
    probe_timeout: Duration,
) -> Result<(Accel, Option<String>), VmError> {
    match std::env::var("FSDELTA_VM_ACCEL").as_deref() {
        Ok("tcg") => return Ok((Accel::Tcg, None)),
        Ok("kvm") => return Ok((Accel::Kvm, None)),
        _ => {}
    }
    if let Err(e) = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
    {
        let hint = if e.kind() == std::io::ErrorKind::PermissionDenied {
            ": run as root or join the group of /dev/kvm (kvm)"
        } else {
            ""
        };
        return Ok((
            Accel::Tcg,
            Some(format!(
                "/dev/kvm cannot be opened ({e}{hint}): using TCG emulation; results are relative comparisons of CPU paths only"
            )),
        ));
    }
    if let Some(why) = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| no_virtualisation(&c))
    {
        return Ok((
            Accel::Tcg,
            Some(format!(
                "KVM is unusable here ({why}): using TCG emulation; results are relative comparisons of CPU paths only"
            )),
        ));
    }
    let boot_id = fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let qmeta = fs::metadata(qemu).map_err(|e| VmError::io("stat", qemu, e))?;
    let key = super::hash_key(&[
        boot_id.trim().as_bytes(),
        &std::os::unix::fs::MetadataExt::mtime(&qmeta).to_le_bytes(),
    ]);
    let cached = cache.join(format!("accel-{key}"));
    if let Ok(text) = fs::read_to_string(&cached) {
        let mut lines = text.splitn(2, '\n');
        match lines.next() {
            Some("kvm") => return Ok((Accel::Kvm, None)),
            Some("tcg") => return Ok((Accel::Tcg, lines.next().map(str::to_string))),
            _ => {}
        }
    }
    let mut b = probe.clone();
    b.accel = Accel::Kvm;
    b.disks.clear();
    b.ready_timeout = probe_timeout;
    b.total_timeout = probe_timeout + Duration::from_secs(5);
    let out = run(qemu, &b, &CancelToken::new())?;
    let answer = if out.boot_s.is_some() {
        (Accel::Kvm, None)
    } else {
        let why = if !out.stderr.is_empty() {
            out.stderr.lines().next().unwrap_or_default().to_string()
        } else {
            match &out.ending {
                Ending::Timeout { after, .. } => format!("no ready marker within {after:?}"),
                Ending::Crashed { status } => format!("the guest died ({status})"),
                Ending::Finished { .. } => "no ready marker".into(),
            }
        };
        (
            Accel::Tcg,
            Some(format!(
                "KVM cannot boot this kernel here ({why}): falling back to TCG emulation; results are relative comparisons of CPU paths only"
            )),
        )
    };
    let text = match &answer {
        (Accel::Kvm, _) => "kvm\n".to_string(),
        (Accel::Tcg, why) => format!("tcg\n{}", why.clone().unwrap_or_default()),
    };
    let _ = super::write_atomically(&cached, text.as_bytes());
    Ok(answer)
}

/// Why this CPU cannot run KVM guests, from `/proc/cpuinfo`: no `vmx` (Intel VT-x) nor `svm`
/// (AMD-V) flag. A /dev/kvm without them is a software module (a nested or paravirtual KVM)
/// that stock kernels do not boot under. `None` when the flags are there.
pub fn no_virtualisation(cpuinfo: &str) -> Option<String> {
    let flags: Vec<&str> = cpuinfo
        .lines()
        .filter(|l| l.starts_with("flags"))
        .filter_map(|l| l.split_once(':').map(|(_, f)| f))
        .flat_map(str::split_whitespace)
        .collect();
    if flags.is_empty() || flags.iter().any(|f| *f == "vmx" || *f == "svm") {
        return None;
    }
    let inside = if flags.contains(&"hypervisor") {
        " (fsdelta runs inside a virtual machine without nested virtualisation)"
    } else {
        " (enable VT-x/AMD-V in the firmware)"
    };
    Some(format!(
        "no vmx or svm flag in /proc/cpuinfo: this CPU offers no hardware virtualisation{inside}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kvm_is_unusable_without_vmx_or_svm() {
        // Captured on an AMD EPYC virtual machine without nested virtualisation.
        let vm = concat!(
            "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\n",
            "flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid extd_apicid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm cmp_legacy cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw topoext cpuid_fault vmmcall fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx512_bf16 clzero xsaveerptr arat avx512vbmi umip avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq rdpid fsrm\n"
        );
        let why = no_virtualisation(vm).unwrap();
        assert!(why.contains("no vmx or svm"), "{why}");
        assert!(why.contains("inside a virtual machine"), "{why}");
        assert!(no_virtualisation("flags\t\t: fpu vmx sse\n").is_none());
        assert!(no_virtualisation("flags\t\t: fpu svm sse\n").is_none());
        assert!(no_virtualisation("").is_none());
    }

    fn boot() -> Boot {
        Boot {
            kernel: "/k/vmlinux".into(),
            initrd: "/w/initrd".into(),
            cmdline: Some("mitigations=off".into()),
            accel: Accel::Tcg,
            cpus: 2,
            memory_bytes: 2 << 30,
            disks: vec![Disk {
                image: "/w/a,b.img".into(),
                cache: "none",
                read_only: false,
            }],
            console: "/w/console".into(),
            results: "/w/results".into(),
            stderr: "/w/stderr".into(),
            pidfile: "/w/pid".into(),
            ready_timeout: Duration::from_secs(1),
            total_timeout: Duration::from_secs(2),
            host_root: true,
        }
    }

    #[test]
    fn the_command_line_is_the_measured_one() {
        let a = boot().args().join(" ");
        assert!(
            a.contains("-accel tcg,thread=multi,tb-size=512 -cpu max"),
            "{a}"
        );
        assert!(a.contains("-m 2048M -smp 2"), "{a}");
        assert!(
            a.contains("file=/w/a,,b.img,format=raw,if=virtio,cache=none"),
            "{a}"
        );
        assert!(a.contains("-serial chardev:con"), "{a}");
        assert!(
            a.contains(
                "console=ttyS0 panic=-1 quiet no_timer_check fsdelta.guest=1 mitigations=off"
            ),
            "{a}"
        );
        assert!(
            a.contains(
                "-virtfs local,path=/,mount_tag=fsdelta-host,security_model=none,readonly=on"
            ),
            "{a}"
        );
        let mut k = boot();
        k.host_root = false;
        assert!(!k.args().join(" ").contains("-virtfs"));
        k.accel = Accel::Kvm;
        assert!(k.args().join(" ").contains("-accel kvm -cpu host"));
    }

    #[test]
    fn tails_keep_the_last_lines() {
        assert_eq!(tail("a\n\nb\r\nc\n", 2), "b\nc");
        assert_eq!(tail("", 3), "");
    }

    #[test]
    fn a_qemu_that_cannot_start_ends_as_crashed_with_its_stderr() {
        let Ok(qemu) = find_qemu() else {
            crate::os::skip_test(
                "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)",
            );
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let mut b = boot();
        b.kernel = dir.path().join("no-kernel");
        b.initrd = dir.path().join("no-initrd");
        b.disks.clear();
        b.console = dir.path().join("console");
        b.results = dir.path().join("results");
        b.stderr = dir.path().join("stderr");
        b.pidfile = dir.path().join("pid");
        b.total_timeout = Duration::from_secs(30);
        b.ready_timeout = Duration::from_secs(30);
        let out = run(&qemu, &b, &CancelToken::new()).unwrap();
        assert!(matches!(out.ending, Ending::Crashed { .. }), "{out:?}");
        assert!(out.stderr.contains("no-kernel"), "{out:?}");
    }
}
