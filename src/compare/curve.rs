//! Response curves: a suite test swept over a fio parameter (`sweep = { iodepth = [1, 4, 16] }`)
//! is one test a point, named `randread[iodepth=4]`; this module reads the points of a
//! comparison back into curves (one per configuration, test and I/O direction), judges them as
//! one false-discovery family a curve ([`control`]), says where the two sides' curves part, and
//! finds each side's knee ([`knee`]).
//!
//! Why a file of its own: "the new kernel saturates earlier" is a statement about a whole
//! curve, not about one of its points, and `compare`, `report` (text, markdown, JSON, the HTML
//! plot) and the many-sided comparison all need the same curves. Like the rest of `compare` it
//! must never do I/O nor format output; the point's name is all it reads of a test (every
//! sample stores it), so a curve needs nothing the store does not already hold.

use super::SeriesKey;
use super::judge::Judged;
use super::stats;
use super::verdict::{self, Comparison, Gate, Role, Verdict};
use serde::Serialize;
use std::collections::BTreeMap;

/// The test, parameter and value of a sweep point's name (`randread[iodepth=8]` gives
/// `("randread", "iodepth", "8")`), as `plan::suite::point_name` writes it; `None` for any
/// other test name.
pub fn point_of(test: &str) -> Option<(&str, &str, &str)> {
    let inner = test.strip_suffix(']')?;
    let open = inner.rfind('[')?;
    let (base, kv) = (&inner[..open], &inner[open + 1..]);
    let (k, v) = kv.split_once('=')?;
    (!base.is_empty() && !k.is_empty() && !v.is_empty()).then_some((base, k, v))
}

/// A swept value as a number for ordering the points: fio's sizes count in 1024s (`4k` is
/// 4096, as fio reads `bs=4k`); `None` for anything else.
pub fn value_number(v: &str) -> Option<f64> {
    let lower = v.to_ascii_lowercase();
    let (num, mult) = match lower.chars().last()? {
        'k' => (&lower[..lower.len() - 1], 1024.0),
        'm' => (&lower[..lower.len() - 1], 1024.0 * 1024.0),
        'g' => (&lower[..lower.len() - 1], 1024.0 * 1024.0 * 1024.0),
        _ => (lower.as_str(), 1.0),
    };
    num.parse::<f64>()
        .ok()
        .filter(|n| n.is_finite())
        .map(|n| n * mult)
}

/// A curve grows a knee where its p99 latency grows by more than this factor from the point
/// before (10 %: smaller steps are within the run-to-run noise of a p99 on most machines).
pub const KNEE_MIN_GROWTH: f64 = 1.10;

/// The knee of a curve given as (throughput, p99 latency) per point in sweep order: the first
/// point whose p99 grew faster than its throughput from the point before (the elasticity
/// d ln p99 / d ln throughput above 1, or throughput flat or falling while p99 grows) by more
/// than [`KNEE_MIN_GROWTH`]. Below the knee more queue buys throughput; from it on, mostly
/// waiting. A point with a value that is not > 0 breaks no knee (it is skipped as a pair).
pub fn knee(points: &[(f64, f64)]) -> Option<usize> {
    (1..points.len()).find(|&i| {
        let ((t0, l0), (t1, l1)) = (points[i - 1], points[i]);
        if !(t0 > 0.0 && l0 > 0.0 && t1 > 0.0 && l1 > 0.0) {
            return false;
        }
        let (dt, dl) = ((t1 / t0).ln(), (l1 / l0).ln());
        dl > KNEE_MIN_GROWTH.ln() && dl > dt
    })
}

/// A side's center of one metric at one point with its 95 % interval: the geometric mean and
/// the t interval of the mean of the logs (with 2 or more values, all > 0); with one value, or
/// a value that is not > 0, the median without interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// Geometric mean (or median).
    pub center: f64,
    /// Lower end of the 95 % interval.
    pub lo: Option<f64>,
    /// Upper end of the 95 % interval.
    pub hi: Option<f64>,
}

