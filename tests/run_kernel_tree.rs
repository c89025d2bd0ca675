//! `fsdelta run --kernel TREE@base --kernel TREE@patched` and a configuration's `kernel = {
//! tree, commit, config }`: each commit is built by kbuild in fsdelta's own worktree (cached
//! under FSDELTA_CACHE_DIR), then booted in a QEMU guest. So that no test waits 20 minutes
//! for a compiler, the tree is a git repository whose Makefile "builds" by unpacking the
//! Debian test kernel (FSDELTA_VM_KERNEL_A, a linux-image .deb) into the place a kernel build
//! leaves its image, and "installs" the package's modules: everything around the compiler
//! (the worktree, the stages, the log, the cache, the modules, the boot) is fsdelta's real
//! path. A tree that is not a git tree, a commit the tree lacks and a missing .config are
//! refused with the fix.
//!
//! Needs root, qemu-system-x86, busybox-static, dpkg-deb, git and the kernel package (see
//! .ci/run); skipped, saying why, without them unless FSDELTA_REQUIRE_ALL=1. Boots three
//! guests (TCG here).

mod common;

use common::vm_kernel as kernel;
use std::path::Path;
use std::process::Command;

/// The stand-in kernel tree's Makefile: the targets kbuild calls, `make -C TREE O=OBJ`.
const MAKEFILE: &str = "\
# A stand-in for a kernel tree (tests/run_kernel_tree.rs): `bzImage` unpacks the Debian
# kernel package $(FSDELTA_TEST_DEB) instead of compiling one.
O ?= .
.PHONY: tinyconfig olddefconfig bzImage modules modules_install kernelrelease
tinyconfig:
\t@echo '# tinyconfig stand-in' > $(O)/.config
olddefconfig:
\t@grep -q '^CONFIG_MODULES=y' $(O)/.config || echo CONFIG_MODULES=y >> $(O)/.config
bzImage:
\t@rm -rf $(O)/deb && mkdir -p $(O)/deb $(O)/arch/x86/boot
\t@dpkg-deb -x $(FSDELTA_TEST_DEB) $(O)/deb
\t@cp $(O)/deb/boot/vmlinuz-* $(O)/arch/x86/boot/bzImage
\t@echo \"  BZIMAGE arch/x86/boot/bzImage ($$(cat version))\"
modules: bzImage
\t@echo '  MODPOST the package'\"'\"'s modules'
modules_install:
\t@mkdir -p $(INSTALL_MOD_PATH)/lib/modules
\t@cp -a $(O)/deb/lib/modules/. $(INSTALL_MOD_PATH)/lib/modules/
kernelrelease:
\t@ls $(O)/deb/lib/modules
";

