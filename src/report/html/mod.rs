//! The self-contained HTML report of issue 7: `fsdelta report BASE CUR -o FILE.html` (or one
//! selection): a header that puts what differs between the sides first (a changed mount option is
//! the first thing a reader sees), the verdict summary, per test a diff chart with the repetitions
//! as dots, latency percentile curves from the stored histograms, history sparklines with change
//! points, and the 80-column text table for mail.
//!
//! Why a module of its own: a picture answers "how" and "how sure" where a table answers "what
//! changed", and the report must open anywhere, so it is one file with inline CSS, inline SVG and
//! a few lines of inline script (table sorting) that nothing needs in order to read it.
//!
//! What it must never do: read the store or the clock, compute statistics (verdicts, change
//! points and percentiles arrive in [`ReportInput`], assembled by `report::gather` from what
//! `read` read and `compare` judged), invent a number (everything drawn comes from the input),
//! or refer to anything outside the file (no URL, no CDN, no external script, stylesheet, font
//! or image).

mod charts;
mod header;
mod response;

use crate::compare::SeriesKey;
use crate::compare::changepoint::{ChangePoint, Scale, Segment};
use crate::compare::verdict::{Center, Comparison, Role as MetricRole, Summary, Verdict};
pub use crate::fio::logs::{FioLogKind, FioLogPoint};
use crate::model::RunInfo;
use crate::model::{Direction, MetricKind, SiteFacts, Unit};
use crate::report::svg::{Shape, esc};
use crate::report::text::fmt_value;
use std::fmt::Write;

/// Everything the report shows, assembled by `report::gather` from what `read` read.
#[derive(Clone, Debug)]
pub struct ReportInput {
    /// Who wrote it (`fsdelta 0.1.0`).
    pub generator: String,
    /// The baseline side; `None` for a report of one selection.
    pub baseline: Option<SideInput>,
    /// The current side (the only side of a single-selection report).
    pub current: SideInput,
    /// Per configuration, the distinct target facts of each side.
    pub configs: Vec<ConfigFacts>,
    /// Per configuration and test, the distinct workload command lines of each side.
    pub workloads: Vec<WorkloadLines>,
    /// Every metric, in display order (configuration, test, the workload's metric order).
    pub metrics: Vec<MetricInput>,
    /// Verdict counts (comparisons only).
    pub summary: Option<Summary>,
    /// Latency percentile curves from the stored histograms.
    pub curves: Vec<PercentileCurves>,
    /// The text table (`compare`'s or `show`'s), shown in a `<pre>` for copying into a mail.
    pub text_table: String,
    /// Flame graphs of the tests that changed, when their samples were profiled.
    pub flamegraphs: Vec<FlameGraphs>,
    /// Warnings about the machine (background load that differs between the sides), from
    /// `compare::context`; shown first in the differences box.
    pub machine_warnings: Vec<String>,
    /// fs_mark's per-iteration rows (one per `-L` loop) of the samples that kept them.
    pub iterations: Vec<IterationTables>,
    /// The fio logs (write_lat_log, write_bw_log, write_iops_log) the samples kept, one chart
    /// per log file of a test.
    pub fio_logs: Vec<FioLogChart>,
    /// The response curves of swept tests (`compare::curve`), one chart each.
    pub response_curves: Vec<crate::compare::curve::Curve>,
}

/// One fio log file of a test, as every sample of either side kept it.
#[derive(Clone, Debug)]
pub struct FioLogChart {
    /// Configuration name as shown in the report.
    pub config: String,
    /// Test name.
    pub test: String,
    /// The log's file name (`x_clat.1.log`).
    pub file: String,
    /// What its values are.
    pub kind: FioLogKind,
    /// Per sample and direction, baseline samples first, by run and repetition.
    pub series: Vec<FioLogSeries>,
}

/// One direction of one sample's log, reduced to at most a few hundred points.
#[derive(Clone, Debug)]
pub struct FioLogSeries {
    /// Which side the sample belongs to.
    pub role: Role,
    /// Its run.
    pub run_id: i64,
    /// Its repetition.
    pub repetition: u32,
    /// The sample id.
    pub sample_id: i64,
    /// fio's ddir: 0 read, 1 write, 2 trim.
    pub ddir: u8,
    /// Log lines behind the points.
    pub lines: u64,
    /// Whether the stored log was cut at the attachment size limit (the points cover its start).
    pub cut: bool,
    /// In time order.
    pub points: Vec<FioLogPoint>,
}

/// fs_mark's per-iteration rows of one test: every sample of either side that kept them.
#[derive(Clone, Debug)]
pub struct IterationTables {
    /// Configuration name as shown in the report.
    pub config: String,
    /// Test name.
    pub test: String,
    /// Baseline samples first, then current ones, by run and repetition.
    pub samples: Vec<SampleIterations>,
}

/// The rows fs_mark printed for one sample, as stored.
#[derive(Clone, Debug)]
pub struct SampleIterations {
    /// Which side the sample belongs to ([`Role::Baseline`] or [`Role::Current`]).
    pub role: Role,
    /// Its run.
    pub run_id: i64,
    /// Its repetition.
    pub repetition: u32,
    /// The sample id (as `show --raw` names it).
    pub sample_id: i64,
    /// One row per iteration, in order.
    pub rows: Vec<crate::fsmark::IterationResult>,
}

