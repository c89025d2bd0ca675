//! A suite's test runs in the target directory and its samples are stored with the target's
//! filesystem and device, so a path that leaves the target (fio `directory=/abs`,
//! `filename=../../x`, fs_mark `-d /abs`, ...) is refused before anything runs, naming the test,
//! the option and the path, and the file outside is left as it was. A relative subdirectory
//! still runs. (Issue 33, item 4.)

mod common;

use common::{fsdelta, require};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every file below `dir` with its bytes (but the suite file and the store the test writes).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                stack.push(p);
            } else if name != "s.toml" && !name.starts_with("r.sqlite") {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// A temporary tree: `outside/victim` (a file a job must not touch) and the target `a/t`.
struct Tree {
    tmp: tempfile::TempDir,
}

impl Tree {
    fn new() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("outside")).unwrap();
        std::fs::write(tmp.path().join("outside/victim"), b"keep me\n").unwrap();
        std::fs::write(tmp.path().join("x"), b"keep me too\n").unwrap();
        std::fs::create_dir_all(tmp.path().join("a/t")).unwrap();
        Tree { tmp }
    }
    fn path(&self, p: &str) -> PathBuf {
        self.tmp.path().join(p)
    }
    fn outside(&self) -> String {
        self.path("outside").display().to_string()
    }
    /// Write the suite, run it on the target, and return (exit code, stdout + stderr).
    fn run(&self, suite: &str) -> (i32, String) {
        let file = self.path("s.toml");
        std::fs::write(&file, suite).unwrap();
        let out = common::run_suite(
            &self.path("r.sqlite"),
            &["--no-drop-caches"],
            &file,
            &self.path("a/t"),
        )
        .output()
        .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    }
    /// Run `suite`, which must be refused before anything runs with every fragment of `want`,
    /// leaving every file outside the target as it was.
    fn refused(&self, suite: &str, want: &[&str]) {
        let before = snapshot(self.tmp.path());
        let (code, text) = self.run(suite);
        assert_ne!(code, 0, "{text}");
        for w in want {
            assert!(text.contains(w), "missing {w:?} in:\n{text}");
        }
        assert!(
            text.contains("leaves the target directory")
                && text.contains("use a path relative to the target"),
            "{text}"
        );
        let target = format!(
            "the target here: a scratch directory inside {}",
            self.path("a/t").display()
        );
        assert!(text.contains(&target), "the target is named: {text}");
        let after = snapshot(self.tmp.path());
        assert_eq!(
            before.keys().collect::<Vec<_>>(),
            after.keys().collect::<Vec<_>>(),
            "files appeared or vanished: {text}"
        );
        assert_eq!(before, after, "a file changed: {text}");
        assert!(!self.path("r.sqlite").exists() || no_samples(&self.path("r.sqlite")));
    }
}

/// Whether the store holds no sample (a refused suite stores nothing).
fn no_samples(db: &Path) -> bool {
    let out = fsdelta(db).args(["list"]).output().unwrap();
    !String::from_utf8_lossy(&out.stdout).contains("complete")
}

#[test]
fn a_fio_directory_outside_the_target_is_refused_before_it_runs() {
    let t = Tree::new();
    let suite = format!(
        "[[test]]\nname = \"far\"\nworkload = \"fio\"\njob = \"\"\"\nrw=write\nbs=4k\nsize=64k\ndirectory={}\n\"\"\"\n",
        t.outside()
    );
    t.refused(
        &suite,
        &["test far", &format!("option 'directory={}'", t.outside())],
    );
}

#[test]
fn a_fio_filename_climbing_out_is_refused_and_the_file_is_unchanged() {
    let t = Tree::new();
    for name in ["../../x", "../../../x", "../../outside/victim"] {
        let suite = format!(
            "[[test]]\nname = \"up\"\nworkload = \"fio\"\njob = \"\"\"\nrw=write\nbs=4k\nsize=64k\nfilename={name}\n\"\"\"\n"
        );
        t.refused(&suite, &["test up", &format!("option 'filename={name}'")]);
    }
    let victim = format!("{}/victim", t.outside());
    let suite = format!(
        "[[test]]\nname = \"abs\"\nworkload = \"fio\"\njob = \"\"\"\nrw=write\nbs=4k\nsize=64k\nfilename={victim}\n\"\"\"\n"
    );
    t.refused(&suite, &["test abs", &format!("'filename={victim}'")]);
}

#[test]
fn a_fio_log_or_job_name_outside_the_target_is_refused() {
    let t = Tree::new();
    let log = format!("{}/bw", t.outside());
    let suite = format!(
        "[[test]]\nname = \"lg\"\nworkload = \"fio\"\njob = \"\"\"\nrw=write\nbs=4k\nsize=64k\nwrite_bw_log={log}\n\"\"\"\n"
    );
    t.refused(&suite, &["test lg", &format!("'write_bw_log={log}'")]);
    let suite = "[[test]]\nname = \"nm\"\nworkload = \"fio\"\njob = \"\"\"\n[../../../x]\nrw=write\nbs=4k\nsize=64k\n\"\"\"\n";
    t.refused(suite, &["test nm", "job name '../../../x'"]);
}

#[test]
fn an_external_fio_job_outside_the_target_is_refused() {
    let t = Tree::new();
    let suite = format!(
        "[[test]]\nname = \"ext\"\nworkload = \"fio\"\nengine = \"external\"\njob = \"\"\"\nrw=write\nbs=4k\nsize=64k\nopendir={}\n\"\"\"\n",
        t.outside()
    );
    t.refused(
        &suite,
        &["test ext", &format!("option 'opendir={}'", t.outside())],
    );
}

