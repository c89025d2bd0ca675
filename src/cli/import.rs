//! `fsdelta import fio-json FILE --label TEXT`: bring results that fio already produced into the
//! store, as one run whose samples carry the same metric names as the native fio engine, so that
//! they compare with fsdelta's own runs.

use super::{DbArg, EXIT_OK};
use crate::fio::import::import_fio_json;
use crate::model::{Environment, RunStatus, SiteFacts};
use crate::store::{self, NewRun};
use anyhow::{Context, Result};
use chrono::Utc;
use std::collections::BTreeMap;
use std::path::Path;

/// Import one fio JSON file (the output of `fio --output-format=json` or `json+`).
pub fn fio_json(db: &DbArg, file: &Path, label: &str, config: &str) -> Result<i32> {
    let text = crate::os::input::read_to_string(file).context("reading the fio JSON file")?;
    let imported = import_fio_json(&text)
        .with_context(|| format!("{} is not fio JSON fsdelta can read", file.display()))?;
    if imported.is_empty() {
        anyhow::bail!("{} holds no fio job", file.display());
    }
    let mut store = store::open(&db.location())?;
    let now = Utc::now();
    let started = imported
        .iter()
        .filter_map(|s| s.started_at)
        .min()
        .unwrap_or(now);
    // fio's JSON says nothing about the machine or the filesystem: record only what is known.
    let environment = Environment {
        host: "(imported)".into(),
        ..Environment::default()
    };
    let run = store.create_run(&NewRun {
        label: label.to_string(),
        suite: "import:fio-json".into(),
        started_at: started,
        fsdelta_version: env!("CARGO_PKG_VERSION").to_string(),
        environment,
    })?;
    let mut reps: BTreeMap<String, u32> = BTreeMap::new();
    let mut failed = 0;
    let n = imported.len();
    for s in imported {
        let rep = reps.entry(s.test.clone()).or_insert(0);
        *rep += 1;
        let facts = SiteFacts {
            extra: BTreeMap::from([
                ("imported_from".to_string(), file.display().to_string()),
                ("fio_version".to_string(), s.fio_version.clone()),
            ]),
            ..SiteFacts::default()
        };
        let sample = s.into_new_sample(config, *rep, facts, started);
        if sample.status == crate::model::SampleStatus::Failed {
            failed += 1;
        }
        if let Err(e) = store.add_sample(run, &sample) {
            let _ = store.finish_run(run, RunStatus::Failed, Utc::now());
            return Err(e).context("storing an imported sample");
        }
    }
    let status = if failed > 0 {
        RunStatus::Failed
    } else {
        RunStatus::Complete
    };
    store.finish_run(run, status, now)?;
    eprintln!(
        "imported {n} fio job(s) from {} as run {run} (label {label}, configuration {config}){}",
        file.display(),
        if failed > 0 {
            format!("; {failed} job(s) reported an error and are stored as failed")
        } else {
            String::new()
        }
    );
    Ok(EXIT_OK)
}