impl Estimate {
    /// The estimate of `values`; `None` without values.
    pub fn of(values: &[f64]) -> Option<Estimate> {
        if values.is_empty() {
            return None;
        }
        if values.len() < 2
            || values
                .iter()
                .any(|v| v.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater))
        {
            return Some(Estimate {
                center: crate::model::median(values)?,
                lo: None,
                hi: None,
            });
        }
        let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
        let m = stats::mean(&logs)?;
        let half = stats::t_quantile(0.975, (logs.len() - 1) as f64) * stats::std_dev(&logs)?
            / (logs.len() as f64).sqrt();
        Some(Estimate {
            center: m.exp(),
            lo: Some((m - half).exp()),
            hi: Some((m + half).exp()),
        })
    }
}

/// One side of one point: throughput ([`throughput_metric`]) and p99 completion latency.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SidePoint {
    /// IOPS, or bytes a second for a bs sweep.
    pub throughput: Option<Estimate>,
    /// p99 completion latency, ns.
    pub p99: Option<Estimate>,
}

/// One metric's judged change at a point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    /// Current against baseline, percent.
    pub diff_pct: Option<f64>,
    /// The verdict after the curve's false-discovery control.
    pub verdict: Verdict,
}

/// One point of a curve.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    /// The swept value as written (`16`, `4k`).
    pub value: String,
    /// The point's test name.
    pub test: String,
    /// The baseline side (empty in a report of one selection).
    pub baseline: SidePoint,
    /// The current side.
    pub current: SidePoint,
    /// Throughput's judged change (comparisons only).
    pub throughput: Option<Change>,
    /// p99's judged change (comparisons only).
    pub p99: Option<Change>,
}

/// A response curve of one configuration, test and I/O direction, both sides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Curve {
    /// Configuration (as the rows name it: `A vs B` across configurations).
    pub config: String,
    /// The swept test's name (without the point).
    pub test: String,
    /// The swept parameter.
    pub param: String,
    /// fio's direction: read, write or trim.
    pub direction: String,
    /// The throughput metric plotted, without the direction: `iops`, or `bw_bytes` for a bs
    /// sweep ([`throughput_metric`]).
    pub throughput: String,
    /// The points in sweep order (by value).
    pub points: Vec<Point>,
    /// The first point where a throughput or p99 verdict is regressed or improved: where the
    /// curves part.
    pub parts_at: Option<usize>,
    /// The baseline curve's knee ([`knee`] of its centers).
    pub knee_baseline: Option<usize>,
    /// The current curve's knee.
    pub knee_current: Option<usize>,
}

/// A metric of one point as the curves need it: its key, each side's values, and its
/// comparison (none in a report of one selection).
pub struct Row<'a> {
    /// Configuration, test, metric.
    pub key: &'a SeriesKey,
    /// Baseline values.
    pub baseline: &'a [f64],
    /// Current values.
    pub current: &'a [f64],
    /// The judged comparison.
    pub comparison: Option<&'a Comparison>,
}

impl<'a> From<&'a Judged> for Row<'a> {
    fn from(j: &'a Judged) -> Row<'a> {
        Row {
            key: &j.key,
            baseline: &j.baseline_values,
            current: &j.current_values,
            comparison: Some(&j.comparison),
        }
    }
}

/// fio's p99 completion latency, per direction: a curve's y.
const LATENCY: &str = "clat_ns_p99";

/// The throughput a curve over `param` plots, as fio's metric per direction: IOPS, but
/// bandwidth for a block-size sweep (larger blocks give fewer IOPS by design; against IOPS
/// every bs curve would have its knee at its second point).
pub fn throughput_metric(param: &str) -> &'static str {
    if param == "bs" { "bw_bytes" } else { "iops" }
}