/// CPU flame graphs of one test (inferno SVGs, built from the stored folded stacks).
#[derive(Clone, Debug)]
pub struct FlameGraphs {
    /// Configuration name as shown in the report.
    pub config: String,
    /// Test name.
    pub test: String,
    /// The baseline side's flame graph.
    pub baseline: Option<String>,
    /// The current side's flame graph.
    pub current: Option<String>,
    /// The differential flame graph (red: grew in the current side, blue: shrank).
    pub differential: Option<String>,
}

/// Standard base64 (RFC 4648) of `bytes`, for `data:` URIs.
fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Flame graphs as images: inferno's SVGs carry their own zoom script, which an `<img>` does
/// not run, so the report stays script-free apart from its own sorting code.
fn flamegraph_section(out: &mut String, input: &ReportInput, config: &str, test: &str) {
    let Some(f) = input
        .flamegraphs
        .iter()
        .find(|f| f.config == config && f.test == test)
    else {
        return;
    };
    out.push_str(
        "<h3>CPU profiles</h3><p class=\"note\">perf record -e cpu-clock -a -g over each \
         profiled sample, every repetition of a side merged. Width = share of CPU samples. In the \
         differential graph the current side's stacks are drawn, red where they grew against the \
         baseline and blue where they shrank.</p>",
    );
    for (what, svg) in [
        ("baseline", &f.baseline),
        ("current", &f.current),
        ("differential", &f.differential),
    ] {
        if let Some(svg) = svg {
            let _ = write!(
                out,
                "<figure class=\"flame\"><figcaption>{what}</figcaption><img alt=\"{what} flame graph of {}\" style=\"width:100%\" src=\"data:image/svg+xml;base64,{}\"></figure>",
                esc(test),
                base64(svg.as_bytes())
            );
        }
    }
}

/// The fio logs of one test: a chart per log file (one line per sample and direction).
fn fio_logs_section(out: &mut String, input: &ReportInput, config: &str, test: &str) {
    let charts: Vec<&FioLogChart> = input
        .fio_logs
        .iter()
        .filter(|c| c.config == config && c.test == test)
        .collect();
    if charts.is_empty() {
        return;
    }
    let cut = charts.iter().any(|c| c.series.iter().any(|s| s.cut));
    let _ = write!(
        out,
        "<h3>fio logs</h3><p class=\"note\">The logs the job wrote (write_lat_log, write_bw_log, \
         write_iops_log), as stored with each sample (<code>fsdelta show --raw</code>), over the \
         job's time. Read: {}; write: blue; trim: orange{}. A line per I/O is drawn as the mean of each \
         time bucket (a per-I/O iops log as I/Os per second); averaged logs (log_avg_msec) a \
         point per line. Latencies on a log axis. Hover a marker for its numbers.{}</p><div class=\"grid\">",
        if input.baseline.is_some() {
            "pink, the baseline's dark"
        } else {
            "pink"
        },
        if input.baseline.is_some() {
            "; the baseline's lines dashed"
        } else {
            ""
        },
        if cut {
            " Some logs were longer than fsdelta keeps (1 MiB of text): their charts show the \
             start of the run; log_avg_msec keeps whole runs short."
        } else {
            ""
        }
    );
    for c in charts {
        out.push_str(&charts::fio_log_chart(c, input.baseline.is_some()));
    }
    out.push_str("</div>\n");
}

/// fs_mark's per-iteration rows of one test: a plot of Files/sec by iteration (one line per
/// sample) and a table per sample with fs_mark's columns, the iteration index and the wall-clock
/// rate. Open when some sample ran more than one iteration (`-L`), folded otherwise.
fn iterations_section(out: &mut String, input: &ReportInput, config: &str, test: &str) {
    let Some(t) = input
        .iterations
        .iter()
        .find(|t| t.config == config && t.test == test)
    else {
        return;
    };
    let loops = t.samples.iter().map(|s| s.rows.len()).max().unwrap_or(0);
    let _ = write!(
        out,
        "<details class=\"iters\"{}><summary><b>fs_mark iterations</b>: {} sample{}, up to {} \
         iteration{} each</summary><p class=\"note\">The rows fs_mark printed for each sample (one \
         per <code>-L</code> loop), as stored with it (<code>fsdelta show --raw</code>); the \
         metrics above pool them. Files/sec is fs_mark's (the sum of per-thread rates); wall \
         files/sec is files over the iteration's wall time.{}</p>",
        if loops > 1 { " open" } else { "" },
        t.samples.len(),
        if t.samples.len() == 1 { "" } else { "s" },
        loops,
        if loops == 1 { "" } else { "s" },
        if loops > 1 && input.baseline.is_some() {
            " In the plot, one line per sample: dashed with rings the baseline's, solid pink \
             the current side's; hover a marker for its sample."
        } else {
            ""
        },
    );
    if loops > 1 {
        out.push_str(&charts::iterations_chart(t, input.baseline.is_some()));
    }
    out.push_str("<div class=\"grid\">");
    for s in &t.samples {
        let side = match (input.baseline.is_some(), s.role) {
            (false, _) => String::new(),
            (true, Role::Baseline) => "baseline, ".into(),
            (true, _) => "current, ".into(),
        };
        let _ = write!(
            out,
            "<table class=\"iter\" data-sample=\"{}\"><caption>{side}run {}, repetition {} \
             (sample {})</caption><thead><tr><th class=\"num\">iteration</th>\
             <th class=\"num\">FSUse%</th><th class=\"num\">Count</th><th class=\"num\">Size</th>\
             <th class=\"num\">Files/sec</th><th class=\"num\">App Overhead</th>\
             <th class=\"num\">wall files/sec</th><th class=\"num\">wall s</th></tr></thead><tbody>",
            s.sample_id, s.run_id, s.repetition, s.sample_id
        );
        for r in &s.rows {
            let _ = write!(
                out,
                "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{:.1}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                r.iteration,
                r.fs_use_pct,
                r.count,
                r.size,
                r.files_per_sec,
                r.app_overhead_us,
                // The real fs_mark prints no wall time: its rows show a dash, never a guess.
                r.files_per_sec_wall
                    .map_or_else(|| "-".to_string(), |v| format!("{v:.1}")),
                r.wall_ns
                    .map_or_else(|| "-".to_string(), |v| format!("{:.3}", v as f64 / 1e9))
            );
        }
        out.push_str("</tbody></table>");
    }
    out.push_str("</div></details>\n");
}

