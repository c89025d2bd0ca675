//! The test catalogue (every `tests/catalogue/*.toml`, in name order; `cases.toml` describes the
//! format): bad inputs and unsafe requests, each run
//! through the real binary in a temporary directory of its own, checking the exit code, a
//! message fragment, and that what must not change (files, a database, a victim device's first
//! MiB) did not. The format is described at the top of the data file.
//!
//! Cases marked `root` need root and loop devices (a victim loop device is attached to an image
//! in the case's directory); without them they are skipped with a reason, unless
//! FSDELTA_REQUIRE_ALL=1.

mod common;

use serde::Deserialize;
use std::collections::BTreeMap;
use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Read;
use std::path::{Path, PathBuf};

#[derive(Debug, Deserialize)]
struct Catalogue {
    case: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    args: Vec<String>,
    #[serde(default)]
    files: BTreeMap<String, String>,
    #[serde(default)]
    sqlite: BTreeMap<String, String>,
    store: Option<String>,
    #[serde(default)]
    modes: BTreeMap<String, u32>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    env_remove: Vec<String>,
    exit: i32,
    message: String,
    #[serde(default)]
    once: bool,
    #[serde(default)]
    unchanged: Vec<String>,
    #[serde(default)]
    absent: Vec<String>,
    #[serde(default)]
    root: bool,
}

fn digest(bytes: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

fn first_mib(dev: &Path) -> u64 {
    let mut buf = vec![0u8; 1 << 20];
    fs::File::open(dev).unwrap().read_exact(&mut buf).unwrap();
    digest(&buf)
}

/// A victim loop device on an image in the case's directory, with a pattern in its first MiB.
struct Victim {
    dev: Option<fsdelta::site::loopdev::AttachedLoop>,
    state: fsdelta::site::StateFile,
}

impl Victim {
    fn attach(dir: &Path) -> Victim {
        let state = fsdelta::site::StateFile::new(dir.join("victim-state/leftovers.json"));
        let image = dir.join("victim.img");
        let pattern: Vec<u8> = (0..1u32 << 20).map(|i| (i % 253) as u8).collect();
        fs::write(&image, &pattern).unwrap();
        fs::OpenOptions::new()
            .write(true)
            .open(&image)
            .unwrap()
            .set_len(400 << 20)
            .unwrap();
        let dev = fsdelta::site::loopdev::AttachedLoop::attach(&image, &state).unwrap();
        Victim {
            dev: Some(dev),
            state,
        }
    }

    fn path(&self) -> PathBuf {
        self.dev.as_ref().unwrap().device().to_path_buf()
    }
}

impl Drop for Victim {
    fn drop(&mut self) {
        if let Some(d) = self.dev.take() {
            let _ = d.detach();
        }
        let _ = fsdelta::site::state::recover(&self.state);
    }
}

fn run_case(c: &Case) -> Result<(), String> {
    let tmp = tempfile::Builder::new()
        .prefix("fsdelta-catalogue-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    let victim = c.root.then(|| Victim::attach(&root));
    let expand = |s: &str| {
        let mut s = s.replace("{tmp}", &root.display().to_string());
        if let Some(v) = &victim {
            s = s.replace("{victim}", &v.path().display().to_string());
        }
        s
    };
    for (rel, text) in &c.files {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, expand(text)).unwrap();
    }
    for (rel, sql) in &c.sqlite {
        let conn = rusqlite::Connection::open(root.join(rel)).unwrap();
        conn.execute_batch(sql).unwrap();
    }
    if let Some(rel) = &c.store {
        drop(fsdelta::store::sqlite::SqliteStore::open(&root.join(rel)).unwrap());
    }
    for (rel, mode) in &c.modes {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(root.join(rel), fs::Permissions::from_mode(*mode)).unwrap();
    }
    let before: Vec<(String, u64)> = c
        .unchanged
        .iter()
        .map(|rel| (rel.clone(), digest(&fs::read(root.join(rel)).unwrap())))
        .collect();
    let device_before = victim.as_ref().map(|v| first_mib(&v.path()));

    let mut cmd = assert_cmd::Command::cargo_bin("fsdelta").unwrap();
    fs::create_dir_all(root.join("home")).unwrap();
    cmd.current_dir(&root)
        .env("HOME", root.join("home"))
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_STATE_HOME")
        .env("FSDELTA_STATE_FILE", root.join("state/leftovers.json"))
        .env("FSDELTA_DB", root.join("db.sqlite"));
    for k in &c.env_remove {
        cmd.env_remove(k);
    }
    for (k, v) in &c.env {
        cmd.env(k, expand(v));
    }
    cmd.args(c.args.iter().map(|a| expand(a)));
    cmd.timeout(std::time::Duration::from_secs(120));
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut problems = Vec::new();
    if out.status.code() != Some(c.exit) {
        problems.push(format!("exit {:?}, expected {}", out.status.code(), c.exit));
    }
    let message = expand(&c.message);
    let count = text.matches(&message).count();
    if count == 0 {
        problems.push(format!("no '{message}' in the output"));
    } else if c.once && count > 1 {
        problems.push(format!("'{message}' printed {count} times"));
    }
    for (rel, d) in before {
        if fs::read(root.join(&rel)).map(|b| digest(&b)).ok() != Some(d) {
            problems.push(format!("{rel} changed"));
        }
    }
    for rel in &c.absent {
        if fs::symlink_metadata(root.join(rel)).is_ok() {
            problems.push(format!("{rel} exists"));
        }
    }
    if let (Some(v), Some(d)) = (&victim, device_before)
        && first_mib(&v.path()) != d
    {
        problems.push(format!("the first MiB of {} changed", v.path().display()));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}\n  output: {}",
            problems.join("; "),
            text.trim().replace('\n', "\n          ")
        ))
    }
}

#[test]
fn every_case_of_the_catalogue_holds() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/catalogue");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut cat = Catalogue { case: Vec::new() };
    for f in &files {
        let text = fs::read_to_string(f).unwrap();
        let part: Catalogue =
            toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        cat.case.extend(part.case);
    }
    let mut names = std::collections::BTreeSet::new();
    let can_root = common::is_root() && Path::new("/dev/loop-control").exists();
    let mut failures = Vec::new();
    let mut ran = 0;
    for c in &cat.case {
        assert!(names.insert(c.name.clone()), "duplicate case {}", c.name);
        if c.root && !common::require(can_root, &format!("root and loop devices ({})", c.name)) {
            continue;
        }
        ran += 1;
        if let Err(e) = run_case(c) {
            failures.push(format!("{}: {e}", c.name));
        }
    }
    assert!(ran > 0);
    assert!(
        failures.is_empty(),
        "{} of {ran} catalogue case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