/// The response curves among `rows` (any order): per (configuration, swept test, parameter,
/// direction) with at least two points that have fio's IOPS or p99 for that direction, in the
/// order of the rows' first appearance; points in sweep order.
pub fn curves(rows: &[Row<'_>]) -> Vec<Curve> {
    // (config, test, param, direction) -> value -> (throughput row, latency row)
    type Key = (String, String, String, String);
    type Slots<'r, 'a> = (Option<&'r Row<'a>>, Option<&'r Row<'a>>);
    type Points<'r, 'a> = Vec<(String, Slots<'r, 'a>)>;
    let mut order: Vec<Key> = Vec::new();
    let mut found: BTreeMap<Key, Points<'_, '_>> = BTreeMap::new();
    for r in rows {
        let Some((test, param, value)) = point_of(&r.key.test) else {
            continue;
        };
        let Some((dir, what)) = r.key.metric.split_once('_') else {
            continue;
        };
        let through = throughput_metric(param);
        if !["read", "write", "trim"].contains(&dir) || (what != through && what != LATENCY) {
            continue;
        }
        let key = (
            r.key.config.clone(),
            test.to_string(),
            param.to_string(),
            dir.to_string(),
        );
        if !found.contains_key(&key) {
            order.push(key.clone());
        }
        let points = found.entry(key).or_default();
        let at = match points.iter().position(|(v, _)| v == value) {
            Some(i) => i,
            None => {
                points.push((value.to_string(), (None, None)));
                points.len() - 1
            }
        };
        if what == through {
            points[at].1.0 = Some(r);
        } else {
            points[at].1.1 = Some(r);
        }
    }
    let mut out = Vec::new();
    for key in order {
        let Some(mut points) = found.remove(&key) else {
            continue;
        };
        if points.len() < 2 {
            continue;
        }
        points.sort_by(|(a, _), (b, _)| match (value_number(a), value_number(b)) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            _ => a.cmp(b),
        });
        let (config, test, param, direction) = key;
        let points: Vec<Point> = points
            .into_iter()
            .map(|(value, (t, l))| {
                let pick = |r: &Row<'_>, base: bool| {
                    Estimate::of(if base { r.baseline } else { r.current })
                };
                let side = |base: bool| SidePoint {
                    throughput: t.and_then(|r| pick(r, base)),
                    p99: l.and_then(|r| pick(r, base)),
                };
                let change = |r: Option<&Row<'_>>| {
                    r.and_then(|r| r.comparison).map(|c| Change {
                        diff_pct: c.diff_pct,
                        verdict: c.verdict,
                    })
                };
                Point {
                    test: format!("{test}[{param}={value}]"),
                    value,
                    baseline: side(true),
                    current: side(false),
                    throughput: change(t),
                    p99: change(l),
                }
            })
            .collect();
        let parted = |c: &Option<Change>| {
            c.as_ref()
                .is_some_and(|c| matches!(c.verdict, Verdict::Regressed | Verdict::Improved))
        };
        let parts_at = points
            .iter()
            .position(|p| parted(&p.throughput) || parted(&p.p99));
        let knee_of = |side: fn(&Point) -> &SidePoint| {
            let centers: Option<Vec<(f64, f64)>> = points
                .iter()
                .map(|p| {
                    let s = side(p);
                    Some((s.throughput?.center, s.p99?.center))
                })
                .collect();
            centers.and_then(|c| knee(&c))
        };
        out.push(Curve {
            throughput: throughput_metric(&param).to_string(),
            knee_baseline: knee_of(|p| &p.baseline),
            knee_current: knee_of(|p| &p.current),
            config,
            test,
            param,
            direction,
            points,
            parts_at,
        });
    }
    out
}

/// The curves of judged rows ([`curves`]).
pub fn of_judged(rows: &[Judged]) -> Vec<Curve> {
    let rows: Vec<Row<'_>> = rows.iter().map(Row::from).collect();
    curves(&rows)
}

