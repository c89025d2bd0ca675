//! How fsdelta reaches a PostgreSQL database: the URL (never with a password), the password's
//! sources, TLS, connecting, and reconnecting after a lost connection.
//!
//! Why a file of its own: the store ([`super::postgres`]) and the fleet's queue both connect
//! through it, and what a connection may reveal (a password, in any message) is decided here
//! once. Must never put a password into a message, a log line or a process's environment:
//! a URL carrying one (`USER:PASSWORD@`, `?password=`, percent-encoded or not) is refused and
//! shown with `***` in its place ([`redact`]; [`redact_text`] guards whole messages at the CLI
//! edge), and the PG* variables it reads come from [`crate::os::env`], which the binary took out
//! of the process environment at start so that no child inherits them. Password files are read
//! only when they are regular files of at most [`PASSFILE_MAX`] bytes (a FIFO would block the
//! read forever).

use super::StoreError;
use postgres::error::SqlState;
use postgres::{Client, Config};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a store operation keeps retrying a lost connection before it gives up (a database
/// restart or a short network outage must not lose a measured sample).
pub const RETRY_FOR: Duration = Duration::from_secs(600);

/// How fsdelta reaches one PostgreSQL database: the parsed URL, its TLS wish, and a printable
/// description (host, port, database, user; never a password).
#[derive(Clone, Debug)]
pub struct PgTarget {
    config: Config,
    ssl: SslChoice,
    root_cert: Option<PathBuf>,
    /// Every connection is a read-only session (`default_transaction_read_only`): the
    /// read-only open's connections, reconnections included.
    pub(crate) read_only: bool,
    /// `host H port P (database D, user U)` for messages.
    pub shown: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SslChoice {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

fn open_err(location: &str, message: impl Into<String>) -> StoreError {
    StoreError::Open {
        location: location.to_string(),
        message: message.into(),
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Some(v) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `url` with any password replaced by `***`, for messages: the user-info's password
/// (`USER:PASSWORD@`; everything from the first `:` after `://` to the last `@` is hidden, so a
/// password holding `/`, `?` or `@` is hidden whole, at the price of hiding more of an odd URL
/// than needed) and the value of every query parameter whose name, percent-decoded, contains
/// `password` (`?password=`, `?sslpassword=`).
pub fn redact(url: &str) -> String {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let (head, rest) = url.split_at(start);
    let rest = match (rest.find(':'), rest.rfind('@')) {
        (Some(colon), Some(at)) if colon < at => {
            format!("{}:***{}", &rest[..colon], &rest[at..])
        }
        _ => rest.to_string(),
    };
    let rest = match rest.split_once('?') {
        Some((base, query)) => {
            let pairs: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((k, _)) if is_password_key(k) => format!("{k}=***"),
                    _ => pair.to_string(),
                })
                .collect();
            format!("{base}?{}", pairs.join("&"))
        }
        None => rest,
    };
    format!("{head}{rest}")
}

/// Whether a URL query parameter's name (percent-encoded as written) names a password.
fn is_password_key(k: &str) -> bool {
    percent_decode(k).to_ascii_lowercase().contains("password")
}

/// `text` with every `postgres://` or `postgresql://` URL in it passed through [`redact`]: the
/// last guard before a message reaches the terminal. A URL ends at white space, or, when it
/// follows a quote (`'`, `"`, `` ` ``), at the same quote.
pub fn redact_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let found = ["postgres://", "postgresql://"]
            .iter()
            .filter_map(|s| rest.find(s))
            .min();
        let Some(i) = found else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..i]);
        let quote = rest[..i]
            .chars()
            .next_back()
            .filter(|c| matches!(c, '\'' | '"' | '`'));
        let mut url_len = match quote {
            Some(q) => rest[i..].find(q),
            None => rest[i..].find(char::is_whitespace),
        }
        .unwrap_or(rest.len() - i);
        // `... store URL: why`: the colon is the message's, not the URL's.
        if quote.is_none()
            && rest[i..i + url_len].ends_with(':')
            && rest[i + url_len..].starts_with(char::is_whitespace)
        {
            url_len -= 1;
        }
        out.push_str(&redact(&rest[i..i + url_len]));
        rest = &rest[i + url_len..];
    }
}

/// Why a URL with a password is refused, and where the password goes instead.
const URL_PASSWORD: &str = "the URL carries a password, which `ps` and shell histories show; \
     remove it and put the password in PGPASSWORD, in ~/.pgpass (mode 0600), or in a \
     pgpass-format file of mode 0600 named by ?passfile=PATH";

