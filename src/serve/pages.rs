//! The pages: each reads what it shows through a read-only session (`read`, the store's
//! listing calls, the queue's list), computes nothing `compare` does not, and renders with
//! `report`'s renderers inside the page frame of [`super::html`].
//!
//! Parameters are validated here: a missing or malformed one is a [`PageError::bad`] (400)
//! naming it, never a panic. Every stored text goes through [`esc`]. This module must never
//! write to the store.

use super::PageError;
use super::cache::{self, Cache, Weigh};
use super::chart::{self, Mark};
use super::chase;
use super::html::{esc, href, page, table, when};
use super::{App, Html, Params};
use crate::compare::{self, judge};
use crate::model::{RunId, RunInfo, SampleRecord, SampleStatus};
use crate::read::{self, Filter, Side, Sides};
use crate::report::{
    self,
    compare::CompareDoc,
    format::{Doc, Format},
    gather::{self, Naming, Request},
};
use crate::store::{AlertFilter, AlertState, RunFilter, Store};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The most selections a comparison page takes.
pub const MAX_SELECTIONS: usize = 8;

/// The most runs a `runs:` selection names.
pub const MAX_RUN_LIST: usize = 200;

/// Runs a machine may be quiet before the home page lists it as not heard from.
pub const QUIET_AFTER: chrono::Duration = chrono::Duration::hours(48);

/// The one value of parameter `k` (the last when repeated), if given and not empty.
fn param<'a>(p: &'a Params, k: &str) -> Option<&'a str> {
    p.iter()
        .rev()
        .find(|(n, _)| n == k)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// A parameter that must be given.
fn required<'a>(p: &'a Params, k: &str, what: &str) -> Result<&'a str, PageError> {
    param(p, k).ok_or_else(|| PageError::bad(format!("missing parameter '{k}' ({what})")))
}

fn run_link(id: RunId) -> String {
    format!("<a href=\"/run/{id}\">{id}</a>")
}

fn history_href(test: &str, metric: &str, config: &str, host: &str) -> String {
    href(
        "/history",
        &[
            ("test", test),
            ("metric", metric),
            ("config", config),
            ("host", host),
        ],
    )
}

/// A relative change as a signed percentage with one decimal.
pub fn pct(fraction: f64) -> String {
    format!("{:+.1} %", 100.0 * fraction)
}

/// A headline series: (configuration, test, metric).
type SeriesKey = (String, String, String);

/// The headline series (configuration, test, metric) of ended runs, by run: a run that ended
/// does not change, and reading them is every metric row of the run (tens of thousands on a
/// fleet's store), so the home page reads each run's once.
#[derive(Default)]
pub struct Headlines(std::sync::Mutex<BTreeMap<RunId, Vec<SeriesKey>>>);

/// How many runs' headline series are kept.
const HEADLINES_KEPT: usize = 1024;

