//! No measured sample is lost, and no journal but our own is replayed: the real binary against
//! a journal another user planted (or a symlink), a store on a full filesystem, and a
//! PostgreSQL store that goes away in the middle of a run (a TCP proxy the test cuts; the
//! shared server is never stopped).

mod common;

use common::{Tmpfs, fsdelta, is_root, require};
use fsdelta::model::{
    Direction, Environment, Metric, NewRun, NewSample, RunId, SampleStatus, SiteFacts, Unit,
};
use fsdelta::store::Store;
use fsdelta::store::sqlite::SqliteStore;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn new_run() -> NewRun {
    NewRun {
        label: "j".into(),
        suite: "quick".into(),
        started_at: chrono::Utc::now(),
        fsdelta_version: "0".into(),
        environment: Environment::default(),
    }
}

fn sample() -> NewSample {
    let mut facts = SiteFacts::default();
    facts.extra.insert("journal_key".into(), "k-1-1".into());
    NewSample {
        config: "scratch".into(),
        test: "t".into(),
        repetition: 1,
        facts,
        status: SampleStatus::Ok,
        error: None,
        started_at: chrono::Utc::now(),
        duration_s: 1.0,
        workload: "w".into(),
        sequence: 1,
        metrics: vec![Metric::new(
            "iops",
            1.0,
            Unit::Count,
            Direction::HigherIsBetter,
        )],
        histograms: vec![],
        attachments: Vec::new(),
    }
}

/// A store at `db` with one run, and a journal line holding a sample of that run.
fn store_with_journal_line(db: &Path) -> (RunId, String) {
    let mut st = SqliteStore::open(db).unwrap();
    let run = st.create_run(&new_run()).unwrap();
    let line = serde_json::json!({
        "key": "k-1-1",
        "run": run,
        "sample": sample(),
        "profile": null,
    })
    .to_string()
        + "\n";
    (run, line)
}

fn samples_in(db: &Path, run: RunId) -> usize {
    SqliteStore::open_read_only(db)
        .unwrap()
        .samples(run)
        .unwrap()
        .len()
}

fn cleanup(db: &Path, state: &Path) -> std::process::Output {
    fsdelta(db)
        .env("FSDELTA_STATE_FILE", state)
        .arg("cleanup")
        .output()
        .unwrap()
}