/// One side of the report.
#[derive(Clone, Debug)]
pub struct SideInput {
    /// The selector as typed and what it resolved to (`latest (run 7, label 6.18)`).
    pub description: String,
    /// Its runs.
    pub runs: Vec<RunInfo>,
}

/// The target facts of one configuration on each side (distinct values; paths left out).
#[derive(Clone, Debug)]
pub struct ConfigFacts {
    /// Configuration name (`A vs B` when two configurations are put side by side).
    pub name: String,
    /// Distinct facts of the baseline samples.
    pub baseline: Vec<SiteFacts>,
    /// Distinct facts of the current samples.
    pub current: Vec<SiteFacts>,
}

/// The workload command lines of one test on each side.
#[derive(Clone, Debug)]
pub struct WorkloadLines {
    /// Configuration name.
    pub config: String,
    /// Test name.
    pub test: String,
    /// Distinct baseline command lines.
    pub baseline: Vec<String>,
    /// Distinct current command lines.
    pub current: Vec<String>,
}

/// One metric: its values on each side, the verdict, and its history.
#[derive(Clone, Debug)]
pub struct MetricInput {
    /// Configuration, test, metric.
    pub key: SeriesKey,
    /// Unit of the values.
    pub unit: Unit,
    /// Which way is better.
    pub direction: Direction,
    /// What kind of number, as the workload declared.
    pub kind: MetricKind,
    /// A headline metric of its workload.
    pub headline: bool,
    /// Baseline repetitions (empty for a single-selection report).
    pub baseline_values: Vec<f64>,
    /// Current repetitions.
    pub current_values: Vec<f64>,
    /// The verdict (comparisons only).
    pub comparison: Option<Comparison>,
    /// One value per stored run, when the store holds at least [`MIN_HISTORY`] runs with it.
    pub history: Option<History>,
}

/// Fewest runs in a history worth a sparkline (change points need 3).
pub const MIN_HISTORY: usize = 3;

/// Which side of the report a run of the history belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// One of the baseline runs.
    Baseline,
    /// One of the current runs.
    Current,
    /// Another stored run.
    Other,
}

/// One point of a history: a run's median.
#[derive(Clone, Debug)]
pub struct HistoryPoint {
    /// The run.
    pub run_id: i64,
    /// Its label (shared by every metric's point of that run).
    pub label: std::rc::Rc<str>,
    /// Median of its repetitions.
    pub median: f64,
    /// Number of repetitions.
    pub n: usize,
    /// Whether it is one of the compared runs.
    pub role: Role,
}

/// A metric's history in run order, with its change points and the segments between them.
#[derive(Clone, Debug)]
pub struct History {
    /// Points in run order.
    pub points: Vec<HistoryPoint>,
    /// Change points (indices into `points`).
    pub change_points: Vec<ChangePoint>,
    /// Segments between the change points.
    pub segments: Vec<Segment>,
    /// Whether detection ran on values (segments drawn at their means) or ranks (medians).
    pub scale: Scale,
}

/// A percentile curve read from the merged histograms of one side.
#[derive(Clone, Debug)]
pub struct Curve {
    /// Number of recorded values.
    pub count: u64,
    /// `(percentile in percent, value)`, percentiles ascending and below 100.
    pub points: Vec<(f64, f64)>,
    /// The largest recorded value.
    pub max: f64,
}

/// The percentile curves of one histogram (e.g. `create_lat_ns`) of one test, both sides.
#[derive(Clone, Debug)]
pub struct PercentileCurves {
    /// Configuration name (as in [`MetricInput::key`]).
    pub config: String,
    /// Test name.
    pub test: String,
    /// Histogram name.
    pub name: String,
    /// Unit of the values.
    pub unit: Unit,
    /// Baseline curve.
    pub baseline: Option<Curve>,
    /// Current curve.
    pub current: Option<Curve>,
}