impl Headlines {
    fn of(&self, s: &dyn Store, r: &RunInfo) -> Result<Vec<SeriesKey>, PageError> {
        if let Some(v) = self.0.lock().unwrap_or_else(|p| p.into_inner()).get(&r.id) {
            return Ok(v.clone());
        }
        let mut keys = Vec::new();
        for smp in s.sample_metrics(&[r.id])? {
            for m in smp.sample.metrics.iter().filter(|m| m.headline) {
                let k = (
                    smp.sample.config.clone(),
                    smp.sample.test.clone(),
                    m.name.clone(),
                );
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
        }
        if r.status != crate::model::RunStatus::Running {
            let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
            if kept.len() >= HEADLINES_KEPT {
                kept.clear();
            }
            kept.insert(r.id, keys.clone());
        }
        Ok(keys)
    }
}

/// What the pages computed, kept while the store has not changed ([`cache`]): each kind within
/// its own budget of bytes.
pub struct Caches {
    /// The store's stamp, read at most once a second.
    pub stamp: cache::StampClock,
    headlines: Headlines,
    home: Cache<(), HomeParts>,
    histories: Cache<[Option<String>; 4], HistoryData>,
    history_pages: Cache<HistoryPageKey, String>,
    compares: Cache<Vec<(String, String)>, (String, String)>,
    reports: Cache<Vec<(String, String)>, String>,
    runs: Cache<RunId, String>,
    run_lists: Cache<(Option<String>, usize), String>,
    machines: Cache<(), Machines>,
}

const MIB: usize = 1024 * 1024;

impl Default for Caches {
    fn default() -> Caches {
        Caches {
            stamp: cache::StampClock::default(),
            headlines: Headlines::default(),
            home: Cache::new(4 * MIB),
            histories: Cache::new(16 * MIB),
            history_pages: Cache::new(24 * MIB),
            compares: Cache::new(16 * MIB),
            reports: Cache::new(16 * MIB),
            runs: Cache::new(16 * MIB),
            run_lists: Cache::new(4 * MIB),
            machines: Cache::new(4 * MIB),
        }
    }
}

/// A history page: its history (test, metric, configuration, machine), how its change points
/// are drawn and which points carry an alert.
type HistoryPageKey = ([Option<String>; 4], Vec<Mark>, Vec<usize>);

/// The parts of the home page that only change with the store's runs.
struct HomeParts {
    newest: String,
    quiet: String,
    histories: String,
}

impl Weigh for HomeParts {
    fn bytes(&self) -> usize {
        self.newest.len() + self.quiet.len() + self.histories.len()
    }
}

/// The home page: newest run per machine, open alerts by test, the queue, machines not heard
/// from, and the histories of the newest runs' headline metrics. The parts that follow the
/// runs are kept while the store has not changed; alerts and the queue are read every time.
pub fn home(s: &dyn Store, app: &App) -> Result<Html, PageError> {
    let c = &app.caches;
    let stamp = c.stamp.now(s)?.full;
    let parts = c
        .home
        .get_or_compute(&(), &stamp, || home_parts(s, &c.headlines))?;
    let mut body = String::new();
    body.push_str(&parts.newest);
    let open = s.alerts(&AlertFilter {
        state: Some(AlertState::New),
        ..AlertFilter::default()
    })?;
    let mut by_test: BTreeMap<&str, usize> = BTreeMap::new();
    for a in &open {
        *by_test.entry(a.alert.test.as_str()).or_default() += 1;
    }
    let _ = write!(
        body,
        "<section><h2>Open alerts by test</h2><p>{} untriaged{}.</p>",
        open.len(),
        if app.triage_enabled() {
            ""
        } else {
            " (triage is off on this server: start it with --token-file)"
        }
    );
    let rows: Vec<Vec<String>> = by_test
        .iter()
        .map(|(t, n)| {
            vec![
                format!(
                    "<a href=\"{}\">{}</a>",
                    href("/alerts", &[("test", t), ("state", "new")]),
                    esc(t)
                ),
                n.to_string(),
            ]
        })
        .collect();
    body.push_str(&table("alerts", &["test", "new alerts"], &rows));
    body.push_str("</section>");
    body.push_str("<section><h2>Queue</h2>");
    body.push_str(&queue_summary(app));
    body.push_str("</section>");
    body.push_str(&parts.quiet);
    body.push_str(&parts.histories);
    Ok(Html(page("fsdelta", &body)))
}

/// The home page's parts that follow the runs: the newest run per machine, the machines not
/// heard from, the histories of the newest runs' headline metrics.
fn home_parts(s: &dyn Store, headlines: &Headlines) -> Result<HomeParts, PageError> {
    let runs = s.runs(&RunFilter {
        label: None,
        limit: Some(2000),
    })?;
    let mut newest: BTreeMap<&str, &RunInfo> = BTreeMap::new();
    for r in &runs {
        newest.entry(r.environment.host.as_str()).or_insert(r);
    }
    let now = chrono::Utc::now();
    let mut out = HomeParts {
        newest: String::new(),
        quiet: String::new(),
        histories: String::new(),
    };
    out.newest
        .push_str("<section><h2>Newest run per machine</h2>");
    let rows: Vec<Vec<String>> = newest
        .values()
        .map(|r| {
            vec![
                esc(&r.environment.host),
                run_link(r.id),
                esc(&r.label),
                esc(&when(&r.started_at)),
                esc(r.status.as_str()),
                esc(&r.environment.kernel_release),
            ]
        })
        .collect();
    out.newest.push_str(&table(
        "runs",
        &["machine", "run", "label", "started", "status", "kernel"],
        &rows,
    ));
    out.newest.push_str("</section>");
    let quiet: Vec<&&RunInfo> = newest
        .values()
        .filter(|r| now - r.started_at > QUIET_AFTER)
        .collect();
    let _ = write!(
        out.quiet,
        "<section><h2>Machines not heard from</h2><p>No run started in the last {} hours:</p>",
        QUIET_AFTER.num_hours()
    );
    let rows: Vec<Vec<String>> = quiet
        .iter()
        .map(|r| vec![esc(&r.environment.host), esc(&when(&r.started_at))])
        .collect();
    out.quiet
        .push_str(&table("quiet", &["machine", "last run started"], &rows));
    out.quiet.push_str("</section>");
    out.histories
        .push_str("<section><h2>Histories</h2><ul class=\"histories\">");
    for r in newest.values() {
        for k in headlines.of(s, r)? {
            let _ = write!(
                out.histories,
                "<li><a class=\"history-link\" href=\"{}\">{} {} on {} ({})</a></li>",
                history_href(&k.1, &k.2, &k.0, &r.environment.host),
                esc(&k.1),
                esc(&k.2),
                esc(&k.0),
                esc(&r.environment.host)
            );
        }
    }
    out.histories.push_str("</ul></section>");
    Ok(out)
}

/// The queue's counts, or why there is none.
fn queue_summary(app: &App) -> String {
    if !app.is_postgres() {
        return "<p>No job queue: a SQLite store has none (the fleet's queue lives in a PostgreSQL store).</p>".into();
    }
    use crate::queue::JobState;
    match app
        .queues
        .with(|q| q.list(&[JobState::Queued, JobState::Running], 10_000))
    {
        Ok(jobs) => {
            let n = |st: JobState| jobs.iter().filter(|j| j.state == st).count();
            format!(
                "<p>{} queued, {} running. <a href=\"/jobs\">All jobs</a></p>",
                n(JobState::Queued),
                n(JobState::Running)
            )
        }
        Err(e) if no_queue_yet(&e) => NO_QUEUE_YET.to_string(),
        Err(e) => format!(
            "<p class=\"error\">The queue cannot be read: {}</p>",
            esc(&e.to_string())
        ),
    }
}

/// What the queue's pages say of a PostgreSQL store whose queue tables do not exist yet.
const NO_QUEUE_YET: &str = "<p>This store has no job queue yet: the first <code>fsdelta submit</code>, \
    <code>agent</code> or <code>jobs</code> on it creates one (docs/fleet.md).</p>";

/// Whether the queue's error says its tables do not exist (a store no fleet used yet).
fn no_queue_yet(e: &crate::queue::QueueError) -> bool {
    matches!(e, crate::queue::QueueError::Db(m) if m.contains("does not exist"))
}

/// A history with its change points, and the two runs around its newest change with their
/// guest kernels (the bisect command's ends): what the history page computes from the store.
struct HistoryData {
    h: compare::history::History,
    ends: Vec<RunInfo>,
    guests: Vec<Vec<String>>,
}

impl Weigh for HistoryData {
    fn bytes(&self) -> usize {
        let p = &self.h.points;
        p.len() * std::mem::size_of::<compare::history::Point>()
            + p.iter()
                .map(|x| x.label.len() + x.started_at.len())
                .sum::<usize>()
            + self.ends.len() * 1024
    }
}

/// The history of `test`'s `metric` (on `config`, machine `host`) with its change points.
fn history_data(
    s: &dyn Store,
    test: &str,
    metric: &str,
    config: Option<&str>,
    host: Option<&str>,
) -> Result<HistoryData, PageError> {
    let runs: read::Loaded = read::metric_history_on(s, test, metric, host)?;
    let infos: BTreeMap<RunId, RunInfo> = runs.iter().map(|(r, _)| (r.id, r.clone())).collect();
    let h = compare::history::of_runs(runs, test, metric, config, None).map_err(|e| match e {
        compare::history::HistoryError::Configs { .. } => PageError::bad(e.to_string()),
        _ => PageError::not_found(e.to_string()),
    })?;
    let (mut ends, mut guests) = (Vec::new(), Vec::new());
    if let Some(cp) = h.change_points.last() {
        let (before, after) = (h.points[cp.index - 1].run_id, h.points[cp.index].run_id);
        ends = [before, after]
            .iter()
            .filter_map(|id| infos.get(id).cloned())
            .collect();
        guests = read::guest_kernels(s, &ends)?;
    }
    Ok(HistoryData { h, ends, guests })
}

/// The history page of a test, metric, configuration and machine. The history and its change
/// points are kept while the store has not changed; the alerts that mark it are read every
/// time.
// Over 150 lines: the page's four parts (chart, changes, the bisect command, the runs) read the
// same history, marks and parameters; split, each would take all of them.
pub fn history(s: &dyn Store, caches: &Caches, p: &Params) -> Result<Html, PageError> {
    let test = required(p, "test", "the test's name")?;
    let metric = required(p, "metric", "the metric's name")?;
    let config = param(p, "config");
    let host = param(p, "host");
    let stamp = caches.stamp.now(s)?.runs;
    let key = [test, metric, config.unwrap_or(""), host.unwrap_or("")]
        .map(|v| Some(v.to_string()).filter(|v| !v.is_empty()));
    let data = caches
        .histories
        .get_or_compute(&key, &stamp, || history_data(s, test, metric, config, host))?;
    let h = &data.h;
    let alerts: Vec<crate::store::Alert> = s
        .alerts(&AlertFilter {
            machine: host.map(String::from),
            test: Some(test.to_string()),
            ..AlertFilter::default()
        })?
        .into_iter()
        .filter(|a| a.alert.metric == metric && config.is_none_or(|c| a.alert.config == c))
        .collect();
    let at = |run: RunId| h.points.iter().position(|pt| pt.run_id == run);
    let marks: Vec<Mark> = h
        .change_points
        .iter()
        .map(|cp| {
            let run = h.points[cp.index].run_id;
            if alerts
                .iter()
                .any(|a| a.alert.after_run == run && a.state == AlertState::Expected)
            {
                Mark::Expected
            } else {
                Mark::Flagged
            }
        })
        .collect();
    let alert_points: Vec<usize> = alerts
        .iter()
        .filter_map(|a| at(a.alert.after_run))
        .collect();
    // The page follows the history and what the alerts mark on it: kept by both.
    let page_key = (key, marks.clone(), alert_points.clone());
    let html = caches.history_pages.get_or_compute(&page_key, &stamp, || {
        let title = format!(
            "History of {test} {metric}{}{}",
            config.map(|c| format!(" on {c}")).unwrap_or_default(),
            host.map(|h| format!(", machine {h}")).unwrap_or_default()
        );
        let mut body = String::new();
        let _ = write!(
            body,
            "<p>{} runs; change points by E-divisive means, as <code>fsdelta history</code>{}.</p>\
         <div class=\"chart\">{}</div>",
            h.points.len(),
            if h.on_ranks { " (on ranks)" } else { "" },
            chart::history_svg(h, &marks, &alert_points)
        );
        if let Some(why) = &h.skipped {
            let _ = write!(body, "<p class=\"note\">{}</p>", esc(why));
        }
        body.push_str("<h2>Changes</h2>");
        let mut rows = Vec::new();
        for (i, cp) in h.change_points.iter().enumerate() {
            let seg = |f: &dyn Fn(&compare::changepoint::Segment) -> bool| {
                h.segments.iter().find(|sg| f(sg)).map(|sg| {
                    h.points[sg.start..sg.end]
                        .iter()
                        .rev()
                        .take(50)
                        .map(|pt| pt.run_id.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                })
            };
            let before = seg(&|sg| sg.end == cp.index).unwrap_or_default();
            let after = seg(&|sg| sg.start == cp.index).unwrap_or_default();
            let cmp = href(
                "/compare",
                &[
                    ("sel", &format!("runs:{before}")),
                    ("sel", &format!("runs:{after}")),
                    ("test", test),
                ],
            );
            let run_before = &h.points[cp.index - 1];
            let run_after = &h.points[cp.index];
            let state = match marks[i] {
                Mark::Expected => "expected",
                Mark::Flagged => "flagged",
            };
            rows.push(vec![
            format!(
                "<a id=\"cp-link-{i}\" class=\"cp-link\" href=\"{cmp}\">compare the segments</a>"
            ),
            format!(
                "{} &rarr; {}",
                run_link(run_before.run_id),
                run_link(run_after.run_id)
            ),
            esc(&cp.ratio.map(|r| pct(r - 1.0)).unwrap_or_else(|| "?".into())),
            esc(&format!("{:.2e}", cp.p_value)),
            format!("{} / {}", cp.n_before, cp.n_after),
            state.to_string(),
        ]);
        }
        body.push_str(&table(
            "changes",
            &["", "runs", "change", "p", "runs before / after", "state"],
            &rows,
        ));
        if let Some(cp) = h.change_points.last() {
            let (before, after) = (h.points[cp.index - 1].run_id, h.points[cp.index].run_id);
            let (ends, guests) = (&data.ends, &data.guests);
            let end = |i: usize| {
                let r = &ends[i];
                let g = &guests[i];
                chase::End {
                    run: r.id,
                    label: r.label.clone(),
                    suite: r.suite.clone(),
                    kernel: if g.is_empty() {
                        r.environment.kernel_release.clone()
                    } else {
                        g.join(",")
                    },
                    guest: !g.is_empty(),
                }
            };
            if ends.len() == 2 {
                let c = chase::command(test, metric, config, &end(0), &end(1));
                let _ = write!(
                    body,
                    "<h2>Chase the newest change</h2><p>A bisection between what the run before it \
                 ({}) and the run after it ({}) measured{} (docs/bisect.md):</p>\
                 <pre class=\"cmd\" id=\"bisect-cmd\">{}</pre>",
                    run_link(before),
                    run_link(after),
                    if c.kernel { ", their kernels" } else { "" },
                    esc(&c.command)
                );
                if !c.fill.is_empty() {
                    body.push_str(
                        "<p>Fill in what the store does not record:</p><ul class=\"fill\">",
                    );
                    for f in &c.fill {
                        let _ = write!(body, "<li>{}</li>", esc(f));
                    }
                    body.push_str("</ul>");
                }
            }
        }
        body.push_str("<h2>Runs</h2>");
        let rows: Vec<Vec<String>> = h
            .points
            .iter()
            .rev()
            .map(|pt| {
                vec![
                    run_link(pt.run_id),
                    esc(&pt.label),
                    esc(pt.started_at.get(..16).unwrap_or(&pt.started_at)),
                    esc(&report::text::fmt_value(pt.median)),
                    esc(&format!(
                        "{} .. {}",
                        report::text::fmt_value(pt.min),
                        report::text::fmt_value(pt.max)
                    )),
                    pt.n.to_string(),
                ]
            })
            .collect();
        body.push_str(&table(
            "points",
            &["run", "label", "started", "median", "min .. max", "n"],
            &rows,
        ));
        Ok(page(&title, &body))
    })?;
    Ok(Html(html.as_str().to_string()))
}

/// The filters of the inbox from the URL; a state that is not one is a 400.
fn alert_filter(p: &Params) -> Result<AlertFilter, PageError> {
    let state = match param(p, "state") {
        None | Some("all") => None,
        Some(v) => Some(AlertState::parse(v).ok_or_else(|| {
            PageError::bad(format!(
                "'{v}' is not an alert state (new, acknowledged, invalid, expected, fixed or all)"
            ))
        })?),
    };
    Ok(AlertFilter {
        machine: param(p, "machine").map(String::from),
        test: param(p, "test").map(String::from),
        state,
        limit: Some(1000),
    })
}

/// The alerts inbox: filters, counts per state, the list (untriaged first, oldest first).
pub fn alerts(s: &dyn Store, p: &Params, triage: bool) -> Result<Html, PageError> {
    let f = alert_filter(p)?;
    let all = s.alerts(&AlertFilter {
        state: None,
        ..f.clone()
    })?;
    let mut body = String::new();
    body.push_str("<form class=\"filters\" method=\"get\" action=\"/alerts\">");
    let _ = write!(
        body,
        "<label>machine <input name=\"machine\" value=\"{}\"></label> \
         <label>test <input name=\"test\" value=\"{}\"></label> <label>state <select name=\"state\">",
        esc(f.machine.as_deref().unwrap_or("")),
        esc(f.test.as_deref().unwrap_or(""))
    );
    let _ = write!(body, "<option value=\"all\">all</option>");
    for st in AlertState::ALL {
        let _ = write!(
            body,
            "<option value=\"{0}\"{1}>{0}</option>",
            st.as_str(),
            if f.state == Some(st) { " selected" } else { "" }
        );
    }
    body.push_str("</select></label> <button type=\"submit\">Filter</button></form>");
    body.push_str("<p class=\"counts\">");
    for st in AlertState::ALL {
        let n = all.iter().filter(|a| a.state == st).count();
        let _ = write!(
            body,
            "<a href=\"{}\">{} {}</a> ",
            href(
                "/alerts",
                &[
                    ("machine", f.machine.as_deref().unwrap_or("")),
                    ("test", f.test.as_deref().unwrap_or("")),
                    ("state", st.as_str())
                ]
            ),
            n,
            st.as_str()
        );
    }
    body.push_str("</p>");
    if !triage {
        body.push_str(
            "<p class=\"note\">Triage is off on this server, and so is the sweep that raises \
             alerts: start it with --token-file FILE.</p>",
        );
    }
    let rows: Vec<Vec<String>> = all
        .iter()
        .filter(|a| f.state.is_none_or(|st| a.state == st))
        .map(|a| {
            let n = &a.alert;
            vec![
                format!(
                    "<a class=\"alert-link\" href=\"/alerts/{0}\">#{0}</a>",
                    a.id
                ),
                format!("<span class=\"state {0}\">{0}</span>", a.state.as_str()),
                esc(n.kind.as_str()),
                esc(&n.machine),
                esc(&n.config),
                format!(
                    "<a href=\"{}\">{} {}</a>",
                    history_href(&n.test, &n.metric, &n.config, &n.machine),
                    esc(&n.test),
                    esc(&n.metric)
                ),
                esc(&pct(n.size)),
                esc(&when(&n.detected_at)),
                format!(
                    "{} &rarr; {}",
                    run_link(n.before_run),
                    run_link(n.after_run)
                ),
            ]
        })
        .collect();
    body.push_str(&table(
        "inbox",
        &[
            "alert", "state", "kind", "machine", "config", "history", "size", "when", "runs",
        ],
        &rows,
    ));
    Ok(Html(page("Alerts", &body)))
}

/// One alert, with its triage form when triage is on (`form_secret`).
pub fn alert(s: &dyn Store, id: i64, form_secret: Option<&str>) -> Result<Html, PageError> {
    let a = s
        .alert(id)?
        .ok_or_else(|| PageError::not_found(format!("no alert {id} (see /alerts)")))?;
    let n = &a.alert;
    let mut body = String::new();
    let rows = vec![
        vec![
            "state".into(),
            format!(
                "<span class=\"state {0}\" id=\"state\">{0}</span>",
                a.state.as_str()
            ),
        ],
        vec!["kind".into(), esc(n.kind.as_str())],
        vec!["machine".into(), esc(&n.machine)],
        vec!["configuration".into(), esc(&n.config)],
        vec!["test".into(), esc(&n.test)],
        vec!["metric".into(), esc(&format!("{} ({})", n.metric, n.unit))],
        vec!["size".into(), esc(&pct(n.size))],
        vec!["when".into(), esc(&when(&n.detected_at))],
        vec![
            "runs".into(),
            format!(
                "{} &rarr; {}",
                run_link(n.before_run),
                run_link(n.after_run)
            ),
        ],
        vec![
            "note".into(),
            format!("<span id=\"note\">{}</span>", esc(&a.note)),
        ],
        vec![
            "triaged by".into(),
            format!(
                "{}{}",
                esc(&a.who),
                a.triaged_at
                    .map(|t| format!(", {}", esc(&when(&t))))
                    .unwrap_or_default()
            ),
        ],
    ];
    body.push_str(&table("facts", &["", ""], &rows));
    let _ = write!(
        body,
        "<p><a id=\"history-link\" href=\"{}\">History</a> · <a id=\"compare-link\" href=\"{}\">Compare the runs around it</a></p>",
        history_href(&n.test, &n.metric, &n.config, &n.machine),
        href(
            "/compare",
            &[
                ("sel", &n.before_run.to_string()),
                ("sel", &n.after_run.to_string()),
                ("test", &n.test)
            ]
        )
    );
    if let Some(secret) = form_secret {
        let _ = write!(
            body,
            "<h2>Triage</h2><form id=\"triage\" method=\"post\" action=\"/alerts/{id}/triage\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{}\"><label>state <select name=\"state\" id=\"triage-state\">",
            esc(secret)
        );
        for st in AlertState::ALL {
            let _ = write!(
                body,
                "<option value=\"{0}\"{1}>{0}</option>",
                st.as_str(),
                if a.state == st { " selected" } else { "" }
            );
        }
        let _ = write!(
            body,
            "</select></label><label>note <textarea name=\"note\" id=\"triage-note\" maxlength=\"{}\">{}</textarea></label>\
             <label>who <input name=\"who\" id=\"triage-who\" maxlength=\"{}\" required value=\"{}\"></label>\
             <label>token <input type=\"password\" name=\"token\" id=\"triage-token\" autocomplete=\"current-password\" required></label>\
             <button type=\"submit\" id=\"triage-save\">Save</button></form>",
            crate::store::alerts::MAX_NOTE,
            esc(&a.note),
            crate::store::alerts::MAX_WHO,
            esc(&a.who)
        );
    } else {
        body.push_str(
            "<p class=\"note\">Triage is off on this server: start it with --token-file FILE.</p>",
        );
    }
    Ok(Html(page(&format!("Alert #{id}"), &body)))
}

/// A side of a comparison page: a stored selector (`SEL` or `SEL@CONFIG`, as `fsdelta
/// compare`), or `runs:ID,ID,...`, the union of those runs (what a history's segment is).
fn side_of(s: &dyn Store, sel: &str, filter: &Filter<'_>) -> Result<Side, PageError> {
    let Some(list) = sel.strip_prefix("runs:") else {
        return Ok(read::side(s, sel, filter)?);
    };
    let ids: Vec<RunId> = list
        .split(',')
        .map(|v| v.trim().parse::<RunId>().ok().filter(|i| *i > 0))
        .collect::<Option<Vec<_>>>()
        .filter(|v| !v.is_empty() && v.len() <= MAX_RUN_LIST)
        .ok_or_else(|| {
            PageError::bad(format!(
                "'{sel}' is not a run list: runs:ID,ID,... names 1 to {MAX_RUN_LIST} run ids"
            ))
        })?;
    let mut side = Side {
        description: String::new(),
        runs: Vec::new(),
        samples: Vec::new(),
    };
    for id in &ids {
        let one = read::side(s, &id.to_string(), filter)?;
        side.runs.extend(one.runs);
        side.samples.extend(one.samples);
    }
    side.description = format!("runs {} ({} runs)", list, ids.len());
    Ok(side)
}

/// The selections and filters of a comparison URL.
struct Selection {
    sels: Vec<String>,
    tests: Vec<String>,
    configs: Vec<String>,
}

fn selection(p: &Params) -> Result<Selection, PageError> {
    let all = |k: &str| -> Vec<String> {
        p.iter()
            .filter(|(n, v)| n == k && !v.trim().is_empty())
            .map(|(_, v)| v.trim().to_string())
            .collect()
    };
    let sels = all("sel");
    if sels.len() > MAX_SELECTIONS {
        return Err(PageError::bad(format!(
            "at most {MAX_SELECTIONS} selections are compared at once"
        )));
    }
    Ok(Selection {
        sels,
        tests: all("test"),
        configs: all("config"),
    })
}

fn sides_of(s: &dyn Store, base: &str, cur: &str, sel: &Selection) -> Result<Sides, PageError> {
    let filter = Filter {
        tests: &sel.tests,
        configs: &sel.configs,
    };
    let b = side_of(s, base, &filter)?;
    let c = side_of(s, cur, &filter)?;
    if b.samples.is_empty() || c.samples.is_empty() {
        return Err(PageError::bad(
            read::ReadError::NothingToCompare {
                base: base.into(),
                base_n: b.samples.len(),
                cur: cur.into(),
                cur_n: c.samples.len(),
            }
            .to_string(),
        ));
    }
    for (name, side) in [(base, &b.samples), (cur, &c.samples)] {
        read::one_accelerator(name, side)?;
    }
    let (bc, cc) = (read::split_config(base).1, read::split_config(cur).1);
    Ok(Sides {
        base: b,
        cur: c,
        across: (bc.is_some() || cc.is_some()) && bc != cc,
    })
}

/// The drift between runs that the current side's machine's calibration measured, as
/// `fsdelta compare` counts it (its `query::with_drift`): the page's verdicts are the command's.
/// None when the side has no run or the store cannot say.
fn drifts(s: &dyn Store, sides: &Sides) -> compare::Drifts {
    sides
        .cur
        .runs
        .first()
        .and_then(|r| read::calibration::chains(s, &r.environment.host).ok())
        .map(|chains| compare::power::drift_table(&chains))
        .unwrap_or_default()
}

/// The comparison's text and markdown (`fsdelta compare`'s renderers): two sides, or every
/// other side against the first. Judged once, rendered twice (judging is the cost).
fn compared(s: &dyn Store, sel: &Selection) -> Result<(String, String), PageError> {
    let criteria = compare::Criteria {
        tests: sel.tests.clone(),
        configs: sel.configs.clone(),
        ..compare::Criteria::default()
    };
    let judge_err = |e: judge::JudgeError| PageError::bad(e.to_string());
    let render_err = |e: report::format::FormatError| PageError {
        status: axum::http::StatusCode::INTERNAL_SERVER_ERROR,
        message: e.to_string(),
    };
    if sel.sels.len() == 2 {
        let sides = sides_of(s, &sel.sels[0], &sel.sels[1], sel)?;
        let criteria = compare::Criteria {
            drift: drifts(s, &sides),
            ..criteria
        };
        let rows = judge::judge(&sides, &criteria).map_err(judge_err)?;
        let ctx = judge::context_of(&sides);
        let summary = judge::summary(&rows);
        let doc = CompareDoc {
            baseline: &sides.base.description,
            current: &sides.cur.description,
            rows: &rows,
            summary: &summary,
            all: false,
            context: Some(&ctx),
            across: sides.across,
        };
        let d = Doc::Comparison(&doc);
        return Ok((
            report::format::render(Format::Text, &d).map_err(render_err)?,
            report::format::render(Format::Markdown, &d).map_err(render_err)?,
        ));
    }
    let pairs = sel.sels[1..]
        .iter()
        .map(|cur| sides_of(s, &sel.sels[0], cur, sel));
    let many = compare::many::judge(pairs, &criteria, |sides| drifts(s, sides))?;
    let sides = report::compare::side_rows(&many);
    let summary = many.summary();
    let doc = report::compare::ManyDoc {
        baseline: &many.baseline,
        sides: &sides,
        summary: &summary,
        all: false,
        across: many.across,
    };
    let d = Doc::Comparisons(&doc);
    Ok((
        report::format::render(Format::Text, &d).map_err(render_err)?,
        report::format::render(Format::Markdown, &d).map_err(render_err)?,
    ))
}

/// The comparison page: the selectors (a form), the text for a mail and the markdown with
/// copy buttons, and the full report (as `fsdelta report`) in a frame.
pub fn compare(s: &dyn Store, caches: &Caches, p: &Params) -> Result<Html, PageError> {
    let sel = selection(p)?;
    let mut body = String::new();
    body.push_str("<form class=\"filters\" method=\"get\" action=\"/compare\">");
    for i in 0..sel.sels.len().max(2) {
        let _ = write!(
            body,
            "<label>{} <input name=\"sel\" value=\"{}\" placeholder=\"label:NAME, 42, latest~1, runs:1,2,3\"></label> ",
            if i == 0 { "baseline" } else { "current" },
            esc(sel.sels.get(i).map(String::as_str).unwrap_or(""))
        );
    }
    for t in &sel.tests {
        let _ = write!(
            body,
            "<input type=\"hidden\" name=\"test\" value=\"{}\">",
            esc(t)
        );
    }
    body.push_str("<button type=\"submit\">Compare</button></form>");
    if sel.sels.is_empty() {
        body.push_str(
            "<p>Name two or more selections, as <code>fsdelta compare</code> takes them; the \
             page's address is a permalink.</p>",
        );
        return Ok(Html(page("Compare", &body)));
    }
    if sel.sels.len() < 2 {
        return Err(PageError::bad(
            "a comparison needs two or more selections (sel=BASE&sel=CUR)",
        ));
    }
    let stamp = caches.stamp.now(s)?.full;
    let key: Vec<(String, String)> = [
        ("sel", &sel.sels),
        ("test", &sel.tests),
        ("config", &sel.configs),
    ]
    .into_iter()
    .flat_map(|(k, v)| v.iter().map(move |x| (k.to_string(), x.clone())))
    .collect();
    let judged = caches
        .compares
        .get_or_compute(&key, &stamp, || compared(s, &sel))?;
    let (text, md) = (&judged.0, &judged.1);
    let _ = write!(
        body,
        "<section><h2>For a mail</h2><p><button type=\"button\" class=\"copy\" data-copy=\"mail\" id=\"copy-mail\">Copy for mail</button> \
         <span class=\"copied\" id=\"copied-mail\"></span></p><pre id=\"mail\">{}</pre></section>\
         <section><h2>Markdown</h2><p><button type=\"button\" class=\"copy\" data-copy=\"markdown\" id=\"copy-markdown\">Copy markdown</button> \
         <span class=\"copied\" id=\"copied-markdown\"></span></p><pre id=\"markdown\">{}</pre></section>",
        esc(text),
        esc(md)
    );
    let mut pairs: Vec<(&str, &str)> = sel
        .sels
        .iter()
        .take(2)
        .map(|v| ("sel", v.as_str()))
        .collect();
    pairs.extend(sel.tests.iter().map(|t| ("test", t.as_str())));
    pairs.extend(sel.configs.iter().map(|c| ("config", c.as_str())));
    let report_href = href("/compare/report", &pairs);
    let _ = write!(
        body,
        "<section><h2>Report</h2><p>The report <code>fsdelta report</code> writes{}: \
         <a id=\"report-link\" href=\"{report_href}\">open it alone</a>.</p>\
         <iframe class=\"report\" title=\"report\" src=\"{report_href}\"></iframe></section>",
        if sel.sels.len() > 2 {
            " (of the first two selections)"
        } else {
            ""
        }
    );
    Ok(Html(page("Compare", &body)))
}

/// The report of the first two selections, as `fsdelta report` writes it.
/// The report of a comparison page's frame (`fsdelta report`'s document), kept while the store
/// has not changed: a browser that opens a comparison also asks for it.
pub fn compare_report(s: &dyn Store, caches: &Caches, p: &Params) -> Result<String, PageError> {
    let sel = selection(p)?;
    if sel.sels.len() < 2 {
        return Err(PageError::bad(
            "a report needs two selections (sel=BASE&sel=CUR)",
        ));
    }
    let stamp = caches.stamp.now(s)?.full;
    let key: Vec<(String, String)> = [
        ("sel", &sel.sels),
        ("test", &sel.tests),
        ("config", &sel.configs),
    ]
    .into_iter()
    .flat_map(|(k, v)| {
        v.iter()
            .take(if k == "sel" { 2 } else { usize::MAX })
            .map(move |x| (k.to_string(), x.clone()))
    })
    .collect();
    let html = caches
        .reports
        .get_or_compute(&key, &stamp, || report_of(s, &sel))?;
    Ok(html.as_str().to_string())
}

fn report_of(s: &dyn Store, sel: &Selection) -> Result<String, PageError> {
    let (base, cur) = (sel.sels[0].as_str(), sel.sels[1].as_str());
    let criteria = compare::Criteria {
        tests: sel.tests.clone(),
        configs: sel.configs.clone(),
        ..compare::Criteria::default()
    };
    let sides = sides_of(s, base, cur, sel)?;
    let criteria = compare::Criteria {
        drift: drifts(s, &sides),
        ..criteria
    };
    let rows = judge::judge(&sides, &criteria).map_err(|e| PageError::bad(e.to_string()))?;
    let summary = judge::summary(&rows);
    let text_table = report::format::render(
        Format::Text,
        &Doc::Comparison(&CompareDoc {
            baseline: &sides.base.description,
            current: &sides.cur.description,
            rows: &rows,
            summary: &summary,
            all: false,
            context: None,
            across: sides.across,
        }),
    )
    .map_err(|e| PageError::bad(e.to_string()))?;
    let Sides {
        base: b, cur: c, ..
    } = sides;
    let naming = Naming::new(
        read::split_config(base).1,
        read::split_config(cur).1,
        &b,
        &c,
    );
    let metrics = gather::compared_metrics(rows);
    let request = Request::new(&metrics, &b.samples, &c.samples, &naming);
    let name = |cfg: &str| naming.name(cfg);
    let extras = read::extras::read(s, &request.wanted(&b, &c, &name))?;
    let input = gather::comparison(b, c, &naming, metrics, &request, extras, text_table);
    report::format::render(Format::Html, &Doc::Report(&input))
        .map_err(|e| PageError::bad(e.to_string()))
}

/// The CSP of a report document: its one inline stylesheet and one inline script (both the
/// binary's own text) by their SHA-256, and nothing else.
pub fn report_csp(html: &str) -> String {
    use base64::Engine as _;
    use sha2::{Digest, Sha256};
    let of = |text: &str| {
        format!(
            "'sha256-{}'",
            base64::engine::general_purpose::STANDARD.encode(Sha256::digest(text.as_bytes()))
        )
    };
    let hash = |open: &str, close: &str| -> Option<String> {
        let start = html.find(open)? + open.len();
        let end = start + html[start..].find(close)?;
        Some(of(&html[start..end]))
    };
    let style = hash("<style>", "</style>").unwrap_or_else(|| "'none'".into());
    let script = hash("<script>", "</script>").unwrap_or_else(|| "'none'".into());
    // The flame graphs' one style attribute.
    let attr = of("width:100%");
    format!(
        "default-src 'none'; script-src {script}; style-src {style} 'unsafe-hashes' {attr}; \
         img-src data:; frame-ancestors 'self'; base-uri 'none'; form-action 'none'"
    )
}

/// The runs page: newest first, optionally one label.
pub fn runs(s: &dyn Store, caches: &Caches, p: &Params) -> Result<Html, PageError> {
    let limit = match param(p, "limit") {
        None => 100,
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=5000).contains(n))
            .ok_or_else(|| PageError::bad(format!("limit '{v}' is not a number from 1 to 5000")))?,
    };
    let label = param(p, "label").map(String::from);
    let stamp = caches.stamp.now(s)?.full;
    let body = caches
        .run_lists
        .get_or_compute(&(label.clone(), limit), &stamp, || {
            run_list(s, label, limit)
        })?;
    Ok(Html(page("Runs", &body)))
}

