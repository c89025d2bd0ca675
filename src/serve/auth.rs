//! Who may triage: the token (`--token-file`), compared in constant time, and the protection
//! of the triage form against cross-site requests (a per-process form secret and the browser's
//! `Origin` / `Sec-Fetch-Site` headers).
//!
//! This module must never log, show or echo a token or the form secret anywhere but the hidden
//! field of the form it guards.

use sha2::{Digest, Sha256};
use std::path::Path;

/// The shortest token accepted: a guessable token would make triage anybody's.
pub const MIN_TOKEN: usize = 16;

/// Why a token file is refused.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// Unreadable.
    #[error("cannot read the token file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Readable by others.
    #[error(
        "the token file {0} is readable by other users; make it private (chmod 600 {0}), since anybody who reads it may triage"
    )]
    Open(String),
    /// Too short.
    #[error(
        "the token in {0} is shorter than {MIN_TOKEN} characters; write a long random one (for example: head -c 24 /dev/urandom | base64 > FILE)"
    )]
    Short(String),
}

/// Read the token: the file's first line, trimmed; the file must not be readable by group or
/// others.
pub fn read_token(path: &Path) -> Result<String, TokenError> {
    use std::os::unix::fs::PermissionsExt;
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|source| TokenError::Read {
        path: shown.clone(),
        source,
    })?;
    if meta.permissions().mode() & 0o044 != 0 {
        return Err(TokenError::Open(shown));
    }
    let text = std::fs::read_to_string(path).map_err(|source| TokenError::Read {
        path: shown.clone(),
        source,
    })?;
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.chars().count() < MIN_TOKEN {
        return Err(TokenError::Short(shown));
    }
    Ok(token)
}

/// Whether `given` is `expected`, in time that does not depend on where they differ: both are
/// hashed (so their lengths leak nothing either) and the digests compared byte by byte without
/// an early exit.
pub fn token_matches(given: &str, expected: &str) -> bool {
    let a = Sha256::digest(given.as_bytes());
    let b = Sha256::digest(expected.as_bytes());
    let diff = a
        .iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | std::hint::black_box(x ^ y));
    diff == 0
}

/// A new random secret for the triage forms of this process (64 hex digits).
pub fn new_form_secret() -> String {
    let b: [u8; 32] = rand::random();
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Whether a state-changing request comes from a page of this server: a `Sec-Fetch-Site`
/// header, when the browser sends one, must say `same-origin`; an `Origin` header, when sent,
/// must name the `Host` the request was sent to.
pub fn same_origin(origin: Option<&str>, fetch_site: Option<&str>, host: Option<&str>) -> bool {
    if let Some(site) = fetch_site
        && site != "same-origin"
    {
        return false;
    }
    match (origin, host) {
        (Some(o), Some(h)) => {
            let rest = o
                .strip_prefix("http://")
                .or_else(|| o.strip_prefix("https://"));
            rest == Some(h)
        }
        (Some(_), None) => false,
        (None, _) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_only_themselves() {
        assert!(token_matches("abcdefghijklmnopq", "abcdefghijklmnopq"));
        assert!(!token_matches("abcdefghijklmnopQ", "abcdefghijklmnopq"));
        assert!(!token_matches("", "abcdefghijklmnopq"));
        assert!(!token_matches("abcdefghijklmnopqr", "abcdefghijklmnopq"));
    }

    #[test]
    fn cross_site_requests_are_told_apart() {
        let h = Some("127.0.0.1:8080");
        assert!(same_origin(
            Some("http://127.0.0.1:8080"),
            Some("same-origin"),
            h
        ));
        assert!(same_origin(None, None, h));
        assert!(!same_origin(Some("http://evil.example"), None, h));
        assert!(!same_origin(None, Some("cross-site"), h));
        assert!(!same_origin(
            Some("http://127.0.0.1:8080"),
            Some("same-site"),
            h
        ));
        assert!(!same_origin(Some("null"), None, h));
    }

    #[test]
    fn token_files_must_be_private_and_long() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("t");
        std::fs::write(&f, "0123456789abcdefXYZ\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_token(&f).unwrap(), "0123456789abcdefXYZ");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read_token(&f).unwrap_err().to_string();
        assert!(e.contains("chmod 600") && !e.contains("0123456789"), "{e}");
        std::fs::write(&f, "short\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(read_token(&f), Err(TokenError::Short(_))));
    }
}
