//! What the pages computed, kept while the store has not changed: judged comparisons, histories
//! with their change points, the home page's and the machines page's summaries, ended runs'
//! pages. Twenty clients asking for the same history would otherwise each read every point of
//! the series and run E-divisive on it (about 100 ms of CPU per page on the scale stores), and
//! two cores serve about twenty such pages a second.
//!
//! Why keyed by a [`Stamp`]: a store changes by new runs, new samples and runs that end (fsdelta
//! never deletes a run), so the newest runs' ids, states and sample counts say whether anything
//! a cached page shows may have changed. The stamp is read at most once per [`STAMP_EVERY`];
//! a run that ends while [`STAMP_RUNS`] newer ones started is not in it, so every entry is also
//! recomputed after [`MAX_AGE`]. Alerts and triage are never cached (pages read them fresh: a
//! triage shows at once). Errors are never kept (a store that went away is asked again).
//!
//! Bounds: each kind of entry has its own budget in bytes ([`Cache::new`]); the least recently
//! used entries go first. Twenty requests for the same missing entry compute it once: the others
//! wait for it ([`Cache::get_or_compute`]). This module must never read the store itself but
//! through the closures it is given, and never keep an error.

use super::PageError;
use crate::model::{RunId, RunStatus};
use crate::store::{RunFilter, Store};
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How many of the newest runs the stamp looks at.
pub const STAMP_RUNS: usize = 20;

/// The stamp is read again after this long (pages may be this much behind a new run).
pub const STAMP_EVERY: Duration = Duration::from_secs(1);

/// The oldest a cached entry may be, whatever the stamp says.
pub const MAX_AGE: Duration = Duration::from_secs(60);

/// What the store looked like: the newest runs' (id, ended, sample count).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stamp(Vec<(RunId, bool, u64)>);

impl Stamp {
    /// Read the stamp of `s` (one small query: the newest [`STAMP_RUNS`] runs).
    pub fn read(s: &dyn Store) -> Result<Stamp, PageError> {
        let runs = s.runs(&RunFilter {
            label: None,
            limit: Some(STAMP_RUNS),
        })?;
        Ok(Stamp(
            runs.iter()
                .map(|r| (r.id, r.status != RunStatus::Running, r.sample_count))
                .collect(),
        ))
    }
}

/// The stamps of the store, read at most once per [`STAMP_EVERY`].
#[derive(Default)]
pub struct StampClock(Mutex<Option<(Instant, Stamps)>>);

/// The store's stamp, and the same without sample counts.
#[derive(Clone)]
pub struct Stamps {
    /// Every change: new runs, runs that end, new samples.
    pub full: Arc<Stamp>,
    /// Only new runs and runs that end: what histories and the machine summaries follow (they
    /// leave running runs out), so a fleet adding samples does not recompute them.
    pub runs: Arc<Stamp>,
}

impl StampClock {
    /// The current stamps, read from `s` when the kept ones are older than [`STAMP_EVERY`].
    pub fn now(&self, s: &dyn Store) -> Result<Stamps, PageError> {
        if let Some((at, st)) = &*self.0.lock().unwrap_or_else(|p| p.into_inner())
            && at.elapsed() < STAMP_EVERY
        {
            return Ok(st.clone());
        }
        let full = Stamp::read(s)?;
        let runs = Stamp(
            full.0
                .iter()
                .map(|(id, ended, _)| (*id, *ended, 0))
                .collect(),
        );
        let st = Stamps {
            full: Arc::new(full),
            runs: Arc::new(runs),
        };
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), st.clone()));
        Ok(st)
    }
}

/// A value and how many bytes it holds (roughly: what the budget counts).
pub trait Weigh {
    /// Bytes held.
    fn bytes(&self) -> usize;
}

impl Weigh for String {
    fn bytes(&self) -> usize {
        self.len()
    }
}

impl<A: Weigh, B: Weigh> Weigh for (A, B) {
    fn bytes(&self) -> usize {
        self.0.bytes() + self.1.bytes()
    }
}

type Slot<V> = Arc<OnceLock<Result<Arc<V>, PageError>>>;

struct Entry<V> {
    stamp: Arc<Stamp>,
    made: Instant,
    used: u64,
    bytes: usize,
    slot: Slot<V>,
}

struct Inner<K, V> {
    map: HashMap<K, Entry<V>>,
    bytes: usize,
    tick: u64,
}

/// Values of one kind by key, each valid for the stamp it was computed under, within a budget.
pub struct Cache<K, V> {
    inner: Mutex<Inner<K, V>>,
    budget: usize,
}

impl<K: Eq + Hash + Clone, V: Weigh> Cache<K, V> {
    /// An empty cache that holds at most `budget` bytes of values.
    pub fn new(budget: usize) -> Cache<K, V> {
        Cache {
            inner: Mutex::new(Inner {
                map: HashMap::new(),
                bytes: 0,
                tick: 0,
            }),
            budget,
        }
    }

