//! Helpers of the `fsdelta serve` tests: a store with a history that has one clear change and
//! hostile labels, a server process on a free loopback port (stopped on drop), and a tiny
//! HTTP/1.1 client (one request per connection) so the tests need no HTTP crate.
#![allow(dead_code)]

use chrono::{DateTime, Duration, TimeZone, Utc};
use fsdelta::model::{
    Direction, Environment, Metric, NewRun, NewSample, RunStatus, SampleStatus, SiteFacts, Unit,
};
use fsdelta::store::Store;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The label of the runs before the change: a script tag.
pub const EVIL_LABEL: &str = "<script>alert(1)</script>";
/// The label of the runs after it: an attribute breakout.
pub const EVIL_LABEL2: &str = "\"><img src=x onerror=alert(2)>";
/// The configuration name: an attribute breakout with single quotes.
pub const EVIL_CONFIG: &str = "ext4'><svg onload=alert(3)>";
/// The token of the test servers.
pub const TOKEN: &str = "correct-horse-battery-staple-42";

/// Fill a SQLite store at `db` with 12 runs of machine `m1`: `files_per_sec` (headline) around
/// 1000 for six runs, then around 700 (a change point at run 7); three repetitions a run, fixed
/// values (no randomness).
pub fn fill(db: &Path) {
    fill_store(&mut fsdelta::store::sqlite::SqliteStore::open(db).unwrap());
}

/// [`fill`] any store.
pub fn fill_store(s: &mut dyn Store) {
    let t0 = Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap();
    for i in 0..12u32 {
        let label = if i < 6 { EVIL_LABEL } else { EVIL_LABEL2 };
        let run = create_run(
            s,
            label,
            t0 + Duration::hours(i as i64),
            &format!("6.18.0-{i}"),
        );
        let level = if i < 6 { 1000.0 } else { 700.0 };
        for rep in 0..3u32 {
            let wobble = [0.0, 6.0, -5.0][rep as usize] + (i % 3) as f64;
            let id = s.add_sample(run, &sample(rep, level + wobble)).unwrap();
            if i == 11 && rep == 0 {
                // The newest run's first sample has a CPU profile (a flame graph on its page).
                let p = fsdelta::probe::profile::Profile::parse_folded(
                    "fs_mark;write;ext4_file_write_iter 30\nfs_mark;openat;<evil>\" 10\n",
                )
                .unwrap();
                s.add_profile(id, &p.encode()).unwrap();
            }
        }
        s.finish_run(
            run,
            RunStatus::Complete,
            t0 + Duration::hours(i as i64) + Duration::minutes(5),
        )
        .unwrap();
    }
}

/// Create a `quick` run of machine `m1` (host `m1`, one machine id) with this label, start and
/// kernel release; its id.
pub fn create_run(
    s: &mut dyn Store,
    label: &str,
    started_at: DateTime<Utc>,
    kernel_release: &str,
) -> i64 {
    s.create_run(&NewRun {
        label: label.into(),
        suite: "quick".into(),
        started_at,
        fsdelta_version: "0.1.0".into(),
        environment: Environment {
            host: "m1".into(),
            kernel_release: kernel_release.into(),
            machine_id: "0123456789abcdef".into(),
            ..Environment::default()
        },
    })
    .unwrap()
}

fn sample(rep: u32, value: f64) -> NewSample {
    sample_at(
        rep,
        value,
        Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap() + Duration::seconds(rep as i64),
    )
}

