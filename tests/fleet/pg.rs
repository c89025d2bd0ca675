//! A private, throwaway PostgreSQL cluster for the fleet tests that must restart the server:
//! initdb in a temporary directory (as user postgres when we are root), a Unix socket in that
//! directory, trust authentication, fsync off. Stopped (immediately) and removed on drop.
//! Without PostgreSQL's programs the test is skipped with a reason, or fails under
//! FSDELTA_REQUIRE_ALL=1.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory holding initdb and pg_ctl, if PostgreSQL is installed.
pub fn bin_dir() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("initdb").exists() && p.join("pg_ctl").exists())
        .collect();
    dirs.sort();
    dirs.pop()
}

/// A running private cluster.
pub struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    as_postgres: bool,
}

fn pct(p: &Path) -> String {
    p.display().to_string().replace('/', "%2F")
}

impl Cluster {
    /// Start one, or None when PostgreSQL is not installed (after `require` printed why).
    pub fn start(require: impl Fn(bool, &str) -> bool) -> Option<Cluster> {
        let bin = bin_dir();
        if !require(
            bin.is_some(),
            "PostgreSQL's initdb and pg_ctl (apt-get install postgresql)",
        ) {
            return None;
        }
        let bin = bin.unwrap();
        let dir = tempfile::Builder::new()
            .prefix("fsdelta-pg")
            .tempdir()
            .unwrap();
        let as_postgres = rustix::process::geteuid().is_root();
        if as_postgres {
            let st = Command::new("chown")
                .args(["postgres:postgres"])
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(st.success(), "chown postgres {}", dir.path().display());
        }
        let c = Cluster {
            dir,
            bin,
            as_postgres,
        };
        c.run(
            "initdb",
            &[
                "-D",
                &c.data().display().to_string(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
            ],
        );
        c.pg_ctl(&["start"]);
        Some(c)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The socket directory.
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    fn run(&self, prog: &str, args: &[&str]) {
        let exe = self.bin.join(prog);
        let out = if self.as_postgres {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&exe)
                .args(args)
                .current_dir("/")
                .output()
                .unwrap()
        } else {
            Command::new(&exe).args(args).output().unwrap()
        };
        assert!(
            out.status.success(),
            "{prog} {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn pg_ctl(&self, what: &[&str]) {
        let data = self.data().display().to_string();
        let log = self.dir.path().join("log").display().to_string();
        let opts = format!(
            "-k {} -c listen_addresses='' -c fsync=off -c max_connections=100",
            self.dir.path().display()
        );
        let mut args = vec!["-D", &data, "-l", &log, "-o", &opts, "-w", "-t", "60"];
        args.extend_from_slice(what);
        self.run("pg_ctl", &args);
    }

    /// Restart the server (fast shutdown: every connection is cut, as in a real restart).
    pub fn restart(&self) {
        self.pg_ctl(&["restart", "-m", "fast"]);
    }

    /// A URL of database `db` (user postgres, over the socket).
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@{}/{db}", pct(self.dir.path()))
    }

    /// Create database `db` and return its URL.
    pub fn create_db(&self, db: &str) -> String {
        let mut c = fsdelta::store::postgres::PgTarget::parse(&self.url("postgres"))
            .unwrap()
            .connect()
            .unwrap();
        c.batch_execute(&format!("CREATE DATABASE {db}")).unwrap();
        self.url(db)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.data().display().to_string();
        let exe = self.bin.join("pg_ctl");
        let _ = if self.as_postgres {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&exe)
                .args(["-D", &data, "-m", "immediate", "-w", "stop"])
                .current_dir("/")
                .output()
        } else {
            Command::new(&exe)
                .args(["-D", &data, "-m", "immediate", "-w", "stop"])
                .output()
        };
    }
}
