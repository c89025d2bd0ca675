//! The vm room on its own, on real kernels under QEMU (TCG here): one repetition of a tiny
//! fs_mark test and a tiny fio test on ext4 in a guest of each of two Debian kernels, the
//! samples read back with the guest's facts; a guest that hangs; a guest that panics; a kernel
//! without the filesystem's driver; Ctrl-C mid-boot. Every test checks that no qemu process,
//! image or state entry is left behind.
//!
//! Needs root, qemu-system-x86, busybox-static and the two kernel packages (.ci/run downloads
//! them into /var/cache/fsdelta-ci/kernels, or set FSDELTA_VM_KERNEL_A and _B); skipped, saying
//! why, without them unless FSDELTA_REQUIRE_ALL=1.

mod common;

use fsdelta::model::SampleStatus;
use fsdelta::plan::{config, suitefile};
use fsdelta::site::StateFile;
use fsdelta::vm::{RepetitionOptions, VmSite};
use fsdelta::workload::CancelToken;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::vm_kernel as kernel;

/// The tests of this file boot one guest at a time: they check for leftover qemu children of
/// this process, and two guests at once would only slow each other down.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn ready() -> bool {
    common::require(common::is_root(), "root (mkfs, state file)")
        && common::require_qemu()
        && common::require(
            kernel("A").is_some() && kernel("B").is_some(),
            "linux-image-6.1.0-47-amd64 and -50 .debs in /var/cache/fsdelta-ci/kernels (see .ci/run)",
        )
}

use common::VM_SUITE as SUITE;

fn config_for(kernel: &Path, extra: &str) -> config::TargetConfig {
    let text = format!(
        "[[config]]\nname = \"g\"\nfs = \"ext4\"\ndevice = \"loop:512M\"\nkernel = \"{}\"\n{extra}\n",
        kernel.display()
    );
    config::parse(&text, "t.toml").unwrap().configs.remove(0)
}

/// A temporary directory with the scratch location and the state file in it.
fn workdir() -> (tempfile::TempDir, PathBuf, StateFile) {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    let state = StateFile::new(dir.path().join("state.json"));
    (dir, scratch, state)
}

fn qemu_children() -> Vec<u32> {
    common::qemu_of(std::process::id())
}

