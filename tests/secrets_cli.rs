//! Secrets through the real binary (issue 33, item 2): a password in a store URL is never printed
//! by any command in any form; fsdelta's own variables (`FSDELTA_DB`, every `PG*`) reach no
//! workload command and no hook; a password file that is a FIFO is refused at once, never read
//! (which would block forever); and a PostgreSQL store still finds its password in PGPASSWORD
//! or PGPASSFILE although they are no longer in the process environment.

mod common;

use assert_cmd::Command;
use common::{is_root, require};
use std::path::Path;

/// The password every test hides; `Hunter%32Pw` is the same, percent-encoded.
const PASSWORD: &str = "Hunter2Pw";

fn fsdelta(work: &Path) -> Command {
    let mut c = Command::cargo_bin("fsdelta").unwrap();
    c.env("FSDELTA_STATE_FILE", work.join("state.json"))
        .env("HOME", work)
        .env_remove("XDG_DATA_HOME")
        .env_remove("FSDELTA_DB")
        .env_remove("PGPASSWORD")
        .env_remove("PGPASSFILE")
        .current_dir(work);
    c
}

const COMMAND_SUITE: &str = r#"
[[test]]
name = "c"
workload = "command"
command = "env > @@OUT@@; echo 'v 1'"
[[test.metric]]
name = "v"
regex = 'v (\d+)'
unit = "count"
direction = "higher"
"#;

#[test]
fn a_password_in_a_store_url_is_never_printed_by_any_command() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    std::fs::write(
        w.join("s.toml"),
        COMMAND_SUITE.replace("@@OUT@@", "/dev/null"),
    )
    .unwrap();
    std::fs::create_dir(w.join("t")).unwrap();
    let sock = "%2Ftmp%2Ffsdelta-dev-pg:55432";
    let urls = [
        format!("postgres://postgres:{PASSWORD}@{sock}/postgres"),
        format!("postgres://postgres:Hunter%32Pw@{sock}/postgres"),
        format!("postgresql://postgres:{PASSWORD}@db.example/fsdelta"),
        format!("postgres://postgres@{sock}/postgres?password={PASSWORD}"),
        format!("postgres://postgres@{sock}/postgres?password=Hunter%32Pw"),
        format!("postgres://postgres@{sock}/postgres?pass%77ord={PASSWORD}"),
        format!("postgres://postgres@db.example/x?sslmode=disable&password={PASSWORD}&bogus=1"),
        format!("postgres://postgres:{PASSWORD}@db.example/x?bogus=1"),
        // A password holding '/', '?' and '@' must be hidden whole.
        "postgres://postgres:Hun/ter?2Pw@Hunter@db.example/x".to_string(),
    ];
    for url in &urls {
        let sqlite = w.join("other.sqlite").display().to_string();
        let commands: Vec<Vec<String>> = vec![
            vec!["list".into(), "--db".into(), url.clone()],
            vec![
                "run".into(),
                "-n".into(),
                "1".into(),
                "--quiet".into(),
                "--suite".into(),
                "s.toml".into(),
                "--target".into(),
                "t".into(),
                "--db".into(),
                url.clone(),
            ],
            vec!["agent".into(), "--once".into(), "--db".into(), url.clone()],
            vec![
                "submit".into(),
                "--label".into(),
                "x".into(),
                "--suite".into(),
                "s.toml".into(),
                "--db".into(),
                url.clone(),
            ],
            vec![
                "sync".into(),
                "--from".into(),
                url.clone(),
                "--to".into(),
                sqlite.clone(),
            ],
            vec![
                "sync".into(),
                "--from".into(),
                sqlite.clone(),
                "--to".into(),
                url.clone(),
            ],
            vec![
                "sync".into(),
                "--from".into(),
                url.clone(),
                "--to".into(),
                url.clone(),
            ],
            // A URL where clap does not expect one: its own error message repeats it.
            vec!["list".into(), url.clone()],
        ];
        for args in commands {
            let out = fsdelta(w)
                .args(&args)
                .timeout(std::time::Duration::from_secs(120))
                .output()
                .unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(out.status.code(), Some(2), "{args:?}: {text}");
            assert!(
                !text.contains("Hunter") && !text.contains("ter?2Pw"),
                "{args:?} printed the password: {text}"
            );
        }
        // The same URL from FSDELTA_DB.
        let out = fsdelta(w)
            .env("FSDELTA_DB", url)
            .arg("list")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(2), "{text}");
        assert!(
            !text.contains("Hunter"),
            "FSDELTA_DB list printed it: {text}"
        );
        if !url.contains("ter?2Pw") {
            assert!(text.contains("PGPASSWORD"), "says where to put it: {text}");
        }
    }
}

/// fsdelta's variables as a child would see them, with distinctive values.
fn secrets(w: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("PGPASSWORD", format!("{PASSWORD}-env")),
        (
            "PGPASSFILE",
            w.join("Hunter-passfile").display().to_string(),
        ),
        ("PGSSLKEY", "/Hunter/key".into()),
        ("PGSSLPASSWORD", "Hunter-sslpass".into()),
        ("PGSERVICEFILE", "/Hunter/services".into()),
        (
            "FSDELTA_DB",
            w.join("Hunter-store.sqlite").display().to_string(),
        ),
    ]
}