/// A `smallfiles` sample of [`EVIL_CONFIG`] on ext4 started at `started_at`: repetition (and
/// sequence) `rep`, headline `files_per_sec` = `value`.
pub fn sample_at(rep: u32, value: f64, started_at: DateTime<Utc>) -> NewSample {
    NewSample {
        config: EVIL_CONFIG.into(),
        test: "smallfiles".into(),
        repetition: rep,
        sequence: rep,
        facts: SiteFacts {
            fs_type: "ext4".into(),
            path: "/mnt/x".into(),
            device: "/dev/loop0".into(),
            mount_options: "rw,relatime".into(),
            mkfs_options: None,
            extra: Default::default(),
        },
        status: SampleStatus::Ok,
        error: None,
        started_at,
        duration_s: 2.0,
        workload: "fs_mark -s 0 -n 100".into(),
        metrics: vec![
            Metric::new(
                "files_per_sec",
                value,
                Unit::FilesPerSec,
                Direction::HigherIsBetter,
            )
            .headline(),
        ],
        histograms: Vec::new(),
        attachments: Vec::new(),
    }
}

/// A running `fsdelta serve`, killed and reaped on drop.
pub struct Server {
    pub child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// Its standard output after the first line, and standard error, are kept here.
    pub log: std::path::PathBuf,
}

impl Server {
    /// Start `fsdelta serve --db db --listen 127.0.0.1:0` (with the token file when given) and
    /// wait for the line that says where it listens.
    pub fn start(db: &str, token_file: Option<&Path>, dir: &Path) -> Server {
        let log = dir.join("serve.log");
        let mut c = Command::new(assert_cmd::cargo::cargo_bin("fsdelta"));
        c.args(["serve", "--db", db, "--listen", "127.0.0.1:0"])
            .env_remove("FSDELTA_DB")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap());
        if let Some(t) = token_file {
            c.arg("--token-file").arg(t);
        }
        let mut child = c.spawn().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        let first = line.clone();
        let keep = log.with_extension("out");
        std::thread::spawn(move || {
            let mut rest = first;
            let _ = out.read_to_string(&mut rest);
            let _ = std::fs::write(keep, rest);
        });
        Server { child, addr, log }
    }

    /// GET `path`.
    pub fn get(&self, path: &str) -> Response {
        request(&self.addr, "GET", path, &[], "")
    }

    /// POST a form to `path` with extra headers.
    pub fn post(&self, path: &str, headers: &[(&str, &str)], form: &str) -> Response {
        let mut h = vec![("Content-Type", "application/x-www-form-urlencoded")];
        h.extend_from_slice(headers);
        request(&self.addr, "POST", path, &h, form)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A response: status, headers (names lower-case), body.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request on its own connection.
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Response {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(req.as_bytes()).unwrap();
    let raw = read_response(&mut s);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {head:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_string()
    };
    Response {
        status,
        headers,
        body,
    }
}

/// Read one response: to its Content-Length, to the last chunk, or to the end of the
/// connection (some servers keep it open whatever the request says).
fn read_response(s: &mut TcpStream) -> Vec<u8> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        let n = s.read(&mut buf).unwrap();
        if n == 0 {
            return raw;
        }
        raw.extend_from_slice(&buf[..n]);
        let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok());
        if let Some(len) = length {
            if raw.len() >= end + 4 + len {
                raw.truncate(end + 4 + len);
                return raw;
            }
        } else if head.contains("transfer-encoding: chunked") && raw.ends_with(b"0\r\n\r\n") {
            return raw;
        }
    }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}

/// Write the token file (mode 600) in `dir`.
pub fn token_file(dir: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let f = dir.join("token");
    std::fs::write(&f, format!("{TOKEN}\n")).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    f
}

/// The first `href="..."` after `marker` in `html`, unescaped (`&amp;` only, as the pages
/// write them).
pub fn href_after(html: &str, marker: &str) -> Option<String> {
    let at = html.find(marker)?;
    let rest = &html[at..];
    let start = rest.find("href=\"")? + 6;
    let end = start + rest[start..].find('"')?;
    Some(rest[start..end].replace("&amp;", "&"))
}

/// Wait (up to 60 s, polling) until `/alerts` lists an alert; its page's path.
pub fn wait_for_alert(s: &Server) -> String {
    for _ in 0..600 {
        let r = s.get("/alerts");
        if let Some(h) = href_after(&r.body, "class=\"alert-link\"") {
            return h;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("the sweep raised no alert in 60 s");
}