/// The largest password file read (a pgpass file is a few lines; anything larger is not one).
pub const PASSFILE_MAX: u64 = 1 << 20;

/// The name of the user this process runs as (libpq's default user).
fn os_user() -> Option<String> {
    // SAFETY: getpwuid returns a pointer into static storage or null; we copy the name out at
    // once and this process does not call getpw* from another thread meanwhile.
    unsafe {
        let pw = libc::getpwuid(libc::geteuid());
        if pw.is_null() || (*pw).pw_name.is_null() {
            return None;
        }
        Some(
            std::ffi::CStr::from_ptr((*pw).pw_name)
                .to_string_lossy()
                .into_owned(),
        )
    }
}

/// The password for `user` at `host:port/db` from a pgpass file, as libpq finds it: the
/// file named by `?passfile=` or PGPASSFILE, else ~/.pgpass (a step of [`PgTarget::parse`]).
fn pgpass_password(
    passfile: Option<PathBuf>,
    host: &str,
    port: u16,
    db: &str,
    user: &str,
) -> Result<Option<String>, String> {
    let file = passfile.or_else(|| crate::os::env::var_os("PGPASSFILE").map(PathBuf::from));
    let (file, named) = match file {
        Some(f) => (Some(f), true),
        None => (
            std::env::var_os("HOME").map(|h| Path::new(&h).join(".pgpass")),
            false,
        ),
    };
    match file {
        Some(f) => pgpass_lookup(&f, named, host, port, db, user),
        None => Ok(None),
    }
}

