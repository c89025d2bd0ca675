//! Store sessions for the server's blocking pool: read-only sessions handed out one per request
//! and put back after it, and the one writable session triage uses.
//!
//! Why: a request runs its store calls on a blocking thread (the store API is synchronous), and
//! opening a store per request would cost a connection (PostgreSQL) or a schema check (SQLite)
//! each time. A session that failed is dropped, not put back, so a store that went away is
//! reopened by the next request once it is back. Sessions never wait long for a lost
//! PostgreSQL connection ([`SESSION_RETRY`]): a page says the store is away instead.
//! This module must never open a writable session for reading.

use crate::queue::{Queue, QueueError};
use crate::store::{self, Backend, Store, StoreError};
use std::sync::Mutex;
use std::time::Duration;

/// How long a PostgreSQL session of the server retries a lost connection before the page says
/// the store is away (the request's own bound is longer).
pub const SESSION_RETRY: Duration = Duration::from_secs(2);

/// Idle read-only sessions, at most `max` kept.
pub struct Pool {
    location: String,
    idle: Mutex<Vec<Box<dyn Store>>>,
    max: usize,
}

impl Pool {
    /// A pool of read-only sessions of the store at `location`; nothing is opened yet.
    pub fn new(location: &str, max: usize) -> Pool {
        Pool {
            location: location.to_string(),
            idle: Mutex::new(Vec::new()),
            max,
        }
    }

    /// A read-only session: an idle one, or a new one.
    pub fn get(&self) -> Result<Box<dyn Store>, StoreError> {
        if let Some(s) = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return Ok(s);
        }
        open_read_only(&self.location)
    }

    /// Put a session back after a request that did not fail in the store.
    pub fn put(&self, s: Box<dyn Store>) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < self.max {
            idle.push(s);
        }
    }

    /// Drop every idle session (after a store error: they may all be broken).
    pub fn clear(&self) {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}

/// Idle connections to the fleet's queue (PostgreSQL stores), at most `max` kept: the home,
/// machines and jobs pages each read the queue, and a new connection per request cost more
/// than the page (a TCP or socket connect, authentication, a backend process).
pub struct QueuePool {
    location: String,
    idle: Mutex<Vec<Queue>>,
    max: usize,
}

impl QueuePool {
    /// A pool of queue connections of the store at `location`; nothing is opened yet.
    pub fn new(location: &str, max: usize) -> QueuePool {
        QueuePool {
            location: location.to_string(),
            idle: Mutex::new(Vec::new()),
            max,
        }
    }

    /// Run `f` with a queue connection (an idle one, or a new one), put back after it even when
    /// `f` failed: a statement that failed (a store whose queue tables do not exist yet) leaves
    /// the connection usable, and a lost connection is reconnected by the queue itself at its
    /// next use. (Dropping it on every failure made each home page of a store without a queue
    /// open a new connection.)
    pub fn with<T>(
        &self,
        f: impl FnOnce(&mut Queue) -> Result<T, QueueError>,
    ) -> Result<T, QueueError> {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut q = match idle {
            Some(q) => q,
            None => {
                let mut q = Queue::connect(&self.location)?;
                q.set_retry_for(SESSION_RETRY);
                q
            }
        };
        let r = f(&mut q);
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < self.max {
            idle.push(q);
        }
        r
    }
}

/// Open a read-only session whose lost connections are retried only [`SESSION_RETRY`].
pub fn open_read_only(location: &str) -> Result<Box<dyn Store>, StoreError> {
    match Backend::of(location) {
        Backend::Postgres => {
            let mut pg = store::postgres::PgStore::open_read_only(location)?;
            pg.set_retry_for(SESSION_RETRY);
            Ok(Box::new(pg))
        }
        Backend::Sqlite => store::open_read_only(location),
    }
}

/// Open the writable session of triage (and of the alert sweep): the schema is brought up to
/// date, as any writing command does.
pub fn open_writable(location: &str) -> Result<Box<dyn Store>, StoreError> {
    match Backend::of(location) {
        Backend::Postgres => {
            let mut pg = store::postgres::PgStore::open(location)?;
            pg.set_retry_for(SESSION_RETRY);
            Ok(Box::new(pg))
        }
        Backend::Sqlite => Ok(Box::new(store::sqlite::SqliteStore::open(
            std::path::Path::new(location),
        )?)),
    }
}

/// Whether a store error means the store is away (worth reopening) rather than a bad request.
pub fn is_away(e: &StoreError) -> bool {
    matches!(e, StoreError::Open { .. } | StoreError::Backend(_))
}