/// The page: stylesheet, header, summary, one section per test, the text table.
pub fn render(input: &ReportInput) -> String {
    let mut out = String::with_capacity(256 * 1024);
    let title = match &input.baseline {
        Some(b) => format!(
            "fsdelta report: {} vs {}",
            side_title(b, input, true),
            side_title(&input.current, input, false)
        ),
        None => format!(
            "fsdelta report: {}",
            side_title(&input.current, input, false)
        ),
    };
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"{}\">\n<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n",
        esc(&input.generator),
        esc(&title),
        STYLE
    );
    let _ = writeln!(out, "<h1>{}</h1>", esc(&title));
    // Emulated guests compare CPU paths only: said before any number.
    if let Some(label) = emulated(input) {
        let _ = writeln!(
            out,
            "<p class=\"warn\"><b>NOTE: guest samples {}</b></p>",
            esc(label)
        );
    }
    header::sides_line(&mut out, input);
    if input.baseline.is_some() {
        header::differences(&mut out, input);
    }
    header::setup(&mut out, input, false);
    if let Some(s) = &input.summary {
        summary(&mut out, input, s);
    }
    response::section(&mut out, input);
    out.push_str("<nav class=\"toc\"><b>Tests:</b> ");
    for (i, (config, test)) in sections(input).iter().enumerate() {
        let _ = write!(
            out,
            "<a href=\"#t{i}\">{} <span class=\"muted\">({})</span></a> ",
            esc(test),
            esc(config)
        );
    }
    out.push_str("<a href=\"#setup\">full setup</a> <a href=\"#text\">text table</a></nav>\n");
    for (i, (config, test)) in sections(input).iter().enumerate() {
        test_section(&mut out, input, i, config, test);
    }
    header::setup(&mut out, input, true);
    let _ = writeln!(
        out,
        "<section id=\"text\"><h2>Text table</h2><p class=\"note\">The same numbers in 80 columns, \
         for pasting into a mail.</p><pre>{}</pre></section>",
        esc(&input.text_table)
    );
    let _ = write!(
        out,
        "<footer>Written by {}. Every number drawn is a stored measurement of the runs named \
         above, or a statistic computed from them (statistics.md).</footer>\n<script>{}</script>\n</body>\n</html>\n",
        esc(&input.generator),
        SCRIPT
    );
    out
}

/// The distinct labels of a side's runs.
/// A side as the title names it: its labels, then in brackets the configurations it holds and
/// the kernel they ran on (a guest's kernel where the samples ran in a guest, else the host's):
/// `6.18 [ext4, kernel 6.18.0]`.
fn side_title(s: &SideInput, input: &ReportInput, baseline: bool) -> String {
    let mut configs: Vec<&str> = Vec::new();
    let mut kernels: Vec<&str> = Vec::new();
    for c in &input.configs {
        let facts = if baseline && input.baseline.is_some() {
            &c.baseline
        } else {
            &c.current
        };
        if facts.is_empty() {
            continue;
        }
        let name = match c.name.split_once(" vs ") {
            Some((b, cur)) => {
                if baseline && input.baseline.is_some() {
                    b
                } else {
                    cur
                }
            }
            None => c.name.as_str(),
        };
        if !configs.contains(&name) {
            configs.push(name);
        }
        for f in facts {
            if let Some(k) = f.extra.get("vm_kernel")
                && !kernels.contains(&k.as_str())
            {
                kernels.push(k);
            }
        }
    }
    if kernels.is_empty() {
        for r in &s.runs {
            let k = r.environment.kernel_release.as_str();
            if !k.is_empty() && !kernels.contains(&k) {
                kernels.push(k);
            }
        }
    }
    let mut what: Vec<String> = configs.iter().map(|c| c.to_string()).collect();
    if !kernels.is_empty() {
        what.push(format!("kernel {}", kernels.join(", ")));
    }
    if what.is_empty() {
        side_labels(s)
    } else {
        format!("{} [{}]", side_labels(s), what.join(", "))
    }
}

/// The emulation label of the report's guest samples, if any ran emulated (TCG).
fn emulated(input: &ReportInput) -> Option<&str> {
    input
        .configs
        .iter()
        .flat_map(|c| c.baseline.iter().chain(&c.current))
        .find_map(|f| f.extra.get("emulated").map(String::as_str))
}

fn side_labels(s: &SideInput) -> String {
    let mut l: Vec<&str> = s.runs.iter().map(|r| r.label.as_str()).collect();
    l.dedup();
    if l.is_empty() {
        s.description.clone()
    } else {
        l.join(", ")
    }
}