impl PgTarget {
    /// Parse a `postgres://` URL. Refuses a password in the URL; fills the user, host, port and
    /// password as libpq would (PGUSER, PGHOST, PGPORT, PGDATABASE, PGPASSWORD, pgpass files).
    pub fn parse(url: &str) -> Result<PgTarget, StoreError> {
        let redacted = redact(url);
        let location = redacted.as_str();
        let (base, query) = match url.split_once('?') {
            Some((b, q)) => (b, q),
            None => (url, ""),
        };
        let mut ssl = SslChoice::Prefer;
        let mut passfile: Option<PathBuf> = None;
        let mut root_cert = None;
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            if is_password_key(k) {
                return Err(open_err(
                    location,
                    format!(
                        "the URL carries a password (?{}=), which `ps` and shell histories show; \
                         remove it and put the password in PGPASSWORD, in ~/.pgpass (mode 0600), \
                         or in a pgpass-format file of mode 0600 named by ?passfile=PATH",
                        percent_decode(k)
                    ),
                ));
            }
            let v = percent_decode(v);
            match k {
                "sslmode" => {
                    ssl = match v.as_str() {
                        "disable" => SslChoice::Disable,
                        "allow" | "prefer" => SslChoice::Prefer,
                        "require" => SslChoice::Require,
                        "verify-ca" => SslChoice::VerifyCa,
                        "verify-full" => SslChoice::VerifyFull,
                        other => {
                            return Err(open_err(
                                location,
                                format!(
                                    "unknown sslmode '{other}'; use disable, prefer, require, verify-ca or verify-full"
                                ),
                            ));
                        }
                    }
                }
                "passfile" => passfile = Some(PathBuf::from(v)),
                "sslrootcert" => root_cert = Some(PathBuf::from(v)),
                _ => kept.push(pair),
            }
        }
        // A password in the user-info (`USER:PASSWORD@`), found before the URL is parsed, so
        // that a URL that also fails to parse is refused for the password, with where to put it.
        let authority = base.split_once("://").map_or("", |(_, r)| r);
        let userinfo_password = matches!(
            (authority.find(':'), authority.rfind('@')),
            (Some(colon), Some(at)) if colon < at
        );
        let url = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        let parsed: Result<Config, postgres::Error> = url.parse();
        if userinfo_password {
            return Err(open_err(location, URL_PASSWORD));
        }
        let mut config: Config = parsed.map_err(|e: postgres::Error| {
            open_err(
                location,
                format!("cannot read the URL: {}", redact_text(&e.to_string())),
            )
        })?;
        if config.get_password().is_some() {
            return Err(open_err(location, URL_PASSWORD));
        }
        // fsdelta's own copy of its PG* variables: the binary takes them out of the process
        // environment at start, so that no child inherits them (crate::os::env).
        let env = crate::os::env::var;
        if config.get_user().is_none() {
            match env("PGUSER").or_else(os_user) {
                Some(u) => {
                    config.user(&u);
                }
                None => {
                    return Err(open_err(
                        location,
                        "no user name: write postgres://USER@HOST/DB",
                    ));
                }
            }
        }
        if config.get_hosts().is_empty() {
            config.host(&env("PGHOST").unwrap_or_else(|| "/var/run/postgresql".into()));
        }
        if config.get_ports().is_empty()
            && let Some(p) = env("PGPORT").and_then(|p| p.parse::<u16>().ok())
        {
            config.port(p);
        }
        if config.get_dbname().is_none()
            && let Some(d) = env("PGDATABASE")
        {
            config.dbname(&d);
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        config.application_name("fsdelta");
        let host = match config.get_hosts().first() {
            Some(postgres::config::Host::Tcp(h)) => h.clone(),
            Some(postgres::config::Host::Unix(p)) => p.display().to_string(),
            None => String::new(),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let user = config.get_user().unwrap_or_default().to_string();
        let db = config.get_dbname().unwrap_or(&user).to_string();
        let shown = format!("host {host} port {port} (database {db}, user {user})");
        let password = match env("PGPASSWORD") {
            Some(p) => Some(p),
            None => pgpass_password(passfile, &host, port, &db, &user)
                .map_err(|m| open_err(location, m))?,
        };
        if let Some(p) = password {
            config.password(p);
        }
        config.ssl_mode(match ssl {
            SslChoice::Disable => postgres::config::SslMode::Disable,
            SslChoice::Prefer => postgres::config::SslMode::Prefer,
            _ => postgres::config::SslMode::Require,
        });
        Ok(PgTarget {
            config,
            ssl,
            root_cert,
            read_only: false,
            shown,
        })
    }

    /// Wait, with backoff, for up to `limit` until the server accepts a connection. Returns at
    /// once with the error when the server refuses for a reason waiting will not change (a
    /// wrong user, a missing database): only an unreachable server, or one starting up or
    /// shutting down, is waited for.
    pub fn wait_until_reachable(&self, limit: Duration) -> Result<(), StoreError> {
        let started = Instant::now();
        let mut backoff = Duration::from_millis(100);
        loop {
            let e = match self.connect() {
                Ok(_) => return Ok(()),
                Err(e) => e,
            };
            let transient = match &e {
                StoreError::Open { message, .. } => {
                    !message.starts_with("the server says")
                        || message.contains("starting up")
                        || message.contains("shutting down")
                        || message.contains("terminating connection")
                }
                _ => false,
            };
            if !transient || started.elapsed() >= limit {
                return Err(e);
            }
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
    }

    /// A new connection, or an error naming host, port and the server's own reason.
    pub fn connect(&self) -> Result<Client, StoreError> {
        let open_failed = |e: postgres::Error| StoreError::Open {
            location: format!("postgres {}", self.shown),
            message: connect_reason(&e),
        };
        let unix_only = self
            .config
            .get_hosts()
            .iter()
            .all(|h| matches!(h, postgres::config::Host::Unix(_)));
        let mut client =
            if self.ssl == SslChoice::Disable || (self.ssl == SslChoice::Prefer && unix_only) {
                // No TLS can happen (PostgreSQL has none over a Unix socket): no connector, whose
                // set-up reads the system's CA roots (about 0.1 s a connection).
                self.config.connect(postgres::NoTls).map_err(open_failed)?
            } else {
                self.config.connect(self.tls()?).map_err(open_failed)?
            };
        if self.read_only {
            // A statement rather than a startup option, so that poolers pass it on.
            client
                .batch_execute("SET default_transaction_read_only = on")
                .map_err(open_failed)?;
        }
        Ok(client)
    }

    /// The TLS connector for this target's sslmode and root certificate, built once a process
    /// for each (building one reads the system's CA roots).
    fn tls(&self) -> Result<postgres_native_tls::MakeTlsConnector, StoreError> {
        type Key = (SslChoice, Option<Vec<u8>>);
        static BUILT: Mutex<Vec<(Key, postgres_native_tls::MakeTlsConnector)>> =
            Mutex::new(Vec::new());
        let pem = match &self.root_cert {
            Some(file) => Some(
                crate::os::files::read_regular(
                    file,
                    PASSFILE_MAX,
                    crate::os::files::Symlinks::Follow,
                )
                .map_err(|e| open_err(&self.shown, format!("sslrootcert {e}")))?,
            ),
            None => None,
        };
        let key = (self.ssl, pem);
        let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, c)) = built.iter().find(|(k, _)| *k == key) {
            return Ok(c.clone());
        }
        let mut builder = native_tls::TlsConnector::builder();
        match self.ssl {
            SslChoice::Disable | SslChoice::Prefer | SslChoice::Require => {
                // libpq's prefer and require encrypt without checking the certificate.
                builder
                    .danger_accept_invalid_certs(true)
                    .danger_accept_invalid_hostnames(true);
            }
            SslChoice::VerifyCa => {
                builder.danger_accept_invalid_hostnames(true);
            }
            SslChoice::VerifyFull => {}
        }
        if let (Some(pem), Some(file)) = (&key.1, &self.root_cert) {
            let cert = native_tls::Certificate::from_pem(pem).map_err(|e| {
                open_err(&self.shown, format!("sslrootcert {}: {e}", file.display()))
            })?;
            builder.add_root_certificate(cert);
        }
        let connector = builder
            .build()
            .map_err(|e| open_err(&self.shown, format!("cannot set up TLS: {e}")))?;
        let tls = postgres_native_tls::MakeTlsConnector::new(connector);
        built.push((key, tls.clone()));
        Ok(tls)
    }
}

