//! A forced KVM (`FSDELTA_VM_ACCEL=kvm`) where KVM cannot run the kernel ends the boot as soon
//! as qemu says so (it exits, or it reports a "KVM internal error" and pauses the guest), never
//! after the 120 s ready timeout; where KVM works, the guest boots under it. Either way no qemu
//! is left behind.
//!
//! Its own test binary: it sets FSDELTA_VM_ACCEL for the whole process. Needs root, qemu, the
//! kernel package and an openable /dev/kvm (else skipped, saying why, unless
//! FSDELTA_REQUIRE_ALL=1).

mod common;

use fsdelta::model::SampleStatus;
use fsdelta::plan::{config, suitefile};
use fsdelta::site::StateFile;
use fsdelta::vm::qemu::Accel;
use fsdelta::vm::{RepetitionOptions, VmSite};
use fsdelta::workload::CancelToken;
use std::path::Path;
use std::time::Duration;

#[test]
fn a_forced_kvm_that_cannot_run_the_kernel_fails_at_once_not_at_the_ready_timeout() {
    let kvm = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok();
    if !(common::require(common::is_root(), "root")
        && common::require_qemu()
        && common::require(common::vm_kernel("A").is_some(), "the 6.1.0-47 kernel .deb")
        && common::require(kvm, "an openable /dev/kvm"))
    {
        return;
    }
    // SAFETY: this test binary has one test; nothing else reads the environment meanwhile.
    unsafe { std::env::set_var("FSDELTA_VM_ACCEL", "kvm") };
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    let state = StateFile::new(dir.path().join("state.json"));
    let config = config::parse(
        &format!(
            "[[config]]\nname = \"k\"\nfs = \"ext4\"\ndevice = \"loop:128M\"\nkernel = \"{}\"\nmemory = \"1G\"\n",
            common::vm_kernel("A").unwrap().display()
        ),
        "t.toml",
    )
    .unwrap()
    .configs
    .remove(0);
    let suite = suitefile::parse(
        "[[test]]\nname = \"files\"\nworkload = \"fsmark\"\nargs = \"-s 4096 -n 20 -t 1 -S 0\"\n",
        "t.toml",
    )
    .unwrap();
    let mut vm = VmSite::new(
        &config,
        &scratch,
        state.clone(),
        Path::new(env!("CARGO_BIN_EXE_fsdelta")),
    )
    .unwrap();
    assert_eq!(vm.accel(), Accel::Kvm);
    let rep = vm
        .run_repetition(
            &suite.tests,
            1,
            &RepetitionOptions {
                ready_timeout: Duration::from_secs(120),
                ..Default::default()
            },
            &CancelToken::new(),
        )
        .unwrap();
    let s = &rep.samples[0];
    if s.status == SampleStatus::Ok {
        eprintln!("KVM works here: the guest booted under it");
        assert_eq!(s.facts.extra["vm_accel"], "kvm");
    } else {
        let e = s.error.as_deref().unwrap_or_default();
        eprintln!(
            "forced KVM failed: {}",
            e.lines().next().unwrap_or_default()
        );
        assert!(
            !e.contains("did not reach its ready marker"),
            "a forced KVM waited for the ready timeout: {e}"
        );
        assert!(e.contains("died"), "{e}");
    }
    vm.teardown().unwrap();
    assert!(common::qemu_of(std::process::id()).is_empty());
    assert!(state.entries().unwrap().is_empty(), "{:?}", state.entries());
}
