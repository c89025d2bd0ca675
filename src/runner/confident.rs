//! `--until-confident`: whether a test's headline metric is resolved after the repetitions so
//! far, so that the run adds repetitions only where they are still needed.
//!
//! Three questions, by what the run compares: against `--baseline` runs, the verdict of this
//! run against them; between two configurations of this run (`--config-name A --config-name B`,
//! `--kernel A --kernel B`: a pair), the verdict of B against A, so that an A/A of two
//! identical configurations runs until it can say "unchanged" (each side's own interval may be
//! tight long before the interval of their difference is); otherwise, whether the 95 % interval
//! of the configuration's own mean lies inside the unchanged band.
//!
//! With `--repeat-disturbed`, a sample measured under disturbance (fact
//! `crate::probe::disturbance::FACT`: others' I/O, a page-cache drop, other processes' CPU) is
//! left out of the decision, and a test whose latest sample was disturbed is not resolved: the
//! run repeats it (up to `--max-repeat`) instead of deciding on it. The disturbed sample stays
//! stored, its fact naming what disturbed it. Without it (the default) a disturbed sample counts
//! like any other, as it is named in the end table and in `compare`: on a machine that is always
//! busy, repeating every disturbed sample would only run to `--max-repeat`.
//!
//! Pure arithmetic on what the run stored; never I/O.

use crate::compare::{
    self, stats,
    verdict::{self, Margins, MetricClass},
};
use crate::model::{NewSample, SampleStatus};

/// Whether the headline metric (the first one its workload declares a headline, else its
/// first metric) of `test` on `config` is resolved: when `config` is a side of one of `pairs`
/// (base, current), the verdict of current against base is regressed, improved or unchanged;
/// with a baseline, its verdict is; otherwise the 95 % interval of its mean (on logs) lies
/// inside the metric class's unchanged band.
pub(crate) fn confident(
    stored: &[NewSample],
    baseline: &[compare::Series],
    pairs: &[(String, String)],
    config: &str,
    test: &str,
    margins: &Margins,
    repeat_disturbed: bool,
) -> bool {
    let disturbed = |s: &NewSample| repeat_disturbed && disturbed(s);
    let mine: Vec<&NewSample> = stored
        .iter()
        .filter(|s| s.config == config && s.test == test && s.status == SampleStatus::Ok)
        .collect();
    let Some(head) = mine.first().and_then(|s| {
        s.metrics
            .iter()
            .find(|m| m.headline)
            .or_else(|| s.metrics.first())
    }) else {
        // Nothing measured (failed or skipped): more repetitions will not help.
        return true;
    };
    // The latest sample disturbed: repeat it rather than decide on it.
    if mine
        .iter()
        .max_by_key(|s| s.repetition)
        .is_some_and(|s| disturbed(s))
    {
        return false;
    }
    let mine: Vec<&NewSample> = mine.into_iter().filter(|s| !disturbed(s)).collect();
    let values = values_of(&mine, &head.name);
    let class = MetricClass::of(head.kind);
    // A configuration of a pair: resolved when the pair's verdict is (both sides stop together).
    if let Some((a, b)) = pairs.iter().find(|(a, b)| a == config || b == config) {
        let side = |c: &str| -> Vec<f64> {
            let ok: Vec<&NewSample> = stored
                .iter()
                .filter(|s| s.config == c && s.test == test && s.status == SampleStatus::Ok)
                .filter(|s| !disturbed(s))
                .collect();
            values_of(&ok, &head.name)
        };
        let (base, cur) = (side(a), side(b));
        if base.is_empty() || cur.is_empty() {
            // The other side measured nothing: more repetitions of this one will not help.
            return true;
        }
        return verdict::compare(&base, &cur, head.direction, class, margins)
            .verdict
            .is_resolved();
    }
    if let Some(b) = baseline
        .iter()
        .find(|b| b.key.config == config && b.key.test == test && b.key.metric == head.name)
    {
        return verdict::compare(&b.values, &values, head.direction, class, margins)
            .verdict
            .is_resolved();
    }
    interval_inside_band(&values, margins.delta(class))
}

/// Whether a sample was measured under disturbance.
fn disturbed(s: &NewSample) -> bool {
    s.facts.extra.contains_key(crate::probe::disturbance::FACT)
}

/// The values of metric `name` in `samples`, in order.
fn values_of(samples: &[&NewSample], name: &str) -> Vec<f64> {
    samples
        .iter()
        .filter_map(|s| s.metrics.iter().find(|m| m.name == name))
        .map(|m| m.value)
        .collect()
}

/// Whether the 95 % t interval of the mean of ln(values) lies within +-ln(1 + delta).
fn interval_inside_band(values: &[f64], delta: f64) -> bool {
    if values.len() < 2 || values.iter().any(|v| *v <= 0.0) {
        return values.len() >= 2;
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let n = logs.len() as f64;
    let sd = stats::std_dev(&logs).unwrap_or(0.0);
    let half = stats::t_quantile(0.975, n - 1.0) * sd / n.sqrt();
    half <= delta.ln_1p()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(rep: u32, value: f64, why: Option<&str>) -> NewSample {
        let mut m = crate::model::Metric::new(
            "files_per_sec",
            value,
            crate::model::Unit::FilesPerSec,
            crate::model::Direction::HigherIsBetter,
        );
        m.headline = true;
        let mut facts = crate::model::SiteFacts::default();
        if let Some(w) = why {
            facts
                .extra
                .insert(crate::probe::disturbance::FACT.into(), w.into());
        }
        NewSample {
            config: "ext4".into(),
            test: "t".into(),
            repetition: rep,
            sequence: 0,
            facts,
            status: SampleStatus::Ok,
            error: None,
            started_at: chrono::Utc::now(),
            duration_s: 1.0,
            workload: String::new(),
            metrics: vec![m],
            histograms: vec![],
            attachments: Vec::new(),
        }
    }

    #[test]
    fn a_disturbed_sample_is_repeated_and_left_out_of_the_decision() {
        let m = Margins::default();
        let tight = [100.0, 100.5, 99.8, 100.2];
        let mut stored: Vec<NewSample> = tight
            .iter()
            .enumerate()
            .map(|(i, v)| sample(i as u32 + 1, *v, None))
            .collect();
        assert!(confident(&stored, &[], &[], "ext4", "t", &m, true));
        // A fifth, disturbed: not resolved, though the four before were.
        stored.push(sample(5, 13.0, Some("other processes' I/O 210 MiB")));
        assert!(!confident(&stored, &[], &[], "ext4", "t", &m, true));
        // Without --repeat-disturbed it counts like any other value: far outside the band.
        assert!(!confident(&stored, &[], &[], "ext4", "t", &m, false));
        // Its repetition, undisturbed: resolved, the disturbed value left out (with it the
        // interval would be far outside the band).
        stored.push(sample(6, 100.1, None));
        assert!(confident(&stored, &[], &[], "ext4", "t", &m, true));
        assert!(!confident(&stored, &[], &[], "ext4", "t", &m, false));
        let all: Vec<f64> = stored.iter().map(|s| s.metrics[0].value).collect();
        assert!(!interval_inside_band(
            &all,
            m.delta(MetricClass::Throughput)
        ));
    }

    #[test]
    fn a_tight_series_is_inside_the_band_and_a_noisy_one_is_not() {
        assert!(interval_inside_band(&[100.0, 101.0, 99.5, 100.2], 0.05));
        assert!(!interval_inside_band(&[100.0, 130.0, 80.0], 0.05));
        assert!(!interval_inside_band(&[100.0], 0.05));
    }
}
