//! The reading room: everything a comparison, a history, a report or an export needs, read from
//! a [`Store`] once and handed on as plain values (runs with their samples, the sides of a
//! comparison, a metric's points over runs, each run's medians, CPU profiles, fs_mark's
//! per-iteration rows, fio's logs).
//!
//! Why a room of its own: the data used to enter four times on its way from the store to a text
//! table (the command line, the report's gathering, fs_mark's and fio's attachment readers each
//! took a `&dyn Store`). Now the store is read here and only here, so `compare` judges values
//! and `report` renders values; neither sees a `Store`.
//!
//! What it must never do: judge (no statistics beyond what the store itself answers, such as a
//! run's median), format output, or write to the store (every reader opens it read-only).

pub mod calibration;
pub mod extras;

use crate::model::{RunInfo, SampleRecord, SampleStatus};
use crate::store::{RunFilter, Selector, Store, StoreError};

/// Why something cannot be read. The messages name the problem and what to check.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The store failed, or a selector is malformed or matches nothing.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// `SEL@CONFIG` names a configuration none of the selected runs has.
    #[error(
        "no sample of configuration '{config}' in '{sel}' (SEL@CONFIG names a configuration of the run; see `fsdelta show {sel}`)"
    )]
    NoConfig {
        /// The configuration asked for.
        config: String,
        /// The selector without `@CONFIG`.
        sel: String,
    },
    /// A side of a comparison has no sample left after the filters.
    #[error(
        "nothing to compare: {base} has {base_n} matching samples and {cur} has {cur_n}; check --test/--config and SEL@CONFIG against `fsdelta show`"
    )]
    NothingToCompare {
        /// Baseline selector as typed.
        base: String,
        /// Its samples kept.
        base_n: usize,
        /// Current selector as typed.
        cur: String,
        /// Its samples kept.
        cur_n: usize,
    },
    /// A side pools guest samples of different accelerators.
    #[error(
        "{sel} pools guest samples made under {accels}: emulated (TCG) and hardware-virtualised \
         (KVM) numbers are not repetitions of one measurement; select runs made under one \
         accelerator (`fsdelta show` names each sample's vm_accel)"
    )]
    MixedAccelerators {
        /// The selector as typed.
        sel: String,
        /// The accelerators, `kvm and tcg`.
        accels: String,
    },
}

/// Runs with their samples, in the order the selector resolves them.
pub type Loaded = Vec<(RunInfo, Vec<SampleRecord>)>;

/// Split `SEL@CONFIG` into the selector and the configuration (the last `@` counts).
pub fn split_config(sel: &str) -> (&str, Option<&str>) {
    match sel.rsplit_once('@') {
        Some((s, c)) if !s.is_empty() && !c.is_empty() => (s, Some(c)),
        _ => (sel, None),
    }
}

/// Runs a selector (without `@CONFIG`) names, each with its samples.
pub fn runs(store: &dyn Store, sel: &str) -> Result<Loaded, ReadError> {
    let sel: Selector = sel.parse()?;
    let runs = store.select(&sel)?;
    let ids: Vec<_> = runs.iter().map(|r| r.id).collect();
    let samples = store.samples_of_runs(&ids)?;
    Ok(runs.into_iter().zip(samples).collect())
}

/// [`runs`] for `SEL` or `SEL@CONFIG` (only that configuration's samples), as `show` and
/// `export` take.
pub fn runs_config(store: &dyn Store, sel: &str) -> Result<Loaded, ReadError> {
    let (s, cfg) = split_config(sel);
    let mut runs = runs(store, s)?;
    if let Some(cfg) = cfg {
        for (_, samples) in &mut runs {
            samples.retain(|x| x.sample.config == cfg);
        }
        if runs.iter().all(|(_, s)| s.is_empty()) {
            return Err(ReadError::NoConfig {
                config: cfg.to_string(),
                sel: s.to_string(),
            });
        }
    }
    Ok(runs)
}

/// How a selection is described in headers: `latest (run 7, label x)`.
pub fn describe(sel: &str, runs: &[(RunInfo, Vec<SampleRecord>)]) -> String {
    let ids: Vec<String> = runs.iter().map(|(r, _)| r.id.to_string()).collect();
    let labels: Vec<&str> = {
        let mut l: Vec<&str> = runs.iter().map(|(r, _)| r.label.as_str()).collect();
        l.dedup();
        l
    };
    format!(
        "{sel} (run{} {}, label {})",
        if ids.len() > 1 { "s" } else { "" },
        ids.join(","),
        labels.join(",")
    )
}

/// Which samples a side keeps: only these tests and configurations (all when empty).
#[derive(Clone, Copy, Debug, Default)]
pub struct Filter<'a> {
    /// Test names.
    pub tests: &'a [String],
    /// Configuration names.
    pub configs: &'a [String],
}