/// (configuration, test) in order of first appearance among the metrics.
fn sections(input: &ReportInput) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for m in &input.metrics {
        let k = (m.key.config.clone(), m.key.test.clone());
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// How a verdict looks: CSS class suffix, word, marker shape.
pub(crate) fn look(v: Verdict) -> (&'static str, &'static str, Shape) {
    match v {
        Verdict::Regressed => ("reg", "REGRESSED", Shape::Triangle),
        Verdict::Improved => ("imp", "improved", Shape::Circle),
        Verdict::Unchanged => ("unch", "unchanged", Shape::Square),
        Verdict::Inconclusive => ("inc", "inconclusive", Shape::Diamond),
        Verdict::NotJudged => ("nj", "not judged", Shape::Dash),
    }
}

/// A small inline SVG of a verdict's marker, for HTML text.
fn icon(v: Verdict) -> String {
    let (class, word, shape) = look(v);
    let mut s = crate::report::svg::Svg::new(12.0, 12.0, "icon", word);
    s.marker(shape, 6.0, 6.5, 4.5, &format!("mk v-{class}"));
    s.finish()
}

fn pct(v: Option<f64>) -> String {
    match v {
        Some(v) if v.abs() >= 1000.0 => format!("{v:+.0}%"),
        Some(v) => format!("{v:+.1}%"),
        None => "-".into(),
    }
}

fn interval(c: &Comparison) -> String {
    match (c.diff_lo_pct, c.diff_hi_pct) {
        _ if c.interval_bounded() == Some(false) => "too few runs to bound".into(),
        (Some(lo), Some(hi)) => format!("[{}, {}]", pct(Some(lo)), pct(Some(hi))),
        _ => "-".into(),
    }
}

fn opt_value(v: Option<f64>) -> String {
    v.map(fmt_value).unwrap_or_else(|| "-".into())
}

/// Whether a judged metric leads (is shown before the others): a headline metric, one that
/// regressed or improved, or a kernel event count (asked for with `--events`; never judged).
fn leads_comparison(metric: &str, c: &Comparison) -> bool {
    c.role == MetricRole::Headline
        || matches!(c.verdict, Verdict::Regressed | Verdict::Improved)
        || crate::report::compare::is_event_count(metric)
}

/// Whether a metric leads its test's section: with a comparison as [`leads_comparison`]; in a
/// single-selection report, a headline metric or an event count (or every metric of a test
/// that declares no headline).
fn leads(m: &MetricInput, test_has_headline: bool) -> bool {
    match &m.comparison {
        Some(c) => leads_comparison(&m.key.metric, c),
        None => {
            m.headline
                || !test_has_headline
                || crate::report::compare::is_event_count(&m.key.metric)
        }
    }
}

/// Whether a metric belongs to a test's "On disk" block: an on-disk metric
/// (`compare::verdict::on_disk`) that is not a headline (a suite may make one its headline).
fn on_disk_row(m: &MetricInput) -> bool {
    let headline = match &m.comparison {
        Some(c) => c.role == MetricRole::Headline,
        None => m.headline,
    };
    !headline && crate::compare::verdict::on_disk(&m.key.metric)
}

/// Sort key of a verdict in the summary table: what needs attention first.
fn severity(v: Verdict) -> u8 {
    match v {
        Verdict::Regressed => 0,
        Verdict::Improved => 1,
        Verdict::Inconclusive => 2,
        Verdict::Unchanged => 3,
        Verdict::NotJudged => 4,
    }
}

/// The verdict summary: counts, and a sortable table of every judged metric.
fn summary(out: &mut String, input: &ReportInput, s: &Summary) {
    out.push_str("<section id=\"summary\"><h2>Verdicts</h2><p class=\"chips\">");
    for (v, n) in [
        (Verdict::Regressed, s.regressed),
        (Verdict::Improved, s.improved),
        (Verdict::Inconclusive, s.inconclusive),
        (Verdict::Unchanged, s.unchanged),
        (Verdict::NotJudged, s.not_judged),
    ] {
        let (class, word, _) = look(v);
        let _ = write!(
            out,
            "<span class=\"chip c-{class}\">{} <b>{n}</b> {word}</span> ",
            icon(v)
        );
    }
    let _ = write!(
        out,
        "</p><p>{}</p>",
        esc(&crate::report::compare::summary_line(s))
    );
    let quiet = input
        .metrics
        .iter()
        .filter(|m| {
            m.comparison
                .as_ref()
                .is_some_and(|c| !leads_comparison(&m.key.metric, c))
        })
        .count();
    let _ = write!(
        out,
        "<p class=\"note\">Diff is the estimated change of the current side against the baseline \
         with its 95&nbsp;% interval (statistics.md). Click a column title to sort.</p>\
         Baseline and current are the centers the diff is computed from: geometric means (Welch on \
         logs, diff = current / baseline &minus; 1), or medians where marked * (the diff is then \
         the Hodges-Lehmann shift). Headline metrics set the exit code (Benjamini-Hochberg q = 0.05 \
         across them); secondary ones are judged with their own q and listed when they changed.</p>\
         <input type=\"checkbox\" id=\"showall\"><label for=\"showall\"> also list the {quiet} \
         secondary metrics that did not change</label>"
    );
    // A column that would say the same on every row is left out (the sections say it).
    let many = |f: fn(&MetricInput) -> &str| input.metrics.windows(2).any(|w| f(&w[0]) != f(&w[1]));
    let (tests, configs) = (many(|m| &m.key.test), many(|m| &m.key.config));
    out.push_str("<table class=\"sortable\" id=\"verdicts\"><thead><tr>");
    if tests {
        out.push_str("<th>test</th>");
    }
    if configs {
        out.push_str("<th>config</th>");
    }
    out.push_str(
        "<th>metric</th><th>role</th><th class=\"num\">baseline</th><th class=\"num\">current</th>\
         <th class=\"num\">diff</th><th>95&nbsp;% interval</th><th class=\"num\">q</th><th>n</th><th>verdict</th>\
         <th>reason</th></tr></thead><tbody>\n",
    );
    let mut rows: Vec<&MetricInput> = input
        .metrics
        .iter()
        .filter(|m| m.comparison.is_some())
        .collect();
    rows.sort_by_key(|m| {
        severity(
            m.comparison
                .as_ref()
                .map_or(Verdict::NotJudged, |c| c.verdict),
        )
    });
    for m in rows {
        let Some(c) = &m.comparison else { continue };
        let (class, word, _) = look(c.verdict);
        let num_attr = |v: Option<f64>| v.map(|v| format!("{v}")).unwrap_or_default();
        let unit = esc(m.unit.as_str());
        let quiet = if leads_comparison(&m.key.metric, c) {
            ""
        } else {
            " quiet"
        };
        let star = if c.center == Center::Median { "*" } else { "" };
        let _ = writeln!(
            out,
            "<tr class=\"r-{class}{quiet}\">{}{}<td>{}{star}</td><td>{}</td>\
             <td class=\"num nw\" data-v=\"{}\">{} {unit}</td><td class=\"num nw\" data-v=\"{}\">{} {unit}</td>\
             <td class=\"num\" data-v=\"{}\">{}</td><td class=\"nw\">{}</td><td class=\"num\" data-v=\"{}\">{}</td><td class=\"nw\">{}&nbsp;vs&nbsp;{}</td>\
             <td class=\"nw\" data-v=\"{}\">{} {}</td><td class=\"reason\">{}</td></tr>",
            if tests {
                format!("<td>{}</td>", esc(&m.key.test))
            } else {
                String::new()
            },
            if configs {
                format!("<td>{}</td>", esc(&m.key.config))
            } else {
                String::new()
            },
            esc(&m.key.metric),
            match c.role {
                MetricRole::Headline => "headline",
                MetricRole::Secondary if crate::compare::verdict::on_disk(&m.key.metric) =>
                    "on disk",
                MetricRole::Secondary => "secondary",
            },
            num_attr(c.baseline.center),
            opt_value(c.baseline.center),
            num_attr(c.current.center),
            opt_value(c.current.center),
            num_attr(c.diff_pct),
            pct(c.diff_pct),
            interval(c),
            num_attr(c.q_value),
            c.q_value
                .map(crate::compare::verdict::fmt_p)
                .unwrap_or_else(|| "-".into()),
            c.baseline.n,
            c.current.n,
            severity(c.verdict),
            icon(c.verdict),
            word,
            esc(&match &c.detects {
                Some(d) if c.reason.is_empty() => d.clone(),
                Some(d) => format!("{}; {d}", c.reason),
                None => c.reason.clone(),
            })
        );
    }
    out.push_str("</tbody></table></section>\n");
}

/// A test's "On disk" block: what its samples left on disk, charted as its other metrics are.
fn on_disk_block(out: &mut String, input: &ReportInput, test: &str, disk: &[&MetricInput]) {
    if disk.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<h3>On disk</h3><p class=\"note\">What the samples left on disk and sent to the \
         device, measured after the workload and before the unmount (docs/metrics.md): space, \
         compression, extents per file, the filesystem's counters, device bytes and write \
         amplification. Secondary: judged with the same statistics, never setting the exit \
         code. A metric the filesystem does not expose is absent, not zero.</p>"
    );
    if input.baseline.is_some() {
        out.push_str(&charts::diff_chart(test, disk));
    } else {
        out.push_str(&charts::spread_chart(test, disk));
    }
}