/// The server's own reason for a failed connection (its message, detail and hint), or the
/// network's.
pub(crate) fn connect_reason(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut s = format!("the server says: {}", db.message());
        if let Some(d) = db.detail() {
            s.push_str(&format!(" ({d})"));
        }
        if let Some(h) = db.hint() {
            s.push_str(&format!("; hint: {h}"));
        }
        return s;
    }
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(inner) = src {
        let t = inner.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = inner.source();
    }
    s
}

/// Find the password for (host, port, db, user) in a pgpass file: `host:port:db:user:password`
/// lines, `*` matching anything, `\\` escaping `:` and `\\`. The file must be a regular file (a
/// symlink, a FIFO or a device is refused, without blocking) of at most [`PASSFILE_MAX`] bytes,
/// readable by its owner only. A missing file is not an error unless it was named explicitly.
fn pgpass_lookup(
    file: &Path,
    named: bool,
    host: &str,
    port: u16,
    db: &str,
    user: &str,
) -> Result<Option<String>, String> {
    use crate::os::files::{Symlinks, read_regular};
    let meta = match std::fs::symlink_metadata(file) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !named => return Ok(None),
        Err(e) => return Err(format!("password file {}: {e}", file.display())),
    };
    if meta.is_file() && meta.mode() & 0o077 != 0 {
        return Err(format!(
            "password file {} has mode {:o}; a password file must be readable by its owner only: chmod 600 {}",
            file.display(),
            meta.mode() & 0o777,
            file.display()
        ));
    }
    let bytes = read_regular(file, PASSFILE_MAX, Symlinks::Refuse)
        .map_err(|e| format!("password file {e}"))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("password file {}: not UTF-8 text", file.display()))?;
    let port = port.to_string();
    let is_socket = host.starts_with('/');
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = split_pgpass(line);
        if fields.len() < 5 {
            continue;
        }
        let m = |pat: &str, v: &str| pat == "*" || pat == v;
        let host_ok = m(&fields[0], host) || (is_socket && fields[0] == "localhost");
        if host_ok && m(&fields[1], &port) && m(&fields[2], db) && m(&fields[3], user) {
            return Ok(Some(fields[4..].join(":")));
        }
    }
    Ok(None)
}

fn split_pgpass(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    fields.last_mut().unwrap().push(n);
                }
            }
            ':' => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

pub(crate) fn backend(e: postgres::Error) -> StoreError {
    match e.as_db_error() {
        Some(db) => StoreError::Backend(format!("PostgreSQL: {}", db.message())),
        None => StoreError::Backend(format!("PostgreSQL: {}", connect_reason(&e))),
    }
}

/// Whether an error means the connection is gone (server restart, network), so that the same
/// operation on a new connection may succeed.
pub(crate) fn is_connection_loss(e: &postgres::Error, client: &Client) -> bool {
    if e.is_closed() || client.is_closed() {
        return true;
    }
    match e.code() {
        Some(c) => {
            c.code().starts_with("08")
                || *c == SqlState::ADMIN_SHUTDOWN
                || *c == SqlState::CRASH_SHUTDOWN
                || *c == SqlState::CANNOT_CONNECT_NOW
        }
        // No SQL state: an I/O error on the socket is a lost connection; anything else (a value
        // that does not convert, say) is not, and must not be retried.
        None => std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>()),
    }
}