/// The table of the runs page.
fn run_list(s: &dyn Store, label: Option<String>, limit: usize) -> Result<String, PageError> {
    let runs = read::list(s, label, limit)?;
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            vec![
                run_link(r.id),
                esc(&r.label),
                esc(&r.environment.host),
                esc(&when(&r.started_at)),
                esc(r.status.as_str()),
                r.sample_count.to_string(),
            ]
        })
        .collect();
    Ok(table(
        "runs",
        &["run", "label", "machine", "started", "status", "samples"],
        &rows,
    ))
}

/// The run page: facts, configurations, workloads, every sample, raw outputs, profiles
/// (flame graphs) and event counts. An ended run does not change: its page is kept.
pub fn run(s: &dyn Store, caches: &Caches, id: RunId) -> Result<Html, PageError> {
    let r = s
        .run(id)?
        .ok_or_else(|| PageError::not_found(format!("no run {id} (see /runs)")))?;
    if r.status == crate::model::RunStatus::Running {
        return Ok(Html(run_page(s, &r)?));
    }
    let ended = std::sync::Arc::new(cache::Stamp::default());
    let html = caches
        .runs
        .get_or_compute(&id, &ended, || run_page(s, &r))?;
    Ok(Html(html.as_str().to_string()))
}

fn run_page(s: &dyn Store, r: &RunInfo) -> Result<String, PageError> {
    let id = r.id;
    let samples = s.samples(id)?;
    let refs: Vec<&SampleRecord> = samples.iter().collect();
    let mut body = String::new();
    let _ = write!(
        body,
        "<section><h2>Facts</h2><pre>{}</pre></section>",
        esc(&report::text::run_header(r))
    );
    let _ = write!(
        body,
        "<section><h2>Configurations</h2><pre>{}</pre><pre>{}</pre></section>",
        esc(&report::text::targets(&refs)),
        esc(&report::text::workloads(&refs))
    );
    body.push_str("<section><h2>Samples</h2>");
    let rows: Vec<Vec<String>> = samples
        .iter()
        .map(|smp| {
            let x = &smp.sample;
            let metrics: Vec<String> = x
                .metrics
                .iter()
                .map(|m| {
                    format!(
                        "<a href=\"{}\">{}</a> {} {}",
                        history_href(&x.test, &m.name, &x.config, &r.environment.host),
                        esc(&m.name),
                        esc(&report::text::fmt_value(m.value)),
                        esc(&m.unit.to_string())
                    )
                })
                .collect();
            vec![
                x.sequence.to_string(),
                esc(&x.config),
                esc(&x.test),
                x.repetition.to_string(),
                match x.status {
                    SampleStatus::Ok => "ok".into(),
                    SampleStatus::Failed => {
                        format!("failed: {}", esc(x.error.as_deref().unwrap_or("")))
                    }
                },
                esc(&format!("{:.1} s", x.duration_s)),
                format!(
                    "<details><summary>{} metrics</summary>{}</details>",
                    x.metrics.len(),
                    metrics.join("<br>")
                ),
            ]
        })
        .collect();
    body.push_str(&table(
        "samples",
        &[
            "#", "config", "test", "rep", "status", "duration", "metrics",
        ],
        &rows,
    ));
    body.push_str("</section><section><h2>Events</h2>");
    let rows: Vec<Vec<String>> = samples
        .iter()
        .flat_map(|smp| {
            smp.sample
                .metrics
                .iter()
                .filter(|m| report::compare::is_event_count(&m.name))
                .map(move |m| {
                    vec![
                        esc(&smp.sample.config),
                        esc(&smp.sample.test),
                        smp.sample.repetition.to_string(),
                        esc(&m.name),
                        esc(&report::text::fmt_value(m.value)),
                    ]
                })
        })
        .collect();
    body.push_str(&table(
        "events",
        &["config", "test", "rep", "event", "count"],
        &rows,
    ));
    body.push_str("</section><section><h2>Raw outputs</h2>");
    for (smp, atts) in read::raw_results(s, &refs, &[])? {
        if atts.is_empty() {
            continue;
        }
        let _ = write!(
            body,
            "<details><summary>{} {} rep {}</summary><pre>{}</pre></details>",
            esc(&smp.sample.config),
            esc(&smp.sample.test),
            smp.sample.repetition,
            esc(&report::text::raw_results(smp, &atts))
        );
    }
    body.push_str("</section><section><h2>Profiles</h2>");
    let mut any = false;
    for smp in &samples {
        if s.profile(smp.id)?.is_some() {
            any = true;
            let _ = write!(
                body,
                "<figure class=\"flame\"><figcaption>{} {} rep {}</figcaption>\
                 <a href=\"/run/{id}/flame/{sid}.svg\"><img alt=\"flame graph of sample {sid}\" src=\"/run/{id}/flame/{sid}.svg\"></a></figure>",
                esc(&smp.sample.config),
                esc(&smp.sample.test),
                smp.sample.repetition,
                sid = smp.id
            );
        }
    }
    if !any {
        body.push_str(
            "<p>No CPU profile was recorded in this run (<code>fsdelta run --profile</code>).</p>",
        );
    }
    body.push_str("</section>");
    Ok(page(&format!("Run {id}: {}", r.label), &body))
}