/// One test: the diff (or spread) chart, the percentile curves, the histories.
fn test_section(out: &mut String, input: &ReportInput, i: usize, config: &str, test: &str) {
    let metrics: Vec<&MetricInput> = input
        .metrics
        .iter()
        .filter(|m| m.key.config == config && m.key.test == test)
        .collect();
    // The headline metrics and the metrics that changed first; what the samples left on disk
    // (space, compression, extents, the device) has its own block; the rest fold away.
    let has_headline = metrics.iter().any(|m| m.headline);
    let (disk, metrics): (Vec<&MetricInput>, Vec<&MetricInput>) =
        metrics.into_iter().partition(|m| on_disk_row(m));
    let (lead, rest): (Vec<&MetricInput>, Vec<&MetricInput>) =
        metrics.iter().partition(|m| leads(m, has_headline));
    let _ = writeln!(
        out,
        "<section class=\"test\" id=\"t{i}\"><h2>{} <span class=\"muted\">on {}</span></h2>",
        esc(test),
        esc(config)
    );
    if let Some(w) = input
        .workloads
        .iter()
        .find(|w| w.config == config && w.test == test)
    {
        let line = |v: &[String]| v.join(" | ");
        if input.baseline.is_none() || w.baseline == w.current {
            let _ = write!(
                out,
                "<p class=\"cmd\"><code>{}</code></p>",
                esc(&line(&w.current))
            );
        } else {
            let _ = write!(
                out,
                "<p class=\"cmd changed\">workload differs: baseline <code>{}</code>, current <code>{}</code></p>",
                esc(&line(&w.baseline)),
                esc(&line(&w.current))
            );
        }
    }
    if input.baseline.is_some() {
        let _ = write!(
            out,
            "<p class=\"note legend\">Bar: estimated change of the current side against the \
             baseline (log-ratio scale, so &minus;50&nbsp;% and +100&nbsp;% are equally far from 0); \
             whisker: its 95&nbsp;% interval (an arrow when it runs off the axis); grey band: the \
             &ldquo;unchanged&rdquo; margin. Verdict by colour, shape and word: {} regressed {} \
             improved {} unchanged {} inconclusive {} not judged (neutral). &uarr; higher is \
             better, &darr; lower is better. Right: every repetition, &#9675; baseline, &#9679; \
             current, ticks at the centers the diff is computed from (geometric means; medians \
             for metrics judged by Hodges-Lehmann), on the metric's own scale. Hover a row for \
             its numbers.</p>",
            icon(Verdict::Regressed),
            icon(Verdict::Improved),
            icon(Verdict::Unchanged),
            icon(Verdict::Inconclusive),
            icon(Verdict::NotJudged)
        );
        out.push_str(&charts::diff_chart(test, &lead));
        if !rest.is_empty() {
            let _ = write!(
                out,
                "<details class=\"rest\"><summary>{} other metrics (secondary metrics that did \
                 not change, neutral counters: CPU shares, rusage, vmstat, device counters)</summary>",
                rest.len()
            );
            out.push_str(&charts::diff_chart(test, &rest));
            out.push_str("</details>");
        }
    } else {
        out.push_str(
            "<p class=\"note legend\">Every repetition as a dot, a tick at the median, each metric \
             on its own scale. &uarr; higher is better, &darr; lower is better. Hover a row for its \
             numbers.</p>",
        );
        out.push_str(&charts::spread_chart(test, &lead));
        if !rest.is_empty() {
            let _ = write!(
                out,
                "<details class=\"rest\"><summary>{} other metrics (secondary metrics, neutral \
                 counters: CPU shares, rusage, vmstat, device counters)</summary>",
                rest.len()
            );
            out.push_str(&charts::spread_chart(test, &rest));
            out.push_str("</details>");
        }
    }
    on_disk_block(out, input, test, &disk);
    let curves: Vec<&PercentileCurves> = input
        .curves
        .iter()
        .filter(|c| c.config == config && c.test == test)
        .collect();
    if !curves.is_empty() {
        out.push_str(
            "<h3>Latency percentiles</h3><p class=\"note\">From the stored histograms, every \
             repetition of a side merged. The x axis gives each nine the same width (log scale of \
             1/(1&nbsp;&minus;&nbsp;p)); the y axis is logarithmic. Hover a marker for its value.</p>\
             <div class=\"grid\">",
        );
        for c in curves {
            out.push_str(&charts::percentile_chart(c, input));
        }
        out.push_str("</div>\n");
    }
    iterations_section(out, input, config, test);
    fio_logs_section(out, input, config, test);
    flamegraph_section(out, input, config, test);
    let with_history: Vec<&&MetricInput> = lead.iter().filter(|m| m.history.is_some()).collect();
    let other_history: Vec<&&MetricInput> = rest
        .iter()
        .chain(&disk)
        .filter(|m| m.history.is_some())
        .collect();
    if !with_history.is_empty() || !other_history.is_empty() {
        out.push_str(
            "<h3>History</h3><p class=\"note\">One point per stored run (the median of its \
             repetitions), in run order; dashed lines mark change points (E-divisive means, \
             p&nbsp;&lt;&nbsp;0.001), light blue lines the level of each segment between them. Ringed: baseline \
             runs; filled: current runs.</p><div class=\"grid hist\">",
        );
        for m in with_history {
            out.push_str(&charts::history_chart(m));
        }
        out.push_str("</div>\n");
        if !other_history.is_empty() {
            let _ = write!(
                out,
                "<details class=\"rest\"><summary>history of the {} other metrics</summary><div class=\"grid hist\">",
                other_history.len()
            );
            for m in other_history {
                out.push_str(&charts::history_chart(m));
            }
            out.push_str("</div></details>\n");
        }
    }
    out.push_str("</section>\n");
}