/// A percentage with its sign and no decimals past the tens (`-12 %`, `+4.5 %`).
fn signed_pct(v: f64) -> String {
    if v.abs() >= 10.0 {
        format!("{v:+.0} %")
    } else {
        format!("{v:+.1} %")
    }
}

impl Curve {
    /// The point's label: `iodepth=16`.
    pub fn label(&self, i: usize) -> String {
        format!("{}={}", self.param, self.points[i].value)
    }

    /// One sentence on where the curves part, for every output: "curves part at iodepth=16
    /// (throughput -12 %, p99 +40 %)", or that they agree at every point; then each side's
    /// knee.
    pub fn sentence(&self) -> String {
        let values: Vec<&str> = self.points.iter().map(|p| p.value.as_str()).collect();
        let mut s = format!(
            "curve {} ({}, {} {}; {} points, one false-discovery family): ",
            self.test,
            self.direction,
            self.param,
            values.join(", "),
            self.points.len()
        );
        match self.parts_at {
            Some(i) => {
                let p = &self.points[i];
                let d = |c: &Option<Change>| {
                    c.as_ref()
                        .and_then(|c| c.diff_pct)
                        .map_or("-".to_string(), signed_pct)
                };
                s.push_str(&format!(
                    "curves part at {} (throughput {}, p99 {})",
                    self.label(i),
                    d(&p.throughput),
                    d(&p.p99)
                ));
            }
            None if self.points.iter().any(|p| p.throughput.is_some()) => s.push_str(
                "the curves do not part (no point's throughput or p99 is judged regressed or improved)",
            ),
            None => s.push_str("one side only"),
        }
        let knee = |k: Option<usize>| k.map_or("none".to_string(), |i| self.label(i));
        if self.points.iter().any(|p| p.throughput.is_some()) {
            s.push_str(&format!(
                "; knee: baseline {}, current {}",
                knee(self.knee_baseline),
                knee(self.knee_current)
            ));
        } else {
            s.push_str(&format!("; knee: {}", knee(self.knee_current)));
        }
        s
    }
}

