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
//! `fsdelta bisect --kernel` runs on the same stand-in (a commit's file `deb` names the package
//! it "builds"), to its closing compare of culprit^ and culprit.
//!
//! Needs root, qemu-system-x86, busybox-static, dpkg-deb, git and the kernel packages (see
//! .ci/run); skipped, saying why, without them unless FSDELTA_REQUIRE_ALL=1. Boots 3 + 9
//! guests, the two tests side by side (each guest is one QEMU thread under TCG; the bisection's
//! planted change, a 4 s wait against 1 s, is far beyond what sharing the cores moves).

mod common;

use common::git::git;

use common::vm_kernel as kernel;
use std::path::Path;
use std::process::Command;

/// The stand-in kernel tree's Makefile: the targets kbuild calls, `make -C TREE O=OBJ`.
const MAKEFILE: &str = "\
# A stand-in for a kernel tree (tests/run_kernel_tree.rs): `bzImage` unpacks the Debian
# kernel package the commit's file `deb` names, else $(FSDELTA_TEST_DEB), instead of compiling one.
O ?= .
DEB := $(if $(wildcard deb),$(shell cat deb),$(FSDELTA_TEST_DEB))
.PHONY: tinyconfig olddefconfig bzImage modules modules_install kernelrelease
tinyconfig:
\t@echo '# tinyconfig stand-in' > $(O)/.config
olddefconfig:
\t@grep -q '^CONFIG_MODULES=y' $(O)/.config || echo CONFIG_MODULES=y >> $(O)/.config
bzImage:
\t@rm -rf $(O)/deb && mkdir -p $(O)/deb $(O)/arch/x86/boot
\t@dpkg-deb -x $(DEB) $(O)/deb
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

/// A command test whose number is the guest kernel's: it waits 1 s on most kernels and 4 s on
/// 6.1.0-50 (which the stand-in tree's last commit "builds"), and reports how long it waited,
/// timed by bash's own clock around a builtin wait (`read -t` on a FIFO it holds open), so that
/// no process start is timed: the two sides differ by far more than a loaded machine's noise
/// at two runs a side.
const NAP: &str = r#"[[test]]
name = "nap"
workload = "command"
command = """
mkfifo f && bash -c '
case $(uname -r) in 6.1.0-50-*) t=4 ;; *) t=1 ;; esac
exec 9<>f
s=${EPOCHREALTIME/[.,]/}; read -t $t -u 9; e=${EPOCHREALTIME/[.,]/}
echo "slept $(( (e - s) / 1000 )) ms"'
"""
[[test.metric]]
name = "slept_ms"
regex = 'slept (\d+) ms'
unit = "ms"
direction = "lower"
required = true
"#;

/// `fsdelta bisect --kernel` to its end on the stand-in tree: the ends, the confirmation of the
/// culprit against its parent, and the closing `compare` of culprit^ and culprit. Each commit's
/// runs name their configuration after its kernel build (`e4-<commit12>-<key>`), so the two
/// labels share no configuration: the compare must pair them `LABEL@CONFIG` and judge the
/// followed metric (before 06eea0b it said "no metric is present on both sides"). One candidate
/// commit, two runs a side: 9 guest boots (a warm-up, 4 for the ends, 4 for the confirmation).
#[test]
fn a_kernel_bisection_ends_with_the_compare_of_the_culprit_and_its_parent() {
    if !ready()
        || !common::require(
            kernel("B").is_some(),
            "the linux-image-6.1.0-50 .deb in /var/cache/fsdelta-ci/kernels (see .ci/run)",
        )
    {
        return;
    }
    let (a, b) = (kernel("A").unwrap(), kernel("B").unwrap());
    let s = common::Setup::in_dir(
        tempfile::tempdir_in("/var/tmp").unwrap(),
        "guest.toml",
        "\n[[config]]\nname = \"e4\"\nfs = \"ext4\"\ndevice = \"loop:256M\"\n",
        "nap.toml",
        NAP,
    );
    let tree = s.p("linux");
    stand_in_tree(&tree);
    std::fs::write(tree.join("deb"), format!("{}\n", b.display())).unwrap();
    git(&tree, &["add", "deb"]);
    git(&tree, &["commit", "-qm", "ext4: sleep longer"]);
    let hash = |rev: &str| git(&tree, &["rev-parse", rev]).trim().to_string();
    let (good, bad) = (hash("patched"), hash("HEAD"));
    let out = s
        .cmd()
        .env("FSDELTA_CACHE_DIR", s.p("cache"))
        .env("FSDELTA_TEST_DEB", &a)
        .args(["bisect", "--kernel", "--name", "kb", "--repo"])
        .arg(&tree)
        .args(["--good", "patched", "--bad", "main", "--config"])
        .arg(s.p("guest.toml"))
        .arg("--suite")
        .arg(s.p("nap.toml"))
        .args(["--metric", "slept_ms", "-n", "2", "--max-reps", "4"])
        .arg("--no-drop-caches")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}\n--- stderr ---\n{stderr}");
    let log = s.cmd().args(["bisect", "log", "kb"]).output().unwrap();
    let log = String::from_utf8_lossy(&log.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "bisect named no culprit; its log:\n{log}"
    );
    assert!(stdout.contains(&format!("culprit: {bad}")), "{stdout}");
    assert!(stdout.contains("subject: ext4: sleep longer"), "{stdout}");
    // The closing compare pairs each label with its own configuration, the kernel's build.
    let tag = |commit: &str| {
        let dir = std::fs::read_dir(s.p("cache/kbuild/built"))
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|n| n.starts_with(&commit[..12]))
            .unwrap_or_else(|| panic!("no build of {commit} in the cache"));
        format!("label:bisect/kb/{}@e4-{dir}", &commit[..12])
    };
    let header = format!(
        "culprit^ against culprit (fsdelta compare {} {}):",
        tag(&good),
        tag(&bad)
    );
    let Some(at) = stdout.find(&header) else {
        panic!("no closing compare headed {header:?}:\n{stdout}");
    };
    let compare = &stdout[at..];
    assert!(
        !compare.contains("no metric is present on both sides"),
        "{compare}"
    );
    let row = compare
        .lines()
        .find(|l| l.split_whitespace().next() == Some("slept_ms"))
        .unwrap_or_else(|| panic!("no slept_ms row:\n{compare}"));
    assert!(row.contains("REGRESSED"), "{row}");
    // `bisect report` shows the same compare from the stored runs.
    let report = s.cmd().args(["bisect", "report", "kb"]).output().unwrap();
    assert!(String::from_utf8_lossy(&report.stdout).contains(&header));
    s.assert_scratch_empty();
    s.assert_state_empty();
}