const STYLE: &str = r#"
:root{--reg:#D55E00;--imp:#0072B2;--unch:#009E73;--inc:#E69F00;--nj:#999999;--base:#333333;--cur:#CC79A7;--hl:#fff4c2}
body{font-family:"DejaVu Sans","Liberation Sans",Arial,sans-serif;font-size:14px;color:#1a1a1a;margin:24px auto;max-width:1180px;padding:0 16px;line-height:1.4}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}h3{font-size:15px;margin:18px 0 6px}
.warn{border:2px solid var(--inc);background:#fff8e6;padding:6px 12px;border-radius:4px;margin:6px 0 12px}
.muted{color:#666;font-weight:normal}.note{color:#555;font-size:12.5px;margin:4px 0 8px}
.sides{color:#333;margin:0 0 12px}.sides b{font-weight:600}
.diffbox{border:2px solid var(--reg);background:var(--hl);padding:8px 14px;margin:10px 0 14px;border-radius:4px}
.diffbox h2{border:0;margin:4px 0;font-size:17px}.diffbox ol{margin:4px 0;padding-left:22px}.diffbox li{margin:3px 0}
.same{border:1px solid #9c9;background:#f3fbf3;padding:6px 12px;border-radius:4px}
del{background:#fbd9c9;color:#7a2600;text-decoration:line-through}ins{background:#cde8f6;color:#003b5c;text-decoration:none;font-weight:600}
code{font-family:"DejaVu Sans Mono","Liberation Mono",monospace;font-size:12.5px}
.cmd code{background:#f3f3f3;padding:1px 4px}.changed{background:var(--hl)}
table{border-collapse:collapse;margin:6px 0 10px;font-size:12.5px}th,td{border-bottom:1px solid #e3e3e3;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3;font-weight:600}table.sortable th{cursor:pointer;user-select:none}table.sortable th[aria-sort=ascending]::after{content:" \25B2"}table.sortable th[aria-sort=descending]::after{content:" \25BC"}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}td.reason{color:#555;font-size:12px;min-width:200px}td.nw{white-space:nowrap}
tr.quiet{display:none}#showall:checked~table tr.quiet{display:table-row}#verdicts{width:100%}
tr.r-reg td{background:#fdeee6}tr.r-imp td{background:#e8f2f9}
tr.changed td,tr.changed th{background:var(--hl)}.mark{font-weight:bold;color:#7a2600;white-space:nowrap}
table.setup{width:100%}table.setup tbody th{width:190px}table.setup td{width:42%;word-break:break-word}th.cfg{background:#e9e9e9}
.chips .chip{display:inline-block;border:1px solid #ccc;border-radius:12px;padding:1px 10px;margin-right:4px}
.c-reg{border-color:var(--reg)!important}.c-imp{border-color:var(--imp)!important}
svg.icon{vertical-align:-1px}
.toc a{margin-right:10px}
details.rest{margin:6px 0 10px}details.rest>summary{cursor:pointer;color:#444}
.grid{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid #e3e3e3;border-radius:4px;padding:4px}
details.iters{margin:6px 0 10px}details.iters>summary{cursor:pointer}table.iter caption{text-align:left;font-size:12px;color:#444}
pre{background:#f7f7f7;border:1px solid #e3e3e3;padding:10px;overflow-x:auto;font-family:"DejaVu Sans Mono","Liberation Mono",monospace;font-size:12.5px}
footer{color:#777;font-size:12px;margin:24px 0}
svg text{font-family:"DejaVu Sans","Liberation Sans",Arial,sans-serif;font-size:11px;fill:#222}
svg .small{font-size:10px;fill:#444}svg .title{font-size:12px;font-weight:bold}svg .axt{font-size:11px;fill:#333}svg .name{font-size:12px}
svg .grid-l{stroke:#e2e2e2;stroke-width:1}svg .axis{stroke:#888;stroke-width:1}svg .zero{stroke:#555;stroke-width:1.2}
svg .stripe{fill:#f6f6f6}svg .band{fill:#e1e1e1}svg .hit{fill:transparent}svg .hit:hover{fill:#0000000d}
svg .bar{opacity:.85}svg .whisk{stroke:#222;stroke-width:1.5}svg .clip{fill:#222}
.v-reg{fill:var(--reg)}.v-imp{fill:var(--imp)}.v-unch{fill:var(--unch)}.v-inc{fill:var(--inc)}.v-nj{fill:var(--nj)}
svg .mk{stroke:#fff;stroke-width:1}
svg .dot-b{fill:#fff;stroke:var(--base);stroke-width:1.4}svg .dot-c{fill:var(--cur);stroke:#6b2c52;stroke-width:.8}
svg .med-b{stroke:var(--base);stroke-width:2}svg .med-c{stroke:#6b2c52;stroke-width:2}
svg .cb{fill:none;stroke:var(--base);stroke-width:1.8;stroke-dasharray:6 3}svg .cc{fill:none;stroke:var(--cur);stroke-width:2.2}
.wb{stroke:var(--base);stroke-width:1}
.wc{stroke:var(--cur);stroke-width:1.2}
.knee{fill:none;stroke:var(--reg);stroke-width:1.6}
.part{stroke:var(--reg);stroke-width:1;stroke-dasharray:3 3}
svg .fl-w{fill:none;stroke:var(--imp);stroke-width:1.8}svg .fl-wb{fill:none;stroke:var(--imp);stroke-width:1.6;stroke-dasharray:6 3}svg .fl-t{fill:none;stroke:var(--inc);stroke-width:1.8}svg .fl-tb{fill:none;stroke:var(--inc);stroke-width:1.6;stroke-dasharray:6 3}
svg .dot-w{fill:var(--imp);stroke:#fff;stroke-width:.6}svg .dot-t{fill:var(--inc);stroke:#fff;stroke-width:.6}
svg .hl{fill:none;stroke:#9a9a9a;stroke-width:1.2}svg .hp{fill:#9a9a9a}svg .seg{stroke:#56B4E9;stroke-width:2}svg .cp{stroke:#000;stroke-width:1.2;stroke-dasharray:3 2}
"#;

/// Table sorting, and a mark that the script ran (the browser test checks it).
const SCRIPT: &str = r#"
(function () {
  "use strict";
  function key(td) {
    var v = td.getAttribute("data-v");
    if (v === null || v === "") { return { s: td.textContent.trim().toLowerCase() }; }
    var f = Number(v);
    return isNaN(f) ? { s: v.toLowerCase() } : { n: f };
  }
  function cmp(a, b) {
    if ("n" in a && "n" in b) { return a.n - b.n; }
    if ("n" in a) { return -1; }
    if ("n" in b) { return 1; }
    return a.s < b.s ? -1 : a.s > b.s ? 1 : 0;
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      th.addEventListener("click", function () {
        var asc = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (r1, r2) {
          var c = cmp(key(r1.cells[col]), key(r2.cells[col]));
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  document.documentElement.setAttribute("data-script", "ran");
})();
"#;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod base64_tests {
    #[test]
    fn base64_matches_rfc_4648() {
        assert_eq!(super::base64(b""), "");
        assert_eq!(super::base64(b"f"), "Zg==");
        assert_eq!(super::base64(b"fo"), "Zm8=");
        assert_eq!(super::base64(b"foo"), "Zm9v");
        assert_eq!(super::base64(b"foobar"), "Zm9vYmFy");
    }
}