#[test]
fn fs_mark_d_or_l_outside_the_target_is_refused() {
    let t = Tree::new();
    let suite = format!(
        "[[test]]\nname = \"fm\"\nworkload = \"fsmark\"\nargs = \"-s 4096 -n 20 -t 1 -S 0 -d {}\"\n",
        t.outside()
    );
    t.refused(
        &suite,
        &["test fm", &format!("fs_mark option -d {}", t.outside())],
    );
    let suite = "[[test]]\nname = \"fm2\"\nworkload = \"fsmark\"\nargs = \"-s 0 -n 20 -d sub -d ../../..\"\n";
    t.refused(suite, &["test fm2", "fs_mark option -d ../../.."]);
    let log = format!("{}/log", t.outside());
    let suite = format!(
        "[[test]]\nname = \"fm3\"\nworkload = \"fsmark\"\nengine = \"external\"\nargs = \"-s 0 -n 20 -l {log}\"\n"
    );
    t.refused(&suite, &["test fm3", &format!("fs_mark option -l {log}")]);
}

#[test]
fn relative_subdirectories_inside_the_target_still_run() {
    let t = Tree::new();
    let before = snapshot(&t.path("outside"));
    let suite = "[[test]]\nname = \"fio_sub\"\nworkload = \"fio\"\njob = \"\"\"\nrw=write\nbs=4k\nsize=64k\ndirectory=sub\nfilename=data:more/../other\n\"\"\"\n\
                 [[test]]\nname = \"fm_sub\"\nworkload = \"fsmark\"\nargs = \"-s 0 -n 20 -t 2 -S 0 -d one -d two\"\n";
    // fio's `directory=sub` must exist, as in fio.
    let suite = suite.replace("directory=sub\n", "directory=.\n");
    let (code, text) = t.run(&suite);
    assert_eq!(code, 0, "{text}");
    let out = fsdelta(&t.path("r.sqlite"))
        .args(["list"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("complete"));
    assert_eq!(before, snapshot(&t.path("outside")));
}

#[test]
fn external_dbench_loadfile_climbing_out_is_refused() {
    if !require(
        Path::new("/usr/bin/dbench").exists(),
        "dbench (apt-get install dbench)",
    ) {
        return;
    }
    let t = Tree::new();
    let load = t.path("load.txt");
    std::fs::write(
        &load,
        "0 NTCreateX \"\\..\\..\\..\\x\" 0x0 0x0 1 NT_STATUS_OK\n",
    )
    .unwrap();
    let suite = format!(
        "[[test]]\nname = \"db\"\nworkload = \"dbench\"\nengine = \"external\"\nclients = 1\ntime = 1\nloadfile = \"{}\"\n",
        load.display()
    );
    let before = snapshot(t.tmp.path());
    let (code, text) = t.run(&suite);
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("test db"), "{text}");
    assert!(
        text.contains("climbs out of the client's directory"),
        "{text}"
    );
    assert_eq!(before, snapshot(t.tmp.path()));
}

/// A symlink already inside the target (here in an erofs image's tree) that leads out is
/// refused when the sample starts, naming the path, where it leads and the target: the read
/// would have measured the host's filesystem under the erofs facts.
#[test]
fn a_symlink_in_an_erofs_tree_that_leads_out_fails_the_sample() {
    let has_mkfs = std::process::Command::new("mkfs.erofs")
        .arg("-V")
        .output()
        .is_ok();
    let _ = std::process::Command::new("modprobe").arg("erofs").status();
    let in_kernel = std::fs::read_to_string("/proc/filesystems")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().last() == Some("erofs"));
    if !require(
        common::is_root() && has_mkfs && in_kernel && Path::new("/dev/loop-control").exists(),
        "root, loop devices, erofs in the kernel and mkfs.erofs (Debian erofs-utils)",
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, vec![7u8; 1 << 20]).unwrap();
    let src = tmp.path().join("tree");
    std::fs::create_dir_all(&src).unwrap();
    std::os::unix::fs::symlink(&victim, src.join("data.bin")).unwrap();
    let cfg = tmp.path().join("c.toml");
    std::fs::write(
        &cfg,
        format!(
            "scratch = \"{}\"\n[[config]]\nname = \"ro\"\nfs = \"erofs\"\nsource = \"{}\"\n",
            tmp.path().join("scratch").display(),
            src.display()
        ),
    )
    .unwrap();
    let suite = tmp.path().join("s.toml");
    std::fs::write(
        &suite,
        "[[test]]\nname = \"seqread\"\nworkload = \"fio\"\n\
         job = \"\"\"\n[seq]\nrw=read\nbs=4k\nfilename=data.bin\n\"\"\"\n",
    )
    .unwrap();
    let db = tmp.path().join("r.sqlite");
    let out = fsdelta(&db)
        .args(["run", "-n", "1", "--quiet", "--config"])
        .arg(&cfg)
        .arg("--suite")
        .arg(&suite)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains(&format!(
            "'data.bin' leads through a symlink to {}, outside the target directory",
            victim.display()
        )),
        "{text}"
    );
    let doc = common::export_latest(fsdelta(&db));
    for s in doc["runs"][0]["samples"].as_array().unwrap() {
        assert_ne!(s["status"], "ok", "{s}");
    }
}
