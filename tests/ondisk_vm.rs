//! What a sample left on disk, measured inside a kernel guest (issue 39): the guest runs the
//! same sample step as the host, with only what its initramfs has (statfs, syncfs, FIEMAP,
//! sysfs), so a fio job on an ext4 disk of a Debian 6.1 guest comes back with its extents per
//! file, ext4's own counters and the space it used, and `compress_ratio` absent with the reason;
//! with the suite's `ondisk_remount = true`, the guest mounts its disk again after the sample
//! and maps it again (`..._remounted`), in the same boot.
//!
//! Needs root, qemu-system-x86, busybox-static and the linux-image-6.1.0-47 .deb (see .ci/run);
//! skipped, saying why, without them unless FSDELTA_REQUIRE_ALL=1.

mod common;

use common::ondisk;

const SUITE: &str = "ondisk_remount = true\n[[test]]\nname = \"w\"\nworkload = \"fio\"\njob = \"\"\"\nrw=randwrite\nbs=4k\nsize=16m\nio_size=2m\nfallocate=native\nrandseed=7\nend_fsync=1\n\"\"\"\n";

#[test]
fn a_guest_sample_carries_its_on_disk_metrics() {
    if !(common::require(common::is_root(), "root")
        && common::require_qemu()
        && common::require(
            common::vm_kernel("A").is_some(),
            "the linux-image-6.1.0-47 .deb in /var/cache/fsdelta-ci/kernels (see .ci/run)",
        ))
    {
        return;
    }
    let kernel = common::vm_kernel("A").unwrap();
    let s = ondisk::setup(
        "fsdelta-ondisk-vm-",
        &format!(
            "[[config]]\nname = \"k47\"\nfs = \"ext4\"\ndevice = \"loop:256M\"\nkernel = \"{}\"\nmemory = \"1G\"\n",
            kernel.display()
        ),
        SUITE,
    );
    ondisk::run(&s, 1);
    let all = ondisk::samples(&s);
    let x = &all[0];
    assert_eq!(x["facts"]["extra"]["vm_kernel"], "6.1.0-47-amd64");
    let metric = |n: &str| ondisk::metric(x, n);
    let absent = x["facts"]["extra"]["ondisk_absent"]
        .as_str()
        .unwrap_or("")
        .to_string();
    for n in [
        "fs_used_bytes_after",
        "space_amplification",
        "mapped_files",
        "extents_per_file_max",
        "ext4_lifetime_write_kbytes",
        "ext4_errors",
        "ondisk_s",
        "write_amplification",
    ] {
        assert!(
            metric(n).is_some(),
            "{n} missing in the guest; absent: {absent}; {x}"
        );
    }
    // 512 random 4 KiB writes into a 16 MiB preallocated file: many extents.
    assert!(metric("extents_per_file_max").unwrap() > 50.0, "{x}");
    // ondisk_remount: the guest mounted its disk again after the sample and mapped the file
    // again, free space too. Not necessarily the same count: ext4 of 6.1 mapped 400 extents
    // from memory and 402 from the disk read afresh (the maps' own difference, which is why
    // fsperf remounts).
    let again =
        metric("extents_per_file_max_remounted").unwrap_or_else(|| panic!("absent: {absent}; {x}"));
    eprintln!(
        "extents_per_file_max {} after the workload, {again} after a remount",
        metric("extents_per_file_max").unwrap()
    );
    assert!(again > 50.0, "{x}");
    assert_eq!(metric("mapped_files_remounted"), Some(1.0), "{x}");
    assert!(
        metric("free_space_extents_remounted").is_some_and(|v| v >= 1.0),
        "{absent}"
    );
    assert!(metric("ondisk_remounted_s").is_some(), "{x}");
    assert!(
        x["facts"]["extra"]["umount_s_syncfs_s"].as_str().is_some(),
        "the syncfs counts in umount_s: {x}"
    );
    assert!(metric("compress_ratio").is_none());
    assert!(
        absent.contains("compress_ratio: ext4 does not compress"),
        "{absent}"
    );
    s.assert_scratch_empty();
    s.assert_state_empty();
}