/// A sample's flame graph (SVG), the report's renderer.
pub fn flame(s: &dyn Store, run: RunId, sample: i64) -> Result<String, PageError> {
    let belongs = s.samples(run)?.iter().any(|x| x.id == sample);
    let stored = s.profile(sample)?.filter(|_| belongs).ok_or_else(|| {
        PageError::not_found(format!("no profile of sample {sample} in run {run}"))
    })?;
    let p = crate::probe::profile::Profile::decode(&stored)
        .map_err(|e| PageError::not_found(format!("the stored profile cannot be read: {e}")))?;
    report::profile::flamegraph_svg(
        &p,
        &format!("run {run} sample {sample}"),
        report::profile::Threads::default(),
    )
    .map_err(|e| PageError::not_found(format!("cannot draw the flame graph: {e}")))
}

/// Every machine that stored a run: its name, its newest run, how many runs.
struct Machines(Vec<(String, usize, RunInfo)>);

impl Weigh for Machines {
    fn bytes(&self) -> usize {
        // A RunInfo's strings (environment, label, suite) are a few hundred bytes.
        self.0.len() * 1024
    }
}

/// The machines page: every machine that stored a run, with its newest run, and on a fleet
/// store the job it runs now.
pub fn machines(s: &dyn Store, app: &App) -> Result<Html, PageError> {
    let stamp = app.caches.stamp.now(s)?.runs;
    let known = app.caches.machines.get_or_compute(&(), &stamp, || {
        let runs = s.runs(&RunFilter {
            label: None,
            limit: Some(5000),
        })?;
        let mut by: BTreeMap<&str, (usize, &RunInfo)> = BTreeMap::new();
        for r in &runs {
            by.entry(r.environment.host.as_str()).or_insert((0, r)).0 += 1;
        }
        Ok(Machines(
            by.into_iter()
                .map(|(h, (n, r))| (h.to_string(), n, r.clone()))
                .collect(),
        ))
    })?;
    let running: Vec<crate::queue::JobInfo> = if app.is_postgres() {
        app.queues
            .with(|q| q.list(&[crate::queue::JobState::Running], 1000))
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let now = chrono::Utc::now();
    let rows: Vec<Vec<String>> = known
        .0
        .iter()
        .map(|(host, n, r)| {
            let job = running
                .iter()
                .find(|j| {
                    j.agent.as_deref() == Some(host.as_str())
                        || j.host.as_deref() == Some(host.as_str())
                })
                .map(|j| format!("job {} ({})", j.id, esc(&j.label)))
                .unwrap_or_default();
            vec![
                esc(host),
                esc(&r.environment.machine_id),
                esc(&format!(
                    "{} ({} cores)",
                    r.environment.cpu_model, r.environment.cores
                )),
                esc(&r.environment.kernel_release),
                format!("{} {}", run_link(r.id), esc(&when(&r.started_at))),
                n.to_string(),
                job,
                if now - r.started_at > QUIET_AFTER {
                    "quiet".into()
                } else {
                    "active".into()
                },
            ]
        })
        .collect();
    let body = table(
        "machines",
        &[
            "machine",
            "machine id",
            "cpu",
            "kernel",
            "newest run",
            "runs",
            "current job",
            "health",
        ],
        &rows,
    );
    Ok(Html(page("Machines", &body)))
}

/// The jobs page: the fleet's queue, newest first (PostgreSQL stores only).
pub fn jobs(app: &App, p: &Params) -> Result<Html, PageError> {
    use crate::queue::JobState;
    let states: Vec<JobState> = match param(p, "state") {
        None => Vec::new(),
        Some(v) => vec![
            [
                JobState::Queued,
                JobState::Running,
                JobState::Done,
                JobState::Failed,
                JobState::Cancelled,
                JobState::Aborted,
            ]
            .into_iter()
            .find(|s| s.as_str() == v)
            .ok_or_else(|| PageError::bad(format!("'{v}' is not a job state")))?,
        ],
    };
    if !app.is_postgres() {
        return Ok(Html(page(
            "Jobs",
            "<p>No job queue: a SQLite store has none (the fleet's queue lives in a PostgreSQL store).</p>",
        )));
    }
    let jobs = match app.queues.with(|q| q.list(&states, 500)) {
        Ok(j) => j,
        Err(e) if no_queue_yet(&e) => {
            return Ok(Html(page("Jobs", NO_QUEUE_YET)));
        }
        Err(e) => {
            return Err(PageError {
                status: axum::http::StatusCode::SERVICE_UNAVAILABLE,
                message: format!("the queue cannot be read: {e}"),
            });
        }
    };
    let rows: Vec<Vec<String>> = jobs
        .iter()
        .map(|j| {
            vec![
                j.id.to_string(),
                esc(j.state.as_str()),
                esc(&j.label),
                esc(&j.suite_name),
                esc(j.agent.as_deref().unwrap_or("")),
                esc(&when(&j.submitted_at)),
                j.run_id.map(run_link).unwrap_or_default(),
                esc(j.verdict.as_deref().unwrap_or("")),
                esc(j.error.as_deref().unwrap_or("")),
            ]
        })
        .collect();
    let body = table(
        "jobs",
        &[
            "job",
            "state",
            "label",
            "suite",
            "agent",
            "submitted",
            "run",
            "verdict",
            "error",
        ],
        &rows,
    );
    Ok(Html(page("Jobs", &body)))
}