    /// The value of `key` under `stamp`: the kept one, or `compute`'s (once, however many
    /// requests ask at the same time: the others wait for it). An error is returned, not kept.
    pub fn get_or_compute(
        &self,
        key: &K,
        stamp: &Arc<Stamp>,
        compute: impl FnOnce() -> Result<V, PageError>,
    ) -> Result<Arc<V>, PageError> {
        let slot = {
            let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            g.tick += 1;
            let tick = g.tick;
            let fresh = g
                .map
                .get(key)
                .is_some_and(|e| *e.stamp == **stamp && e.made.elapsed() < MAX_AGE);
            if !fresh && let Some(old) = g.map.remove(key) {
                g.bytes -= old.bytes;
            }
            let e = g.map.entry(key.clone()).or_insert_with(|| Entry {
                stamp: Arc::clone(stamp),
                made: Instant::now(),
                used: tick,
                bytes: 0,
                slot: Arc::default(),
            });
            e.used = tick;
            Arc::clone(&e.slot)
        };
        let mut computed = false;
        let r = slot
            .get_or_init(|| {
                computed = true;
                compute().map(Arc::new)
            })
            .clone();
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let same = g.map.get(key).is_some_and(|e| Arc::ptr_eq(&e.slot, &slot));
        match &r {
            Err(_) if same => {
                if let Some(old) = g.map.remove(key) {
                    g.bytes -= old.bytes;
                }
            }
            Ok(v) if computed && same => {
                let n = v.bytes() + std::mem::size_of::<K>() + 64;
                if let Some(e) = g.map.get_mut(key) {
                    e.bytes = n;
                }
                g.bytes += n;
                evict(&mut g, self.budget);
            }
            _ => {}
        }
        r
    }

    /// Bytes held now (values whose computation ended).
    pub fn bytes(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).bytes
    }

    /// Entries held now (including those being computed).
    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .map
            .len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Drop the least recently used entries until the bytes fit the budget (the newest entry stays,
/// even alone over it: the page was computed anyway).
fn evict<K: Eq + Hash + Clone, V>(g: &mut Inner<K, V>, budget: usize) {
    while g.bytes > budget && g.map.len() > 1 {
        let Some(oldest) = g
            .map
            .iter()
            .filter(|(_, e)| e.slot.get().is_some())
            .min_by_key(|(_, e)| e.used)
            .map(|(k, _)| k.clone())
        else {
            return;
        };
        if let Some(e) = g.map.remove(&oldest) {
            g.bytes -= e.bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(newest: RunId) -> Arc<Stamp> {
        Arc::new(Stamp(vec![(newest, true, 10)]))
    }

    #[test]
    fn a_value_is_computed_once_per_stamp_and_again_when_the_store_changed() {
        let c: Cache<&str, String> = Cache::new(1 << 20);
        let mut calls = 0;
        for _ in 0..3 {
            let v = c
                .get_or_compute(&"h", &stamp(7), || {
                    calls += 1;
                    Ok("page".to_string())
                })
                .unwrap();
            assert_eq!(*v, "page");
        }
        assert_eq!(calls, 1);
        let v = c
            .get_or_compute(&"h", &stamp(8), || {
                calls += 1;
                Ok("newer".to_string())
            })
            .unwrap();
        assert_eq!((calls, v.as_str()), (2, "newer"));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn an_error_is_returned_and_not_kept() {
        let c: Cache<&str, String> = Cache::new(1 << 20);
        let e = c
            .get_or_compute(&"h", &stamp(1), || Err(PageError::bad("away")))
            .unwrap_err();
        assert_eq!(e.message, "away");
        assert!(c.is_empty());
        let v = c
            .get_or_compute(&"h", &stamp(1), || Ok("back".to_string()))
            .unwrap();
        assert_eq!(*v, "back");
    }

    #[test]
    fn the_least_recently_used_go_first_when_over_budget() {
        let c: Cache<u32, String> = Cache::new(3 * (1000 + 64 + 4));
        let big = || Ok("x".repeat(1000));
        for k in 0..3 {
            c.get_or_compute(&k, &stamp(1), big).unwrap();
        }
        // 0 used again: 1 is now the least recently used.
        c.get_or_compute(&0, &stamp(1), || unreachable!()).unwrap();
        c.get_or_compute(&3, &stamp(1), big).unwrap();
        assert_eq!(c.len(), 3);
        assert!(c.bytes() <= 3 * (1000 + 64 + 4));
        let mut again = false;
        c.get_or_compute(&1, &stamp(1), || {
            again = true;
            big()
        })
        .unwrap();
        assert!(again, "1 was evicted");
        c.get_or_compute(&3, &stamp(1), || unreachable!()).unwrap();
    }

    #[test]
    fn concurrent_requests_for_one_missing_value_compute_it_once() {
        let c: Arc<Cache<&str, String>> = Arc::new(Cache::new(1 << 20));
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let gate = Arc::new(std::sync::Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (c, calls, gate) = (Arc::clone(&c), Arc::clone(&calls), Arc::clone(&gate));
                std::thread::spawn(move || {
                    gate.wait();
                    c.get_or_compute(&"h", &stamp(1), || {
                        calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(50));
                        Ok("page".to_string())
                    })
                    .unwrap()
                })
            })
            .collect();
        for t in threads {
            assert_eq!(*t.join().unwrap(), "page");
        }
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