impl Filter<'_> {
    /// Whether `s` passes the filter and the `@CONFIG` of its selector.
    fn keeps(&self, cfg: Option<&str>, s: &SampleRecord) -> bool {
        (self.tests.is_empty()
            || self
                .tests
                .iter()
                .any(|n| crate::model::test_selects(n, &s.sample.test)))
            && (self.configs.is_empty() || self.configs.contains(&s.sample.config))
            && cfg.is_none_or(|c| s.sample.config == c)
    }
}

/// One side of a comparison or report: how its selection is described, its runs, and its
/// samples that pass the filters.
#[derive(Clone, Debug)]
pub struct Side {
    /// `latest (run 4, label x)`.
    pub description: String,
    /// Its runs.
    pub runs: Vec<RunInfo>,
    /// Its samples that pass the filters.
    pub samples: Vec<SampleRecord>,
}

/// The side `sel` (`SEL` or `SEL@CONFIG`) names, its samples filtered.
pub fn side(store: &dyn Store, sel: &str, filter: &Filter<'_>) -> Result<Side, ReadError> {
    let (s, cfg) = split_config(sel);
    let loaded = runs(store, s)?;
    let description = describe(sel, &loaded);
    let mut infos = Vec::new();
    let mut samples = Vec::new();
    for (info, ss) in loaded {
        infos.push(info);
        samples.extend(ss.into_iter().filter(|s| filter.keeps(cfg, s)));
    }
    Ok(Side {
        description,
        runs: infos,
        samples,
    })
}

/// The two sides of a comparison as read, filtered by --test, --config and SEL@CONFIG.
#[derive(Clone, Debug)]
pub struct Sides {
    /// The baseline.
    pub base: Side,
    /// The current side.
    pub cur: Side,
    /// Two configurations put side by side (SEL@A vs SEL@B).
    pub across: bool,
}

/// Both sides of `base` against `cur`; refused when either keeps no sample, or pools samples
/// made under different accelerators.
pub fn sides(
    store: &dyn Store,
    base: &str,
    cur: &str,
    filter: &Filter<'_>,
) -> Result<Sides, ReadError> {
    let b = side(store, base, filter)?;
    let c = side(store, cur, filter)?;
    if b.samples.is_empty() || c.samples.is_empty() {
        return Err(ReadError::NothingToCompare {
            base: base.to_string(),
            base_n: b.samples.len(),
            cur: cur.to_string(),
            cur_n: c.samples.len(),
        });
    }
    for (sel, side) in [(base, &b.samples), (cur, &c.samples)] {
        one_accelerator(sel, side)?;
    }
    let (base_cfg, cur_cfg) = (split_config(base).1, split_config(cur).1);
    let across = (base_cfg.is_some() || cur_cfg.is_some()) && base_cfg != cur_cfg;
    Ok(Sides {
        base: b,
        cur: c,
        across,
    })
}

/// Refuse a side that pools samples made under different accelerators (TCG emulation and KVM):
/// emulated numbers compare CPU paths only, and are no repetitions of hardware-virtualised ones.
pub fn one_accelerator(sel: &str, side: &[SampleRecord]) -> Result<(), ReadError> {
    let mut accels: Vec<&str> = side
        .iter()
        .filter_map(|s| s.sample.facts.extra.get("vm_accel").map(String::as_str))
        .collect();
    accels.sort();
    accels.dedup();
    if accels.len() > 1 {
        return Err(ReadError::MixedAccelerators {
            sel: sel.to_string(),
            accels: accels.join(" and "),
        });
    }
    Ok(())
}

/// The machines whose runs a selector (`SEL` or `SEL@CONFIG`) names, sorted, each once.
pub fn hosts(store: &dyn Store, sel: &str) -> Result<Vec<String>, ReadError> {
    let parsed: Selector = split_config(sel).0.parse()?;
    let mut hosts: Vec<String> = store
        .select(&parsed)?
        .into_iter()
        .map(|r| r.environment.host)
        .collect();
    hosts.sort();
    hosts.dedup();
    Ok(hosts)
}

/// The newest `limit` runs, newest first (with a label, only runs of that label).
pub fn list(
    store: &dyn Store,
    label: Option<String>,
    limit: usize,
) -> Result<Vec<RunInfo>, ReadError> {
    Ok(store.runs(&RunFilter {
        label,
        limit: Some(limit),
    })?)
}