fn git(tree: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(tree)
        .args(args)
        .env("GIT_AUTHOR_NAME", "Ada Tester")
        .env("GIT_AUTHOR_EMAIL", "ada@example.org")
        .env("GIT_COMMITTER_NAME", "Ada Tester")
        .env("GIT_COMMITTER_EMAIL", "ada@example.org")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// The stand-in tree at `tree`: tags `base` and `patched`.
fn stand_in_tree(tree: &Path) {
    std::fs::create_dir_all(tree.join("scripts/kconfig")).unwrap();
    git(tree, &["init", "-q", "-b", "main"]);
    std::fs::write(tree.join("Makefile"), MAKEFILE).unwrap();
    // kbuild merges its guest fragment with the kernel's own script; the stand-in's appends.
    std::fs::write(
        tree.join("scripts/kconfig/merge_config.sh"),
        "cat \"$4\" \"$5\" > \"$3/.config.merged\" && mv \"$3/.config.merged\" \"$3/.config\"\n",
    )
    .unwrap();
    std::fs::write(tree.join("version"), "base\n").unwrap();
    git(tree, &["add", "-A"]);
    git(tree, &["commit", "-qm", "base"]);
    git(tree, &["tag", "base"]);
    std::fs::write(tree.join("version"), "patched\n").unwrap();
    git(tree, &["commit", "-qam", "the patch"]);
    git(tree, &["tag", "patched"]);
}

fn ready() -> bool {
    common::require(common::is_root(), "root")
        && common::require_qemu()
        && common::require(
            Command::new("dpkg-deb").arg("--version").output().is_ok()
                && Command::new("git").arg("--version").output().is_ok(),
            "dpkg-deb and git",
        )
        && common::require(
            kernel("A").is_some(),
            "the linux-image-6.1.0-47 .deb in /var/cache/fsdelta-ci/kernels (see .ci/run)",
        )
}

const ONE: &str =
    "[[test]]\nname = \"files\"\nworkload = \"fsmark\"\nargs = \"-s 4096 -n 100 -t 1 -S 0\"\n";

#[test]
fn run_builds_and_boots_kernels_named_as_commits_of_a_git_tree() {
    if !ready() {
        return;
    }
    let deb = kernel("A").unwrap();
    let s = common::Setup::in_dir(
        tempfile::tempdir_in("/var/tmp").unwrap(),
        "ab.toml",
        "\n[[config]]\nname = \"e4\"\nfs = \"ext4\"\ndevice = \"loop:512M\"\n",
        "one.toml",
        ONE,
    );
    let tree = s.p("linux");
    stand_in_tree(&tree);
    let cmd = || {
        let mut c = s.cmd();
        c.env("FSDELTA_CACHE_DIR", s.p("cache"))
            .env("FSDELTA_TEST_DEB", &deb);
        c
    };
    let run = |config: &Path, kernels: &[String]| {
        let mut c = cmd();
        c.args(["run", "-n", "1", "--no-drop-caches", "--config"])
            .arg(config)
            .arg("--suite")
            .arg(s.p("one.toml"));
        for k in kernels {
            c.args(["--kernel", k]);
        }
        c.output().unwrap()
    };
    let at = |commit: &str| format!("{}@{commit}", tree.display());

    // Mistakes are refused before anything is built or booted, with the fix.
    let plain = s.p("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let out = run(&s.p("ab.toml"), &[format!("{}@base", plain.display())]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "is not a git tree (no .git there): name the top directory of a kernel git checkout"
        ),
        "{err}"
    );
    let out = run(&s.p("ab.toml"), &[at("base"), at("v9.9")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("has no commit \"v9.9\"") && err.contains("log --oneline"),
        "{err}"
    );

    // Two commits: each built (in fsdelta's worktree, not the user's checkout), booted, compared.
    let out = run(&s.p("ab.toml"), &[at("base"), at("patched")]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "{stdout}\n{stderr}"
    );
    for commit in ["base", "patched"] {
        assert!(
            stderr.contains(&format!("fsdelta: kernel {} is ", at(commit))),
            "{stderr}"
        );
        assert!(
            stdout.contains(&format!("1@e4-linux-{commit}")),
            "the closing comparison names both commits' configurations:\n{stdout}"
        );
    }
    let st = Command::new("git")
        .arg("-C")
        .arg(&tree)
        .args(["status", "--porcelain"])
        .output()
        .unwrap();
    assert!(st.stdout.is_empty(), "the user's checkout was touched");
    let json = cmd()
        .args(["export", "1", "--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let samples = doc["runs"][0]["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2, "2 commits x 1 test x 1 repetition");
    let release =
        fsdelta::vm::kernel::release_of_deb_name(&deb.file_name().unwrap().to_string_lossy())
            .unwrap();
    for x in samples {
        assert_eq!(x["status"], "ok", "{x}\n{stderr}");
        // The guest booted the built image, with the modules its build installed.
        assert_eq!(x["facts"]["extra"]["vm_kernel"], release.as_str(), "{x}");
        let path = x["facts"]["extra"]["vm_kernel_path"].as_str().unwrap();
        assert!(
            path.starts_with(&s.p("cache/kbuild/built").display().to_string())
                && path.ends_with("/bzImage"),
            "{path}"
        );
    }
    let listed = cmd().arg("kernels").output().unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(
        listed.lines().filter(|l| l.contains(" built ")).count(),
        2,
        "{listed}"
    );

    // A configuration's kernel table: relative tree and .config, from the file's directory.
    std::fs::write(s.p("guest.config"), "CONFIG_64BIT=y\nCONFIG_MODULES=y\n").unwrap();
    let table = |config: &str| {
        format!(
            "scratch = \"{}\"\n[[config]]\nname = \"e4p\"\nfs = \"ext4\"\ndevice = \"loop:512M\"\nkernel = {{ tree = \"linux\", commit = \"patched\", config = \"{config}\" }}\n",
            s.p("scratch").display()
        )
    };
    std::fs::write(s.p("missing.toml"), table("nothing.config")).unwrap();
    let out = run(&s.p("missing.toml"), &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("config 'e4p': reading the kernel's .config")
            && err.contains("nothing.config"),
        "{err}"
    );
    std::fs::write(s.p("table.toml"), table("guest.config")).unwrap();
    let out = run(&s.p("table.toml"), &[]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("fsdelta: kernel linux@patched is "),
        "{stderr}"
    );
    // Another config is another build: the cache holds three.
    let listed = cmd().arg("kernels").output().unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(
        listed.lines().filter(|l| l.contains(" built ")).count(),
        3,
        "{listed}"
    );
    s.assert_scratch_empty();
    s.assert_state_empty();
}
