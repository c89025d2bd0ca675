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
) -> bool {
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
    let values = values_of(&mine, &head.name);
    let class = MetricClass::of(head.kind);
    // A configuration of a pair: resolved when the pair's verdict is (both sides stop together).
    if let Some((a, b)) = pairs.iter().find(|(a, b)| a == config || b == config) {
        let side = |c: &str| -> Vec<f64> {
            let ok: Vec<&NewSample> = stored
                .iter()
                .filter(|s| s.config == c && s.test == test && s.status == SampleStatus::Ok)
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

    #[test]
    fn a_tight_series_is_inside_the_band_and_a_noisy_one_is_not() {
        assert!(interval_inside_band(&[100.0, 101.0, 99.5, 100.2], 0.05));
        assert!(!interval_inside_band(&[100.0, 130.0, 80.0], 0.05));
        assert!(!interval_inside_band(&[100.0], 0.05));
    }
}