/// Per run of `runs`, the distinct kernels its guests booted (`vm_kernel` of its samples, in
/// order of first appearance; empty for a run on the host): what `list` shows as the kernel
/// under test.
pub fn guest_kernels(store: &dyn Store, runs: &[RunInfo]) -> Result<Vec<Vec<String>>, ReadError> {
    let ids: Vec<_> = runs.iter().map(|r| r.id).collect();
    Ok(store
        .samples_of_runs(&ids)?
        .into_iter()
        .map(|samples| {
            let mut out: Vec<String> = Vec::new();
            for s in samples {
                if let Some(k) = s.sample.facts.extra.get("vm_kernel")
                    && !out.contains(k)
                {
                    out.push(k.clone());
                }
            }
            out
        })
        .collect())
}

/// Every value of `metric` in the successful samples of `test`, per run that has ended, oldest
/// run first: one record per value, as `compare::history` takes them. One query for the series
/// (not every sample of every run).
pub fn metric_history(store: &dyn Store, test: &str, metric: &str) -> Result<Loaded, ReadError> {
    metric_history_on(store, test, metric, None)
}

/// [`metric_history`] of the runs of machine `host` only (every machine's when `None`). The
/// points are grouped by run once: looking each run's up among all points was runs x points
/// steps (5 million on the 1,000-run scale store).
pub fn metric_history_on(
    store: &dyn Store,
    test: &str,
    metric: &str,
    host: Option<&str>,
) -> Result<Loaded, ReadError> {
    let mut by_run: std::collections::HashMap<crate::model::RunId, Vec<SampleRecord>> =
        std::collections::HashMap::new();
    for p in store.metric_points(test, metric)? {
        by_run
            .entry(p.run_id)
            .or_default()
            .push(SampleRecord::of_point(&p, test));
    }
    let mut runs = store.runs(&RunFilter::default())?;
    runs.reverse();
    Ok(runs
        .into_iter()
        .filter(|r| r.status != crate::model::RunStatus::Running)
        .filter(|r| host.is_none_or(|h| r.environment.host == h))
        .map(|r| {
            let samples = by_run.remove(&r.id).unwrap_or_default();
            (r, samples)
        })
        .collect())
}

/// The raw results kept with each successful sample of `samples` (only the tests named, when
/// any are), as `show --raw` prints them: each sample with its attachments.
pub fn raw_results<'a>(
    store: &dyn Store,
    samples: &[&'a SampleRecord],
    tests: &[String],
) -> Result<Vec<(&'a SampleRecord, Vec<crate::model::Attachment>)>, ReadError> {
    let mut out = Vec::new();
    for s in samples
        .iter()
        .filter(|s| s.sample.status == SampleStatus::Ok)
        .filter(|s| {
            tests.is_empty()
                || tests
                    .iter()
                    .any(|n| crate::model::test_selects(n, &s.sample.test))
        })
    {
        out.push((*s, store.attachments(s.id)?));
    }
    Ok(out)
}

/// A guest sample run under accelerator `accel` (`tcg` is marked emulated, as the VM marks
/// it), for the tests of the rooms that read sides.
#[cfg(test)]
pub(crate) fn guest_sample(accel: &str) -> SampleRecord {
    use crate::model::{NewSample, SampleStatus, SiteFacts};
    let mut facts = SiteFacts::default();
    facts.extra.insert("vm_accel".into(), accel.into());
    if accel == "tcg" {
        facts
            .extra
            .insert("emulated".into(), crate::vm::EMULATED_LABEL.into());
    }
    SampleRecord {
        id: 1,
        run_id: 1,
        sample: NewSample {
            config: "k".into(),
            test: "t".into(),
            repetition: 1,
            sequence: 1,
            facts,
            status: SampleStatus::Ok,
            error: None,
            started_at: chrono::Utc::now(),
            duration_s: 1.0,
            workload: String::new(),
            metrics: vec![],
            histograms: vec![],
            attachments: Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::guest_sample as guest;
    use super::*;

    #[test]
    fn a_side_pooling_tcg_and_kvm_samples_is_refused_and_one_accelerator_passes() {
        let e = one_accelerator("label:x", &[guest("tcg"), guest("kvm")]).unwrap_err();
        assert!(e.to_string().contains("kvm and tcg"), "{e}");
        assert!(
            e.to_string().starts_with("label:x pools guest samples"),
            "{e}"
        );
        one_accelerator("label:x", &[guest("tcg"), guest("tcg")]).unwrap();
    }

    #[test]
    fn the_last_at_names_the_configuration() {
        assert_eq!(split_config("label:a@ext4"), ("label:a", Some("ext4")));
        assert_eq!(split_config("label:a@b@xfs"), ("label:a@b", Some("xfs")));
        assert_eq!(split_config("latest@"), ("latest@", None));
        assert_eq!(split_config("@x"), ("@x", None));
    }
}
