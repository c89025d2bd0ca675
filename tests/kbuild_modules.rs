//! A kernel built from a git tree with a .config that has modules (`CONFIG_MODULES=y`, a driver
//! `=m`): kbuild runs `make modules` and `make modules_install` into its cache entry, and the
//! image it leaves is laid out as an installed system (`boot/bzImage`, `lib/modules/RELEASE`),
//! so that whoever boots the image by its path (`run --kernel IMAGE`, which is what `bisect
//! --kernel` passes for each commit) finds its modules and its config beside it
//! (`vm::kernel::resolve`), as `run` does for a configuration's kernel table. Without
//! CONFIG_MODULES nothing is installed and the guest is told of no modules.
//!
//! So that no test waits for a compiler, the tree is a git repository whose Makefile "builds" a
//! stand-in bzImage (a real x86 boot header with a version string, nothing to boot) and
//! "installs" one module file; everything around make (the worktree, the config, the cache
//! entry, where the guest looks) is fsdelta's real path. Needs git and make; no root.

mod common;

use common::git::git;

use std::path::Path;
use std::process::Command;

/// The stand-in tree's Makefile: the targets kbuild calls, `make -C TREE O=OBJ`.
const MAKEFILE: &str = "\
O ?= .
.PHONY: tinyconfig olddefconfig bzImage modules modules_install kernelrelease
tinyconfig:
\t@echo '# tinyconfig stand-in' > $(O)/.config
olddefconfig:
\t@echo '  olddefconfig'
bzImage:
\t@mkdir -p $(O)/arch/x86/boot && cp image $(O)/arch/x86/boot/bzImage
\t@echo '  BUILD   arch/x86/boot/bzImage'
modules:
\t@mkdir -p $(O)/fs/demo && echo module > $(O)/fs/demo/demo.ko && echo '  LD [M]  fs/demo/demo.ko'
modules_install:
\t@test -f $(O)/fs/demo/demo.ko
\t@mkdir -p $(INSTALL_MOD_PATH)/lib/modules/6.1.0-kbuildtest/kernel/fs/demo
\t@cp $(O)/fs/demo/demo.ko $(INSTALL_MOD_PATH)/lib/modules/6.1.0-kbuildtest/kernel/fs/demo/
\t@echo kernel/fs/demo/demo.ko > $(INSTALL_MOD_PATH)/lib/modules/6.1.0-kbuildtest/modules.order
\t@echo '  INSTALL fs/demo/demo.ko'
kernelrelease:
\t@echo 6.1.0-kbuildtest
";

/// A file with an x86 boot header whose version string is `release`: what
/// `vm::kernel::resolve` reads from a bzImage without booting it.
fn stand_in_bzimage(release: &str) -> Vec<u8> {
    let mut d = vec![0u8; 0x400];
    d[0x202..0x206].copy_from_slice(b"HdrS");
    // kernel_version: the version string's offset minus 0x200.
    d[0x20e..0x210].copy_from_slice(&0x100u16.to_le_bytes());
    let v = format!("{release} (test@example.org) #1 SMP\0");
    d[0x300..0x300 + v.len()].copy_from_slice(v.as_bytes());
    d
}

fn ready() -> bool {
    common::require(
        Command::new("git").arg("--version").output().is_ok()
            && Command::new("make").arg("--version").output().is_ok(),
        "git and make",
    )
}

fn stand_in_tree(tree: &Path) {
    std::fs::create_dir_all(tree).unwrap();
    git(tree, &["init", "-q", "-b", "main"]);
    std::fs::write(tree.join("Makefile"), MAKEFILE).unwrap();
    std::fs::write(tree.join("image"), stand_in_bzimage("6.1.0-kbuildtest")).unwrap();
    // kbuild merges its guest fragment with the kernel's own script; the stand-in's appends.
    std::fs::create_dir_all(tree.join("scripts/kconfig")).unwrap();
    std::fs::write(
        tree.join("scripts/kconfig/merge_config.sh"),
        "cat \"$4\" \"$5\" > \"$3/.config.merged\" && mv \"$3/.config.merged\" \"$3/.config\"\n",
    )
    .unwrap();
    git(tree, &["add", "-A"]);
    git(tree, &["commit", "-qm", "base"]);
}

#[test]
fn a_config_with_modules_installs_them_where_a_guest_booting_the_image_finds_them() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("linux");
    stand_in_tree(&tree);
    let cache = dir.path().join("cache");
    let config = "CONFIG_64BIT=y\nCONFIG_MODULES=y\nCONFIG_EXT4_FS=y\nCONFIG_VIRTIO_BLK=m\n";
    let req = fsdelta::kbuild::Request {
        kernel: fsdelta::kbuild::KernelRef::parse(&format!("{}@main", tree.display())).unwrap(),
        config: Some(config.into()),
        jobs: 1,
        revert: None,
    };
    let built = fsdelta::kbuild::build_in(&cache, &req, &mut |_| {}).unwrap();
    let log = std::fs::read_to_string(&built.log).unwrap();
    assert!(
        log.contains("LD [M]  fs/demo/demo.ko") && log.contains("INSTALL fs/demo/demo.ko"),
        "make modules and modules_install ran:\n{log}"
    );
    let modules = built
        .modules
        .clone()
        .expect("a config with modules installs them");
    assert!(
        modules.starts_with(cache.join("kbuild/built")) && modules.ends_with("6.1.0-kbuildtest"),
        "{}",
        modules.display()
    );
    assert!(modules.join("kernel/fs/demo/demo.ko").is_file());

    // The image alone (what `bisect --kernel` passes to `run --kernel`) leads to its modules
    // and its config.
    let vm_cache = dir.path().join("vm-cache");
    let k = fsdelta::vm::kernel::resolve(&built.image, None, &vm_cache).unwrap();
    assert_eq!(k.release, "6.1.0-kbuildtest");
    assert_eq!(k.modules.as_deref(), Some(modules.as_path()));
    let seen = fsdelta::vm::kernel::config_text(&k).expect("the config beside the image");
    assert_eq!(
        fsdelta::vm::kernel::config_value(&seen, "VIRTIO_BLK"),
        Some('m')
    );

    // From the cache the second time, with the same modules.
    let again = fsdelta::kbuild::build_in(&cache, &req, &mut |_| panic!("built again")).unwrap();
    assert!(again.cached);
    assert_eq!(again.modules, built.modules);
}

#[test]
fn a_config_without_modules_installs_none() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("linux");
    stand_in_tree(&tree);
    let cache = dir.path().join("cache");
    let req = fsdelta::kbuild::Request {
        kernel: fsdelta::kbuild::KernelRef::parse(&format!("{}@main", tree.display())).unwrap(),
        // kbuild's default: tinyconfig plus the guest fragment, which has CONFIG_MODULES=n.
        config: None,
        jobs: 1,
        revert: None,
    };
    let built = fsdelta::kbuild::build_in(&cache, &req, &mut |_| {}).unwrap();
    assert_eq!(built.modules, None);
    let log = std::fs::read_to_string(&built.log).unwrap();
    assert!(!log.contains("fs/demo/demo.ko"), "{log}");
    let k = fsdelta::vm::kernel::resolve(&built.image, None, &dir.path().join("vm-cache")).unwrap();
    assert_eq!(k.modules, None, "no modules beside the image");
    let seen = fsdelta::vm::kernel::config_text(&k).expect("the config beside the image");
    assert!(seen.contains("CONFIG_VIRTIO_BLK=y"), "{seen}");
}