/// The false-discovery control of the points of swept tests (see [`point_of`]): roles and
/// gates as every other row's ([`verdict::judge_family`]), then Benjamini-Hochberg over each
/// curve (configuration and swept test) per role, every point's metrics in one family. A
/// curve's points are judged together, not with the rest of the comparison: seven points of
/// one sweep are one question ("did the curve move"), and mixing them into the comparison's
/// headline family would let a long sweep dilute the other tests' verdicts. `idx` are the
/// positions in `rows` of the points.
pub fn control(rows: &mut [Judged], idx: &[usize], gate: Gate) {
    let mut copies: Vec<Comparison> = idx.iter().map(|&i| rows[i].comparison.clone()).collect();
    {
        let mut items: Vec<verdict::Judging<'_>> = idx
            .iter()
            .zip(copies.iter_mut())
            .map(|(&i, c)| verdict::Judging {
                group: (rows[i].key.config.as_str(), rows[i].key.test.as_str()),
                metric: rows[i].key.metric.as_str(),
                headline: rows[i].headline,
                comparison: c,
            })
            .collect();
        verdict::judge_family(&mut items, gate);
    }
    let mut families: BTreeMap<(String, String, bool), Vec<usize>> = BTreeMap::new();
    for (&i, c) in idx.iter().zip(&copies) {
        rows[i].comparison.role = c.role;
        rows[i].comparison.gates = c.gates;
        let curve = point_of(&rows[i].key.test).map_or("", |(t, _, _)| t);
        families
            .entry((
                rows[i].key.config.clone(),
                curve.to_string(),
                c.role == Role::Headline,
            ))
            .or_default()
            .push(i);
    }
    for ((_, _, headline), members) in families {
        let role = if headline {
            Role::Headline
        } else {
            Role::Secondary
        };
        let mut family: Vec<&mut Comparison> = rows
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| members.contains(i))
            .map(|(_, j)| &mut j.comparison)
            .collect();
        verdict::control_fdr(&mut family, role);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::verdict::{Margins, MetricClass};
    use crate::model::{Direction, MetricKind, Unit};

    #[test]
    fn a_point_name_reads_back_and_other_names_are_not_points() {
        assert_eq!(
            point_of("randread[iodepth=8]"),
            Some(("randread", "iodepth", "8"))
        );
        assert_eq!(point_of("two[bs=64k]"), Some(("two", "bs", "64k")));
        for n in [
            "randread",
            "[iodepth=8]",
            "rr[iodepth]",
            "rr[=4]",
            "rr[bs=]",
        ] {
            assert_eq!(point_of(n), None, "{n}");
        }
        assert_eq!(value_number("4k"), Some(4096.0));
        assert_eq!(value_number("1M"), Some(1048576.0));
        assert_eq!(value_number("16"), Some(16.0));
        assert_eq!(value_number("x"), None);
    }

    /// A device with `servers` parallel units of service time 100 us: IOPS grow with the queue
    /// until the units are busy, then latency grows with the queue instead (Little's law).
    fn saturating(depths: &[f64], servers: f64) -> Vec<(f64, f64)> {
        depths
            .iter()
            .map(|&qd| {
                let iops = qd.min(servers) / 100e-6;
                (iops, qd / iops * 1e9)
            })
            .collect()
    }

    #[test]
    fn the_knee_is_where_latency_starts_to_grow_faster_than_throughput() {
        let qd = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];
        // 8 units: 1..8 scale (latency flat), 16 doubles latency at the same IOPS
        assert_eq!(knee(&saturating(&qd, 8.0)), Some(4));
        // 2 units: the knee comes earlier, at qd 4
        assert_eq!(knee(&saturating(&qd, 2.0)), Some(2));
        // never saturating in range: no knee
        assert_eq!(knee(&saturating(&qd, 100.0)), None);
        // latency growing slower than throughput (1.6x IOPS, 1.3x p99): not yet a knee
        assert_eq!(knee(&[(1000.0, 100.0), (1600.0, 130.0)]), None);
        // latency growing faster than throughput: a knee
        assert_eq!(knee(&[(1000.0, 100.0), (1300.0, 160.0)]), Some(1));
        // throughput falling while latency grows by 20 %: a knee
        assert_eq!(knee(&[(1000.0, 100.0), (900.0, 120.0)]), Some(1));
        // p99 noise under 10 % with flat throughput: no knee
        assert_eq!(knee(&[(1000.0, 100.0), (995.0, 108.0)]), None);
        // a zero point is skipped, the next pair still counts
        assert_eq!(
            knee(&[(0.0, 100.0), (1000.0, 100.0), (1000.0, 200.0)]),
            Some(2)
        );
        assert_eq!(knee(&[]), None);
    }

    #[test]
    fn a_block_size_curve_plots_bandwidth() {
        // 4k to 64k: IOPS fall as blocks grow while bandwidth grows; p99 grows a little
        let mut rows = Vec::new();
        for (bs, iops, bw, p99) in [
            ("4k", 50_000.0, 200e6, 100e3),
            ("16k", 30_000.0, 480e6, 120e3),
            ("64k", 9_000.0, 576e6, 400e3),
        ] {
            let t = format!("b[bs={bs}]");
            let v = |x: f64| around(x, 0.01);
            rows.push(judged(&t, "read_iops", &v(iops), &v(iops), true));
            rows.push(judged(&t, "read_bw_bytes", &v(bw), &v(bw), false));
            rows.push(judged(&t, "read_clat_ns_p99", &v(p99), &v(p99), true));
        }
        let cs = of_judged(&rows);
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0].throughput, "bw_bytes");
        let t0 = cs[0].points[0].baseline.throughput.unwrap().center;
        assert!((t0 - 200e6).abs() / 200e6 < 0.01, "{t0}");
        // against bandwidth the knee is at 64k (p99 x3.3 for 1.2x the bytes), not at 16k
        assert_eq!(cs[0].knee_baseline, Some(2));
        assert_eq!(throughput_metric("iodepth"), "iops");
    }

    #[test]
    fn an_estimate_is_the_geometric_mean_with_its_t_interval() {
        let e = Estimate::of(&[100.0, 100.0, 100.0]).unwrap();
        assert!((e.center - 100.0).abs() < 1e-9);
        assert!((e.lo.unwrap() - 100.0).abs() < 1e-9);
        let e = Estimate::of(&[90.0, 110.0]).unwrap();
        assert!(e.lo.unwrap() < e.center && e.center < e.hi.unwrap());
        assert!((e.center - (90.0f64 * 110.0).sqrt()).abs() < 1e-9);
        let one = Estimate::of(&[5.0]).unwrap();
        assert_eq!((one.center, one.lo, one.hi), (5.0, None, None));
        assert_eq!(Estimate::of(&[]), None);
    }

    fn judged(test: &str, metric: &str, base: &[f64], cur: &[f64], headline: bool) -> Judged {
        let direction = if metric.ends_with("iops") {
            Direction::HigherIsBetter
        } else {
            Direction::LowerIsBetter
        };
        let class = if metric.ends_with("iops") {
            MetricClass::Throughput
        } else {
            MetricClass::Tail
        };
        let comparison = verdict::compare(base, cur, direction, class, &Margins::default());
        Judged {
            key: SeriesKey {
                config: "c".into(),
                test: test.into(),
                metric: metric.into(),
            },
            unit: Unit::OpsPerSec,
            kind: MetricKind::Mean,
            headline,
            baseline_values: base.to_vec(),
            current_values: cur.to_vec(),
            comparison,
        }
    }

    /// Seeded values around `center` with spread `cv` (a fixed pattern, no randomness).
    fn around(center: f64, cv: f64) -> Vec<f64> {
        [-1.0, -0.5, 0.0, 0.5, 1.0, 0.25]
            .iter()
            .map(|k| center * (1.0 + k * cv))
            .collect()
    }

    #[test]
    fn curves_part_where_a_point_changes_and_each_side_has_its_knee() {
        // baseline saturates past qd 16, current at qd 16 (throughput -60 % there)
        let mut rows = Vec::new();
        for (qd, (bt, bl), (ct, cl)) in [
            (1, (10_000.0, 100e3), (10_000.0, 100e3)),
            (4, (40_000.0, 100e3), (40_000.0, 100e3)),
            (16, (160_000.0, 100e3), (64_000.0, 200e3)),
            (64, (160_000.0, 400e3), (64_000.0, 800e3)),
        ] {
            let t = format!("rr[iodepth={qd}]");
            rows.push(judged(
                &t,
                "read_iops",
                &around(bt, 0.01),
                &around(ct, 0.01),
                true,
            ));
            rows.push(judged(
                &t,
                "read_clat_ns_p99",
                &around(bl, 0.01),
                &around(cl, 0.01),
                true,
            ));
            rows.push(judged(
                &t,
                "read_bw_bytes",
                &around(bt, 0.01),
                &around(ct, 0.01),
                false,
            ));
        }
        rows.push(judged(
            "plain",
            "read_iops",
            &around(1.0, 0.01),
            &around(1.0, 0.01),
            true,
        ));
        // out of order on purpose: the curve sorts by value
        rows.swap(0, 6);
        let idx: Vec<usize> = (0..rows.len() - 1).collect();
        control(&mut rows, &idx, Gate::Headline);
        let cs = of_judged(&rows);
        assert_eq!(cs.len(), 1);
        let c = &cs[0];
        let values: Vec<&str> = c.points.iter().map(|p| p.value.as_str()).collect();
        assert_eq!(values, ["1", "4", "16", "64"]);
        assert_eq!(c.parts_at, Some(2));
        assert_eq!(c.knee_baseline, Some(3));
        assert_eq!(c.knee_current, Some(2));
        assert_eq!(
            c.sentence(),
            "curve rr (read, iodepth 1, 4, 16, 64; 4 points, one false-discovery family): \
             curves part at iodepth=16 (throughput -60 %, p99 +100 %); knee: baseline \
             iodepth=64, current iodepth=16"
        );
        // roles: iops and p99 headline, bw secondary; gates follow
        let role = |t: &str, m: &str| {
            let j = rows
                .iter()
                .find(|j| j.key.test == t && j.key.metric == m)
                .unwrap();
            (j.comparison.role, j.comparison.gates)
        };
        assert_eq!(role("rr[iodepth=16]", "read_iops"), (Role::Headline, true));
        assert_eq!(
            role("rr[iodepth=16]", "read_bw_bytes"),
            (Role::Secondary, false)
        );
        // the curve's family holds its 8 headline metrics, not the plain test's
        let q = rows
            .iter()
            .find(|j| j.key.test == "rr[iodepth=16]" && j.key.metric == "read_iops")
            .and_then(|j| j.comparison.q_value);
        assert!(q.is_some());
    }

    #[test]
    fn the_comparisons_own_families_are_as_without_the_curve() {
        let plain = || {
            vec![
                judged(
                    "a",
                    "read_iops",
                    &around(1000.0, 0.02),
                    &around(940.0, 0.02),
                    true,
                ),
                judged(
                    "b",
                    "read_iops",
                    &around(1000.0, 0.02),
                    &around(990.0, 0.02),
                    true,
                ),
                judged(
                    "b",
                    "read_bw_bytes",
                    &around(9.0, 0.02),
                    &around(9.5, 0.02),
                    false,
                ),
            ]
        };
        let mut alone = plain();
        crate::compare::judge::control(&mut alone, Gate::Headline);
        let mut with = plain();
        for qd in [1, 2, 4] {
            let t = format!("rr[iodepth={qd}]");
            with.push(judged(
                &t,
                "read_iops",
                &around(1000.0, 0.02),
                &around(700.0, 0.02),
                true,
            ));
            with.push(judged(
                &t,
                "read_clat_ns_p99",
                &around(5.0, 0.02),
                &around(5.0, 0.02),
                true,
            ));
        }
        crate::compare::judge::control(&mut with, Gate::Headline);
        for (a, w) in alone.iter().zip(&with) {
            assert_eq!(
                a.comparison.q_value, w.comparison.q_value,
                "{}",
                a.key.metric
            );
            assert_eq!(
                a.comparison.verdict, w.comparison.verdict,
                "{}",
                a.key.metric
            );
        }
        // and the curve's points got q-values of their own family (6 headline hypotheses)
        assert!(with[3..].iter().all(|j| j.comparison.q_value.is_some()));
        assert_eq!(with[3].comparison.role, Role::Headline);
    }

    #[test]
    fn a_point_alone_in_its_family_can_be_overruled_by_the_curve() {
        // one point barely changed, seven unchanged: with the curve as one family, q > p
        let mut rows = Vec::new();
        for qd in 1..=8 {
            let t = format!("rr[iodepth={qd}]");
            let cur = if qd == 3 { 1.03 } else { 1.0 };
            rows.push(judged(
                &t,
                "read_iops",
                &around(1000.0, 0.02),
                &around(1000.0 * cur, 0.02),
                true,
            ));
        }
        let idx: Vec<usize> = (0..rows.len()).collect();
        control(&mut rows, &idx, Gate::Headline);
        // the seven unchanged points have one-sided p 0.5, so Benjamini-Hochberg gives the
        // changed one q = min(8 x its one-sided p, 0.5): the whole curve is its family
        let j = &rows[2].comparison;
        let (p, q) = (j.p_value.unwrap(), j.q_value.unwrap());
        assert!((q - (8.0 * p / 2.0).min(0.5)).abs() < 1e-12, "p {p} q {q}");
        assert!(rows.iter().all(|j| j.comparison.q_value.is_some()));
    }
}