#[test]
fn cleanup_never_replays_another_users_journal_in_a_sticky_directory() {
    if !require(is_root(), "root (to give the journal to another user)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("tmp");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    let db = shared.join("r.sqlite");
    let (run, line) = store_with_journal_line(&db);
    // Another user (nobody) planted `<store>.journal`.
    let journal = shared.join("r.sqlite.journal");
    fs::write(&journal, &line).unwrap();
    std::os::unix::fs::chown(&journal, Some(65534), Some(65534)).unwrap();
    fs::set_permissions(&journal, fs::Permissions::from_mode(0o644)).unwrap();

    let out = cleanup(&db, &dir.path().join("state.json"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        samples_in(&db, run),
        0,
        "the store is unchanged; stderr: {err}"
    );
    assert!(
        err.contains("not replayed") && err.contains("uid 65534") && err.contains("remove it"),
        "why and how to fix: {err}"
    );
    assert_eq!(fs::read_to_string(&journal).unwrap(), line);
}

#[test]
fn cleanup_refuses_a_symlinked_journal_or_lock_and_leaves_its_target_unchanged() {
    for planted in ["r.sqlite.journal", "r.sqlite.journal.lock"] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("r.sqlite");
        let (run, line) = store_with_journal_line(&db);
        let victim = dir.path().join("victim");
        fs::write(&victim, &line).unwrap();
        if planted.ends_with(".lock") {
            fs::write(dir.path().join("r.sqlite.journal"), &line).unwrap();
        }
        std::os::unix::fs::symlink(&victim, dir.path().join(planted)).unwrap();

        let out = cleanup(&db, &dir.path().join("state.json"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(samples_in(&db, run), 0, "{planted}: {err}");
        assert!(
            err.contains("not replayed") && err.contains("symlink"),
            "{planted}: {err}"
        );
        assert_eq!(fs::read_to_string(&victim).unwrap(), line, "{planted}");
        assert!(
            fs::symlink_metadata(dir.path().join(planted))
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
}

/// A suite of one command test that fills the filesystem at `fill` (the store's) and then
/// prints its number: the store is full when the sample is stored.
fn filling_suite(dir: &Path, fill: &Path) -> PathBuf {
    let p = dir.join("fill.toml");
    fs::write(
        &p,
        format!(
            "name = \"fill\"\n[[test]]\nname = \"fill\"\nworkload = \"command\"\n\
             command = \"dd if=/dev/zero of={} bs=64k 2>/dev/null; echo took 5 ms\"\n\
             [[test.metric]]\nname = \"took_ms\"\nregex = 'took (\\d+) ms'\nunit = \"ms\"\ndirection = \"lower\"\n",
            fill.display()
        ),
    )
    .unwrap();
    p
}

fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
}

/// The samples of the store's only run, once the filesystem has room again and `cleanup` ran.
fn stored_fill_samples(db: &Path) -> Vec<fsdelta::model::SampleRecord> {
    let st = SqliteStore::open_read_only(db).unwrap();
    let runs = st.runs(&Default::default()).unwrap();
    assert_eq!(runs.len(), 1);
    st.samples(runs[0].id).unwrap()
}

#[test]
fn a_full_store_filesystem_journals_the_sample_in_the_state_directory() {
    if !require(is_root(), "root (to mount a small tmpfs)") {
        return;
    }
    let fs_ = Tmpfs::mount("2m");
    let db = fs_.path().join("r.sqlite");
    let fill = fs_.path().join("filler");
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state").join("leftovers.json");
    let target = dir.path().join("target");
    fs::create_dir(&target).unwrap();
    let suite = filling_suite(dir.path(), &fill);

    let out = fsdelta(&db)
        .env("FSDELTA_STATE_FILE", &state)
        .env("FSDELTA_STORE_WAIT", "0.2")
        .args(["run", "--quiet", "--no-drop-caches", "-n", "1", "--suite"])
        .arg(&suite)
        .arg("--target")
        .arg(&target)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let state_dir = state.parent().unwrap().display().to_string();
    assert!(
        err.contains("database or disk is full") && err.contains("keeps trying"),
        "said at once: {err}"
    );
    let last = last_line(&err);
    assert!(
        last.contains("1 sample(s) could not be written") && last.contains(&state_dir),
        "the last line says where the sample went: {err}"
    );
    // Room again: the next writer (here cleanup) stores it, exactly once.
    fs::remove_file(&fill).unwrap();
    let out = cleanup(&db, &state);
    let cerr = String::from_utf8_lossy(&out.stderr);
    assert!(cerr.contains("replayed 1 journaled sample(s)"), "{cerr}");
    let back = stored_fill_samples(&db);
    assert_eq!(back.len(), 1, "{cerr}");
    assert_eq!(back[0].sample.status, SampleStatus::Ok);
    assert!(back[0].sample.metrics.iter().any(|m| m.name == "took_ms"));
    cleanup(&db, &state);
    assert_eq!(stored_fill_samples(&db).len(), 1, "exactly once");
}

#[test]
fn with_no_journal_writable_the_sample_is_printed_as_a_journal_line_that_replays() {
    if !require(is_root(), "root (to mount a small tmpfs)") {
        return;
    }
    let fs_ = Tmpfs::mount("2m");
    let db = fs_.path().join("r.sqlite");
    let fill = fs_.path().join("filler");
    // The state directory is on the same full filesystem: no journal can be written.
    let state = fs_.path().join("state").join("leftovers.json");
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    fs::create_dir(&target).unwrap();
    let suite = filling_suite(dir.path(), &fill);

    let out = fsdelta(&db)
        .env("FSDELTA_STATE_FILE", &state)
        .env("FSDELTA_STORE_WAIT", "0.2")
        .args(["run", "--quiet", "--no-drop-caches", "-n", "1", "--suite"])
        .arg(&suite)
        .arg("--target")
        .arg(&target)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("{\"key\"")).collect();
    assert_eq!(lines.len(), 1, "one journal line: {err}");
    let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(v["sample"]["test"], "fill");
    assert!(
        last_line(&err).contains("printed above"),
        "the last line says where the sample went: {err}"
    );
    // What the message says to do, once there is room: append it to the store's journal.
    fs::remove_file(&fill).unwrap();
    let journal = fs_.path().join("r.sqlite.journal");
    let mut text = fs::read_to_string(&journal).unwrap_or_default();
    text.push_str(lines[0]);
    text.push('\n');
    fs::write(&journal, text).unwrap();
    fs::set_permissions(&journal, fs::Permissions::from_mode(0o600)).unwrap();
    let out = cleanup(&db, &state);
    let cerr = String::from_utf8_lossy(&out.stderr);
    let back = stored_fill_samples(&db);
    assert_eq!(back.len(), 1, "{cerr}");
    assert!(back[0].sample.metrics.iter().any(|m| m.name == "took_ms"));
}

#[test]
fn a_store_on_a_read_only_filesystem_is_refused_saying_so() {
    if !require(is_root(), "root (to mount a read-only tmpfs)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    fs::create_dir(&ro).unwrap();
    let st = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "ro,size=1m", "fsdelta-test"])
        .arg(&ro)
        .status()
        .unwrap();
    assert!(st.success());
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _u = Unmount(ro.clone());
    let suite = dir.path().join("s.toml");
    fs::write(
        &suite,
        "name = \"s\"\n[[test]]\nname = \"c\"\nworkload = \"command\"\ncommand = \"true\"\n",
    )
    .unwrap();
    for db in [ro.join("r.sqlite"), ro.join("sub/r.sqlite")] {
        let out = fsdelta(&db)
            .env("FSDELTA_STATE_FILE", dir.path().join("state.json"))
            .args(["run", "--quiet", "--no-drop-caches", "-n", "1", "--suite"])
            .arg(&suite)
            .arg("--target")
            .arg(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("is on a read-only filesystem")
                && err.contains("name a store on a writable filesystem with --db PATH"),
            "{db:?}: {err}"
        );
    }
}

mod pg {
    //! A PostgreSQL store behind a TCP proxy that the test cuts while a sample waits to be
    //! stored.

    use super::*;
    use fsdelta::store::postgres::{PgStore, ScratchDatabase};
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    struct Proxy {
        port: u16,
        down: Arc<AtomicBool>,
        conns: Arc<Mutex<Vec<TcpStream>>>,
    }

    fn pump(mut from: TcpStream, mut to: TcpStream) {
        let mut buf = [0u8; 16384];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
    }

    impl Proxy {
        fn start(upstream: String) -> Proxy {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = l.local_addr().unwrap().port();
            let down = Arc::new(AtomicBool::new(false));
            let conns = Arc::new(Mutex::new(Vec::new()));
            let (d, c) = (down.clone(), conns.clone());
            std::thread::spawn(move || {
                for s in l.incoming().flatten() {
                    if d.load(Ordering::SeqCst) {
                        drop(s);
                        continue;
                    }
                    let Ok(up) = TcpStream::connect(&upstream) else {
                        continue;
                    };
                    let mut all = c.lock().unwrap();
                    all.push(s.try_clone().unwrap());
                    all.push(up.try_clone().unwrap());
                    let (s2, up2) = (s.try_clone().unwrap(), up.try_clone().unwrap());
                    std::thread::spawn(move || pump(s, up));
                    std::thread::spawn(move || pump(up2, s2));
                }
            });
            Proxy { port, down, conns }
        }

        /// Refuse new connections and cut every open one.
        fn cut(&self) {
            self.down.store(true, Ordering::SeqCst);
            for c in self.conns.lock().unwrap().drain(..) {
                let _ = c.shutdown(Shutdown::Both);
            }
        }

        fn restore(&self) {
            self.down.store(false, Ordering::SeqCst);
        }
    }

    /// `postgres://user@127.0.0.1:PORT/db` of the TLS test URL's server: its host and port.
    fn upstream(url: &str) -> Option<String> {
        let rest = url.split_once('@')?.1;
        Some(rest.split(['/', '?']).next()?.to_string())
    }

    #[test]
    fn an_unreachable_postgres_store_is_announced_then_journaled_then_replayed() {
        let Some(admin) = std::env::var("FSDELTA_TEST_PG_TLS")
            .ok()
            .filter(|v| !v.is_empty())
        else {
            require(false, "FSDELTA_TEST_PG_TLS (a PostgreSQL URL over TCP)");
            return;
        };
        let scratch = ScratchDatabase::create(&admin).unwrap();
        let up = upstream(&admin).expect("host:port in FSDELTA_TEST_PG_TLS");
        let proxy = Proxy::start(up.clone());
        let url = format!(
            "postgres://postgres@127.0.0.1:{}/{}?sslmode=disable",
            proxy.port, scratch.name
        );
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state").join("leftovers.json");
        let target = dir.path().join("target");
        fs::create_dir(&target).unwrap();
        // The command asks for the cut and waits until it is done: the store goes away
        // between the run's start and the sample's write, whatever the timing.
        let (ask, done) = (dir.path().join("ask"), dir.path().join("done"));
        let suite = dir.path().join("s.toml");
        fs::write(
            &suite,
            format!(
                "name = \"pg\"\n[[test]]\nname = \"cut\"\nworkload = \"command\"\n\
                 command = \"touch {}; i=0; while [ ! -e {} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; echo took 5 ms\"\n\
                 [[test.metric]]\nname = \"took_ms\"\nregex = 'took (\\d+) ms'\nunit = \"ms\"\ndirection = \"lower\"\n",
                ask.display(),
                done.display()
            ),
        )
        .unwrap();
        let watcher = {
            let (ask, done) = (ask.clone(), done.clone());
            let (down, conns) = (proxy.down.clone(), proxy.conns.clone());
            std::thread::spawn(move || {
                for _ in 0..6000 {
                    if ask.exists() {
                        down.store(true, Ordering::SeqCst);
                        for c in conns.lock().unwrap().drain(..) {
                            let _ = c.shutdown(Shutdown::Both);
                        }
                        fs::write(&done, "").unwrap();
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            })
        };
        let out = fsdelta(Path::new(&url))
            .env("FSDELTA_STATE_FILE", &state)
            .env("FSDELTA_STORE_WAIT", "1")
            .args(["run", "--quiet", "--no-drop-caches", "-n", "1", "--suite"])
            .arg(&suite)
            .arg("--target")
            .arg(&target)
            .output()
            .unwrap();
        watcher.join().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        eprintln!("--- the run said:\n{err}");
        let notice = err
            .find("is unreachable or refuses writes")
            .unwrap_or_else(|| panic!("the run says the store is unreachable: {err}"));
        let held = &err[notice..];
        assert!(
            held.contains("1 sample(s) not yet stored")
                && held.contains("keeps trying for up to 1 s"),
            "how many are held, that it keeps trying, and the configured bound: {err}"
        );
        let journaled = err
            .find("is journaled in")
            .unwrap_or_else(|| panic!("then says it journaled the sample: {err}"));
        assert!(notice < journaled, "the notice comes first: {err}");
        let state_dir = state.parent().unwrap().display().to_string();
        let last = last_line(&err);
        assert!(
            last.contains("1 sample(s) could not be written") && last.contains(&state_dir),
            "the last line says where: {err}"
        );

        // The store is back: the next writer's open replays the journal into it.
        proxy.restore();
        let out = fsdelta(Path::new(&url))
            .env("FSDELTA_STATE_FILE", &state)
            .arg("cleanup")
            .output()
            .unwrap();
        let cerr = String::from_utf8_lossy(&out.stderr);
        assert!(cerr.contains("replayed 1 journaled sample(s)"), "{cerr}");
        let st = PgStore::open_read_only(&url).unwrap();
        let runs = st.runs(&Default::default()).unwrap();
        assert_eq!(runs.len(), 1, "{cerr}");
        let back = st.samples(runs[0].id).unwrap();
        assert_eq!(back.len(), 1, "stored once: {cerr}");
        assert!(back[0].sample.metrics.iter().any(|m| m.name == "took_ms"));
        drop(st);
        proxy.cut();
    }
}