/// Run `f` on `client`; when the connection is lost, reconnect with backoff and run it again
/// (with `retry = true`, so that a write can first look for itself), for up to `retry_for`.
pub(crate) fn with_reconnect<T>(
    target: &PgTarget,
    client: &mut Client,
    retry_for: Duration,
    mut f: impl FnMut(&mut Client, bool) -> Result<T, postgres::Error>,
) -> Result<T, StoreError> {
    let started = Instant::now();
    let mut retry = false;
    let mut backoff = Duration::from_millis(100);
    loop {
        let err = match f(client, retry) {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        if !is_connection_loss(&err, client) {
            return Err(backend(err));
        }
        // Reconnect until it works or time runs out.
        loop {
            if started.elapsed() >= retry_for {
                return Err(StoreError::Backend(format!(
                    "lost the connection to PostgreSQL {} and could not get it back within {} s: {}",
                    target.shown,
                    retry_for.as_secs(),
                    connect_reason(&err)
                )));
            }
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_secs(1));
            if let Ok(c) = target.connect() {
                *client = c;
                break;
            }
        }
        retry = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_in_the_url_is_refused_with_the_places_to_put_it() {
        let e = PgTarget::parse("postgres://u:secret@db.example/x").unwrap_err();
        let m = e.to_string();
        assert!(m.contains("PGPASSWORD") && m.contains(".pgpass"), "{m}");
        assert!(
            !m.contains("secret"),
            "the message must not repeat the password: {m}"
        );
        assert_eq!(
            redact("postgres://u:pw@h:1/d?x=y"),
            "postgres://u:***@h:1/d?x=y"
        );
        assert_eq!(redact("postgres://u@h/d"), "postgres://u@h/d");
        assert_eq!(
            redact("postgres://u@h/d?sslmode=disable&pass%77ord=pw&x=1"),
            "postgres://u@h/d?sslmode=disable&pass%77ord=***&x=1"
        );
        assert_eq!(redact("postgres://u:p/w?x@y@h/d"), "postgres://u:***@h/d");
        assert_eq!(
            redact_text("store postgres://u@h/d?password=pw: no; 'postgresql://u:a b@h/d' x"),
            "store postgres://u@h/d?password=***: no; 'postgresql://u:***@h/d' x"
        );
        for url in [
            "postgres://u@h/x?password=pw",
            "postgres://u@h/x?sslpassword=pw",
        ] {
            let m = PgTarget::parse(url).unwrap_err().to_string();
            assert!(m.contains("PGPASSWORD") && !m.contains("=pw"), "{m}");
        }
    }

    #[test]
    fn unknown_sslmode_is_refused_and_libpq_modes_are_read() {
        assert!(PgTarget::parse("postgres://u@h/x?sslmode=sometimes").is_err());
        for (m, want) in [
            ("disable", SslChoice::Disable),
            ("prefer", SslChoice::Prefer),
            ("require", SslChoice::Require),
            ("verify-ca", SslChoice::VerifyCa),
            ("verify-full", SslChoice::VerifyFull),
        ] {
            let t = PgTarget::parse(&format!("postgres://u@h:6543/x?sslmode={m}")).unwrap();
            assert_eq!(t.ssl, want);
            assert_eq!(t.shown, "host h port 6543 (database x, user u)");
        }
    }

    #[test]
    fn a_socket_directory_in_the_url_is_a_unix_host() {
        let t = PgTarget::parse("postgres://postgres@%2Ftmp%2Fpg/db").unwrap();
        assert_eq!(
            t.shown,
            "host /tmp/pg port 5432 (database db, user postgres)"
        );
    }

    #[test]
    fn pgpass_matches_fields_wildcards_and_escapes_and_refuses_open_modes() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pass");
        std::fs::write(
            &f,
            "# comment\nother:5432:*:u:nope\nh:*:db:u:se\\:cret\\\\x\n*:*:*:*:fallback\n",
        )
        .unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            pgpass_lookup(&f, true, "h", 5432, "db", "u").unwrap(),
            Some("se:cret\\x".into())
        );
        assert_eq!(
            pgpass_lookup(&f, true, "z", 1, "q", "w").unwrap(),
            Some("fallback".into())
        );
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = pgpass_lookup(&f, true, "h", 5432, "db", "u").unwrap_err();
        assert!(e.contains("chmod 600"), "{e}");
        assert_eq!(
            pgpass_lookup(&dir.path().join("absent"), false, "h", 1, "d", "u").unwrap(),
            None
        );
        assert!(pgpass_lookup(&dir.path().join("absent"), true, "h", 1, "d", "u").is_err());
    }
}