fn assert_scrubbed(env_file: &Path) {
    let text = std::fs::read_to_string(env_file)
        .unwrap_or_else(|e| panic!("{}: {e}: the command did not run", env_file.display()));
    assert!(
        text.contains("FSDELTA_TARGET=") || text.contains("FSDELTA_HOOK="),
        "{text}"
    );
    for line in text.lines() {
        assert!(
            !line.starts_with("PG") && !line.starts_with("FSDELTA_DB=") && !line.contains("Hunter"),
            "{}: fsdelta's secret reached a child: {line}",
            env_file.display()
        );
    }
}

#[test]
fn fsdeltas_variables_reach_no_workload_command() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let env_file = w.join("cmd.env");
    std::fs::write(
        w.join("s.toml"),
        COMMAND_SUITE.replace("@@OUT@@", &env_file.display().to_string()),
    )
    .unwrap();
    std::fs::create_dir(w.join("t")).unwrap();
    let mut c = fsdelta(w);
    for (k, v) in secrets(w) {
        c.env(k, v);
    }
    c.args([
        "run", "-n", "1", "--quiet", "--suite", "s.toml", "--target", "t",
    ])
    .assert()
    .success();
    assert_scrubbed(&env_file);
    // FSDELTA_DB still chose the store.
    fsdelta(w)
        .args(["list", "--db"])
        .arg(w.join("Hunter-store.sqlite"))
        .assert()
        .success()
        .stdout(predicates::str::contains("complete"));
}

#[test]
fn fsdeltas_variables_reach_no_hook() {
    if !require(is_root(), "root (a tmpfs configuration runs hooks)") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let scratch = w.join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let (hook_env, cmd_env) = (w.join("hook.env"), w.join("cmd.env"));
    std::fs::write(
        w.join("s.toml"),
        COMMAND_SUITE.replace("@@OUT@@", &cmd_env.display().to_string()),
    )
    .unwrap();
    std::fs::write(
        w.join("c.toml"),
        format!(
            "scratch = \"{}\"\n[[config]]\nname = \"ram\"\nfs = \"tmpfs\"\nsize = \"16M\"\n\
             before = \"env > {}\"\n",
            scratch.display(),
            hook_env.display()
        ),
    )
    .unwrap();
    let mut c = fsdelta(w);
    for (k, v) in secrets(w) {
        c.env(k, v);
    }
    c.args([
        "run", "-n", "1", "--quiet", "--suite", "s.toml", "--config", "c.toml",
    ])
    .assert()
    .success();
    assert_scrubbed(&hook_env);
    assert_scrubbed(&cmd_env);
}

fn fifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// A FIFO as a password file (named by ?passfile=, PGPASSFILE or as ~/.pgpass) is refused at
/// once: reading one blocks until someone writes, which nobody will. The timeout turns a hang
/// into a failure instead of a blocked test run.
#[test]
fn a_fifo_as_password_file_is_refused_without_blocking() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let f = w.join("pass.fifo");
    fifo(&f);
    fifo(&w.join(".pgpass"));
    let url = "postgres://u@127.0.0.1:1/x?sslmode=disable";
    let runs: Vec<(Vec<(&str, String)>, String)> = vec![
        (vec![], format!("{url}&passfile={}", f.display())),
        (vec![("PGPASSFILE", f.display().to_string())], url.into()),
        // ~/.pgpass (HOME is the work directory).
        (vec![], url.into()),
    ];
    for (env, url) in runs {
        let mut c = fsdelta(w);
        for (k, v) in &env {
            c.env(k, v);
        }
        c.args(["list", "--db", &url])
            .timeout(std::time::Duration::from_secs(60))
            .assert()
            .code(2)
            .stderr(predicates::str::contains("is a FIFO, not a regular file"));
    }
}

/// PGPASSWORD and PGPASSFILE are gone from the process environment, yet still read: with
/// PGPASSWORD set, the password file (a FIFO that would be refused) is not even looked at and
/// the store opens; without it, PGPASSFILE is read, and refused. Needs FSDELTA_TEST_PG.
#[test]
fn a_postgresql_store_still_reads_pgpassword_and_pgpassfile() {
    let url = std::env::var("FSDELTA_TEST_PG")
        .ok()
        .filter(|u| !u.is_empty());
    if !require(
        url.is_some(),
        "FSDELTA_TEST_PG (a PostgreSQL administrator URL)",
    ) {
        return;
    }
    let db = fsdelta::store::postgres::ScratchDatabase::create(&url.unwrap()).unwrap();
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let f = w.join("pass.fifo");
    fifo(&f);
    fsdelta(w)
        .env("FSDELTA_DB", &db.url)
        .arg("cleanup")
        .assert()
        .success();
    fsdelta(w)
        .env("PGPASSWORD", "any")
        .env("PGPASSFILE", &f)
        .args(["list", "--db", &db.url])
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .success();
    fsdelta(w)
        .env("PGPASSFILE", &f)
        .args(["list", "--db", &db.url])
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("is a FIFO"));
}