fn assert_clean(scratch: &Path, state: &StateFile) {
    assert!(qemu_children().is_empty(), "a qemu process was left behind");
    let left: Vec<_> = std::fs::read_dir(scratch)
        .map(|rd| rd.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(state.entries().unwrap().is_empty(), "{:?}", state.entries());
}

#[test]
fn a_tiny_repetition_runs_in_a_guest_of_each_kernel() {
    let _one = serial();
    if !ready() {
        return;
    }
    let suite = suitefile::parse(SUITE, "tiny.toml").unwrap();
    let (_dir, scratch, state) = workdir();
    for (which, release) in [("A", "6.1.0-47-amd64"), ("B", "6.1.0-50-amd64")] {
        let t0 = Instant::now();
        let mut t = VmSite::new(
            &config_for(&kernel(which).unwrap(), "memory = \"1G\""),
            &scratch,
            state.clone(),
            Path::new(env!("CARGO_BIN_EXE_fsdelta")),
        )
        .unwrap();
        let setup = t0.elapsed();
        assert_eq!(t.kernel().release, release);
        let rep = t
            .run_repetition(
                &suite.tests,
                1,
                &RepetitionOptions::default(),
                &CancelToken::new(),
            )
            .unwrap();
        let facts = rep.facts.clone().unwrap_or_else(|| {
            panic!(
                "the guest said no hello: {:?}",
                rep.samples.first().and_then(|s| s.error.clone())
            )
        });
        eprintln!(
            "kernel {release}: setup {:.1} s, boot to ready {:.2} s, whole cycle {:.1} s, accel {}",
            setup.as_secs_f64(),
            facts.boot_s,
            rep.cycle_s,
            facts.accel.as_str()
        );
        assert_eq!(rep.samples.len(), 2, "{:?}", rep.samples);
        for s in &rep.samples {
            assert_eq!(s.status, SampleStatus::Ok, "{:?}", s.error);
            assert_eq!(s.repetition, 1);
            assert_eq!(s.config, "g");
            assert_eq!(s.facts.extra["vm_kernel"], release);
            assert_eq!(s.facts.fs_type, "ext4");
            assert_eq!(
                s.facts.device,
                format!("/dev/vd{}", if s.test == "files" { 'a' } else { 'b' })
            );
            assert!(
                s.facts
                    .mkfs_options
                    .as_deref()
                    .unwrap_or("")
                    .contains("mkfs.ext4")
            );
            let boot = s.metrics.iter().find(|m| m.name == "vm_boot_s").unwrap();
            assert!(boot.value > 0.5 && boot.value < 120.0, "{}", boot.value);
            if facts.accel == fsdelta::vm::qemu::Accel::Tcg {
                assert_eq!(s.facts.extra["emulated"], fsdelta::vm::EMULATED_LABEL);
            }
            let head = &s.metrics[0];
            eprintln!(
                "  {} {} = {:.1} {}",
                s.test, head.name, head.value, head.unit
            );
            assert!(head.value > 0.0);
        }
        t.teardown().unwrap();
    }
    assert_clean(&scratch, &state);
}

fn target(
    kernel: &Path,
    extra: &str,
    scratch: &Path,
    state: &StateFile,
) -> Result<VmSite, fsdelta::vm::VmError> {
    VmSite::new(
        &config_for(kernel, extra),
        scratch,
        state.clone(),
        Path::new(env!("CARGO_BIN_EXE_fsdelta")),
    )
}

#[test]
fn a_hung_guest_is_killed_and_its_samples_fail_with_the_console_tail() {
    let _one = serial();
    if !ready() {
        return;
    }
    let suite = suitefile::parse(
        "[[test]]\nname = \"stuck\"\nworkload = \"command\"\ncommand = \"echo going to sleep > /dev/console; sleep 600\"\n\n[[test]]\nname = \"after\"\nworkload = \"fsmark\"\nargs = \"-s 0 -n 10 -t 1\"\n",
        "hang.toml",
    )
    .unwrap();
    let (_dir, scratch, state) = workdir();
    let mut t = target(&kernel("A").unwrap(), "", &scratch, &state).unwrap();
    // The repetition's time limit must leave the guest time to boot and reach the stuck command
    // (whose words are in the console tail), however loaded this machine is: a first repetition
    // of a command that ends at once shows how long a whole guest takes here now.
    let quick = suitefile::parse(
        "[[test]]\nname = \"quick\"\nworkload = \"command\"\ncommand = \"true\"\n",
        "quick.toml",
    )
    .unwrap();
    let t0 = Instant::now();
    let first = t
        .run_repetition(
            &quick.tests,
            1,
            &RepetitionOptions::default(),
            &CancelToken::new(),
        )
        .unwrap();
    assert_eq!(first.samples[0].status, SampleStatus::Ok);
    let opts = RepetitionOptions {
        total_timeout: (t0.elapsed() * 3).max(Duration::from_secs(15)),
        ..RepetitionOptions::default()
    };
    let t0 = Instant::now();
    let rep = t
        .run_repetition(&suite.tests, 2, &opts, &CancelToken::new())
        .unwrap();
    // Killed at its limit, not after the 600 s sleep.
    assert!(
        t0.elapsed() < Duration::from_secs(300),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(rep.samples.len(), 2);
    for s in &rep.samples {
        assert_eq!(s.status, SampleStatus::Failed);
        let e = s.error.as_deref().unwrap();
        assert!(e.contains("the guest hung"), "{e}");
        assert!(
            e.contains("going to sleep"),
            "the console tail is in the error: {e}"
        );
    }
    t.teardown().unwrap();
    assert_clean(&scratch, &state);
}

#[test]
fn a_guest_panic_fails_the_samples_with_the_panic_message() {
    let _one = serial();
    if !ready() {
        return;
    }
    let suite = suitefile::parse(SUITE, "tiny.toml").unwrap();
    let (_dir, scratch, state) = workdir();
    // No init: the kernel panics ("No working init found" or "Unable to mount root fs").
    let mut t = target(
        &kernel("B").unwrap(),
        "cmdline = \"rdinit=/no-such-init init=/no-such-init\"",
        &scratch,
        &state,
    )
    .unwrap();
    let rep = t
        .run_repetition(
            &suite.tests,
            1,
            &RepetitionOptions::default(),
            &CancelToken::new(),
        )
        .unwrap();
    assert!(rep.facts.is_none());
    assert_eq!(rep.samples.len(), 2);
    for s in &rep.samples {
        assert_eq!(s.status, SampleStatus::Failed);
        let e = s.error.as_deref().unwrap();
        assert!(
            e.contains("did not reach its ready marker") || e.contains("died"),
            "{e}"
        );
        assert!(
            e.contains("Kernel panic"),
            "the panic is in the console tail: {e}"
        );
        assert_eq!(
            s.facts.extra["vm_kernel_path"],
            kernel("B").unwrap().display().to_string()
        );
    }
    t.teardown().unwrap();
    assert_clean(&scratch, &state);
}

#[test]
fn ctrl_c_mid_boot_kills_qemu_and_removes_every_file() {
    let _one = serial();
    if !ready() {
        return;
    }
    let suite = suitefile::parse(SUITE, "tiny.toml").unwrap();
    let (_dir, scratch, state) = workdir();
    let mut t = target(&kernel("A").unwrap(), "", &scratch, &state).unwrap();
    let cancel = CancelToken::new();
    let c = cancel.clone();
    let watcher = std::thread::spawn(move || {
        // Cancel once qemu runs (mid-boot: it needs ~4 s to ready under TCG).
        let t0 = Instant::now();
        while qemu_children().is_empty() && t0.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(800));
        c.cancel();
    });
    let t0 = Instant::now();
    let r = t.run_repetition(&suite.tests, 1, &RepetitionOptions::default(), &cancel);
    watcher.join().unwrap();
    assert!(matches!(r, Err(fsdelta::vm::VmError::Cancelled)), "{r:?}");
    // Cancelled mid-boot, not after a boot and the test: a hang guard, loose for a loaded host.
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
    assert!(qemu_children().is_empty());
    t.teardown().unwrap();
    assert_clean(&scratch, &state);
}

#[test]
fn bad_kernels_and_shapes_are_refused_before_anything_boots() {
    let _one = serial();
    if !ready() {
        return;
    }
    let (dir, scratch, state) = workdir();
    // A kernel without the filesystem's driver: a module tree that has none (but says what
    // is built in).
    let empty = dir.path().join("modules");
    std::fs::create_dir(&empty).unwrap();
    std::fs::write(empty.join("modules.builtin"), "kernel/lib/crc16.ko\n").unwrap();
    let e = target(
        &kernel("A").unwrap(),
        &format!("modules = \"{}\"", empty.display()),
        &scratch,
        &state,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("has no virtio_pci driver (CONFIG_VIRTIO_PCI)"),
        "{e}"
    );
    // Too little memory for the initramfs.
    let e = target(&kernel("A").unwrap(), "memory = \"256M\"", &scratch, &state)
        .unwrap_err()
        .to_string();
    assert!(e.contains("is too little"), "{e}");
    // Not a kernel.
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "not a kernel").unwrap();
    let e = target(&notes, "", &scratch, &state)
        .unwrap_err()
        .to_string();
    assert!(e.contains("is not a kernel"), "{e}");
    assert!(qemu_children().is_empty());
    assert!(state.entries().unwrap().is_empty());
}

#[test]
fn a_fresh_cache_unpacks_the_package_and_probes_kvm_once_without_hanging() {
    let _one = serial();
    if !ready() {
        return;
    }
    if std::env::var_os("FSDELTA_VM_ACCEL").is_some() {
        eprintln!("SKIPPED: FSDELTA_VM_ACCEL is set, so nothing is probed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let scratch = dir.path().join("scratch");
    let state = StateFile::new(dir.path().join("state.json"));
    let config = config_for(&kernel("B").unwrap(), "");
    let t0 = Instant::now();
    let t = VmSite::with_cache(
        &config,
        &scratch,
        state.clone(),
        Path::new(env!("CARGO_BIN_EXE_fsdelta")),
        &cache,
    )
    .unwrap();
    let first = t0.elapsed();
    eprintln!(
        "fresh cache: unpack, extract, initramfs and accelerator probe in {:.1} s ({}; {:?})",
        first.as_secs_f64(),
        t.accel().as_str(),
        t.warnings()
    );
    // Unpacking (~3-7 s), the probe (at most 8 s) and the initramfs: bounded, never a hang.
    assert!(first < Duration::from_secs(60), "{first:?}");
    match t.accel() {
        fsdelta::vm::qemu::Accel::Tcg => assert!(
            t.warnings().iter().any(|w| w.contains("TCG")),
            "a fallback says why: {:?}",
            t.warnings()
        ),
        fsdelta::vm::qemu::Accel::Kvm => assert!(t.warnings().is_empty()),
    }
    assert!(
        t.kernel().pvh,
        "the vmlinux was extracted and has the PVH entry"
    );
    assert!(t.kernel().boot.starts_with(&cache));
    let accel = t.accel();
    let boot = t.kernel().boot.clone();
    let stamp = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).unwrap();
    let made = stamp(&boot);
    t.teardown().unwrap();
    // The second time everything comes from the cache: the same extracted kernel, not written
    // again (what the cache is for; how long it took is only a hang guard, whatever the load).
    let t0 = Instant::now();
    let t = VmSite::with_cache(
        &config,
        &scratch,
        state.clone(),
        Path::new(env!("CARGO_BIN_EXE_fsdelta")),
        &cache,
    )
    .unwrap();
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
    assert_eq!(t.kernel().boot, boot);
    assert_eq!(stamp(&boot), made, "the cached kernel was extracted again");
    assert_eq!(t.accel(), accel);
    t.teardown().unwrap();
    assert_clean(&scratch, &state);
}
