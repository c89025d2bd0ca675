//! Unit tests of the renderer on hand-made input: structure, escaping, the order of the
//! differences, change points, and the single-selection layout.

use super::*;
use crate::compare::changepoint::{self, Options};
use crate::compare::verdict::{self, Margins, MetricClass};
use crate::model::{Environment, RunStatus};

fn run(id: i64, label: &str, kernel: &str) -> RunInfo {
    RunInfo {
        id,
        label: label.into(),
        suite: "quick".into(),
        started_at: chrono::DateTime::from_timestamp(1_764_000_000 + id * 3600, 0).unwrap(),
        finished_at: None,
        status: RunStatus::Complete,
        fsdelta_version: "0.1.0".into(),
        environment: Environment {
            host: "box".into(),
            kernel_release: kernel.into(),
            ..Environment::default()
        },
        sample_count: 2,
    }
}

fn facts(mount: &str) -> SiteFacts {
    SiteFacts {
        fs_type: "ext4".into(),
        path: String::new(),
        device: "/dev/loop0".into(),
        mount_options: mount.into(),
        mkfs_options: Some("-q".into()),
        extra: Default::default(),
    }
}

fn metric(
    config: &str,
    name: &str,
    unit: Unit,
    dir: Direction,
    b: &[f64],
    c: &[f64],
) -> MetricInput {
    let kind = crate::model::Metric::legacy_kind(name, dir);
    let class = MetricClass::of(kind);
    MetricInput {
        kind,
        headline: false,
        key: SeriesKey {
            config: config.into(),
            test: "smallfiles".into(),
            metric: name.into(),
        },
        unit,
        direction: dir,
        baseline_values: b.to_vec(),
        current_values: c.to_vec(),
        comparison: Some(verdict::compare(b, c, dir, class, &Margins::default())),
        history: None,
    }
}

/// A step history: ten runs at 100, ten at 150; the change point comes from the real detector.
fn step_history() -> History {
    let values: Vec<f64> = (0..20)
        .map(|i| if i < 10 { 100.0 } else { 150.0 } + (i % 3) as f64)
        .collect();
    let options = Options::for_class(MetricClass::Throughput);
    let cps = changepoint::change_points(&values, &options);
    assert_eq!(cps.len(), 1, "the detector finds the step");
    History {
        segments: changepoint::segments(&values, &cps),
        change_points: cps,
        points: values
            .iter()
            .enumerate()
            .map(|(i, v)| HistoryPoint {
                run_id: i as i64 + 1,
                label: format!("r{i}").into(),
                median: *v,
                n: 3,
                role: match i {
                    18 => Role::Baseline,
                    19 => Role::Current,
                    _ => Role::Other,
                },
            })
            .collect(),
        scale: options.scale,
    }
}

const CFG: &str = "loop<&\"x\">";

fn comparison_input() -> ReportInput {
    let mut m = vec![
        metric(
            CFG,
            "files_per_sec",
            Unit::FilesPerSec,
            Direction::HigherIsBetter,
            &[1000.0, 1010.0, 990.0, 1005.0, 995.0],
            &[800.0, 810.0, 790.0, 805.0, 795.0],
        ),
        metric(
            CFG,
            "create_lat_ns_p99",
            Unit::Nanoseconds,
            Direction::LowerIsBetter,
            &[5000.0, 5100.0, 4900.0],
            &[5050.0, 4950.0, 5000.0],
        ),
        metric(
            CFG,
            "files",
            Unit::Count,
            Direction::Neutral,
            &[10.0, 10.0],
            &[10.0, 10.0],
        ),
    ];
    m[0].history = Some(step_history());
    let comparisons: Vec<_> = m.iter().filter_map(|m| m.comparison.clone()).collect();
    ReportInput {
        flamegraphs: vec![],
        machine_warnings: vec![],
        iterations: vec![],
        fio_logs: vec![],
        response_curves: vec![],
        generator: "fsdelta test".into(),
        baseline: Some(SideInput {
            description: "1 (run 1, label base)".into(),
            runs: vec![run(1, "base", "6.17")],
        }),
        current: SideInput {
            description: "2 (run 2, label cur)".into(),
            runs: vec![run(2, "cur", "6.18")],
        },
        configs: vec![ConfigFacts {
            name: CFG.into(),
            baseline: vec![facts("rw,relatime")],
            current: vec![facts("rw,noatime")],
        }],
        workloads: vec![WorkloadLines {
            config: CFG.into(),
            test: "smallfiles".into(),
            baseline: vec!["fs_mark -s 0".into()],
            current: vec!["fs_mark -s 0".into()],
        }],
        summary: Some(verdict::summarize(&comparisons)),
        metrics: m,
        curves: vec![PercentileCurves {
            config: CFG.into(),
            test: "smallfiles".into(),
            name: "create_lat_ns".into(),
            unit: Unit::Nanoseconds,
            baseline: Some(Curve {
                count: 1000,
                points: vec![(1.0, 900.0), (50.0, 4000.0), (99.0, 5000.0), (99.9, 9000.0)],
                max: 12000.0,
            }),
            current: Some(Curve {
                count: 1000,
                points: vec![(1.0, 950.0), (50.0, 4100.0), (99.0, 5100.0), (99.9, 9900.0)],
                max: 15000.0,
            }),
        }],
        text_table: "baseline: 1 <run>\n".into(),
    }
}

/// Every `<svg>...</svg>` of a page (the report never nests them).
fn svgs(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find("<svg") {
        let j = rest[i..].find("</svg>").expect("closed svg") + i + "</svg>".len();
        out.push(&rest[i..j]);
        rest = &rest[j..];
    }
    out
}

fn check_self_contained(html: &str) {
    let without_ns = html.replace(&format!("xmlns=\"{}\"", crate::report::svg::SVG_NS), "");
    assert!(!without_ns.contains("http://") && !without_ns.contains("https://"));
    assert!(!html.contains("<script src") && !html.contains("<link"));
    assert!(!html.contains("url(") && !html.contains("@import"));
    for s in svgs(html) {
        if let Err(e) = roxmltree::Document::parse(s) {
            panic!("malformed SVG ({e}): {s}");
        }
    }
}

#[test]
fn comparison_report_is_self_contained_and_complete() {
    let input = comparison_input();
    let html = render(&input);
    check_self_contained(&html);
    // Every metric in the chart and the table.
    for m in &input.metrics {
        assert!(html.matches(&m.key.metric).count() >= 2, "{}", m.key.metric);
    }
    // A diff chart of the headline and changed metrics, one of the others folded in a closed
    // <details>, one percentile chart, one history, and the icons.
    assert_eq!(html.matches("class=\"chart diff\"").count(), 2);
    let fold = html.find("<details class=\"rest\"><summary>").unwrap();
    assert!(html.find("class=\"chart diff\"").unwrap() < fold);
    assert!(
        html[fold..].find("REGRESSED -20.0%").is_none(),
        "the regression leads"
    );
    assert_eq!(html.matches("class=\"card chart pct\"").count(), 1);
    assert_eq!(html.matches("class=\"card chart hist\"").count(), 1);
    // The regression is drawn as one, with its word and shape.
    assert!(html.contains("REGRESSED -20.0%"));
    assert!(html.contains("class=\"mk v-reg\""));
    // The change point of the step history is drawn.
    assert_eq!(html.matches("class=\"cp\"").count(), 1);
    // The text table is in a <pre>, escaped.
    assert!(html.contains("<pre>baseline: 1 &lt;run&gt;\n</pre>"));
}

#[test]
fn names_with_markup_are_escaped_everywhere() {
    let html = render(&comparison_input());
    assert!(!html.contains(CFG));
    assert!(html.contains("loop&lt;&amp;&quot;x&quot;&gt;"));
}

#[test]
fn a_changed_mount_option_comes_first() {
    let html = render(&comparison_input());
    let boxed = &html[html.find("id=\"differences\"").unwrap()..];
    let first = &boxed[boxed.find("<li>").unwrap()..boxed.find("</li>").unwrap()];
    assert!(first.contains("mount options"), "{first}");
    assert!(first.contains("removed <del>relatime</del>"), "{first}");
    assert!(first.contains("added <ins>noatime</ins>"), "{first}");
    // The kernel differs too, but after.
    assert!(boxed.contains("kernel release"));
    // The differences box comes before the verdicts.
    assert!(html.find("id=\"differences\"").unwrap() < html.find("id=\"summary\"").unwrap());
}

#[test]
fn equal_sides_say_nothing_differs() {
    let mut input = comparison_input();
    input.configs[0].current = input.configs[0].baseline.clone();
    input.current.runs[0].environment.kernel_release = "6.17".into();
    let html = render(&input);
    assert!(html.contains("Nothing recorded differs between the sides"));
    assert!(!html.contains("class=\"diffbox\""));
}

#[test]
fn single_selection_report_shows_spread_not_verdicts() {
    let mut input = comparison_input();
    input.baseline = None;
    input.summary = None;
    for m in &mut input.metrics {
        m.baseline_values.clear();
        m.comparison = None;
    }
    for c in &mut input.curves {
        c.baseline = None;
    }
    let html = render(&input);
    check_self_contained(&html);
    assert!(html.contains("class=\"chart spread\""));
    assert!(!html.contains("class=\"chart diff\""));
    assert!(!html.contains("id=\"differences\""));
    assert!(!html.contains("id=\"summary\""));
    assert!(html.contains("files_per_sec"));
}

#[test]
fn degenerate_inputs_render_well_formed() {
    let mut input = comparison_input();
    // Zeros (no log ratio), a lone run a side, a constant history, an empty histogram.
    input.metrics.push(metric(
        CFG,
        "sys_irq_pct",
        Unit::Percent,
        Direction::Neutral,
        &[0.0, 0.0],
        &[0.0, 0.0],
    ));
    input.metrics.push(metric(
        CFG,
        "files_per_sec_wall",
        Unit::FilesPerSec,
        Direction::HigherIsBetter,
        &[100.0],
        &[1e9],
    ));
    let mut flat = step_history();
    for p in &mut flat.points {
        p.median = 7.0;
    }
    flat.change_points.clear();
    flat.segments.clear();
    input.metrics[1].history = Some(flat);
    input.curves.push(PercentileCurves {
        config: CFG.into(),
        test: "smallfiles".into(),
        name: "empty_lat_ns".into(),
        unit: Unit::Nanoseconds,
        baseline: Some(Curve {
            count: 0,
            points: vec![],
            max: 0.0,
        }),
        current: None,
    });
    let html = render(&input);
    check_self_contained(&html);
    assert!(html.contains("no values recorded"));
    for svg in svgs(&html) {
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
    }
    // The lone runs are judged inconclusive and their huge change runs off the axis: an arrow.
    assert!(html.contains("inconclusive +999999900%"));
    assert!(html.contains("class=\"v-inc\"/>"), "the off-axis arrow");
}

#[test]
fn a_machine_warning_leads_the_differences_box() {
    let mut input = comparison_input();
    input.machine_warnings = vec![
        "current side: other processes used 45 % of the CPUs, baseline 3 %: timing verdicts may \
         reflect the machine, not the change"
            .into(),
    ];
    let html = render(&input);
    let boxed = html.find("id=\"differences\"").unwrap();
    let first_item = html[boxed..].find("<li>").unwrap() + boxed;
    assert!(
        html[first_item..]
            .starts_with("<li><b>the machine</b>: current side: other processes used 45 %")
    );
}

#[test]
fn a_changed_hook_is_a_difference() {
    let mut input = comparison_input();
    input.configs[0].current = input.configs[0].baseline.clone();
    input.current.runs[0].environment.kernel_release = "6.17".into();
    input.configs[0].baseline[0].extra.insert(
        "hook_before".into(),
        "echo 1 > /proc/sys/vm/compact_memory".into(),
    );
    input.configs[0].current[0]
        .extra
        .insert("hook_before".into(), "sync".into());
    let html = render(&input);
    let boxed = &html[html.find("id=\"differences\"").unwrap()..];
    let boxed = &boxed[..boxed.find("</div>").unwrap()];
    assert_eq!(boxed.matches("<li>").count(), 1, "{boxed}");
    assert!(
        boxed.contains("<b>before hook</b> of configuration")
            && boxed.contains("baseline <code>echo 1 &gt; /proc/sys/vm/compact_memory</code>")
            && boxed.contains("current <code>sync</code>"),
        "{boxed}"
    );
    // The same hook on both sides is no difference.
    input.configs[0].current = input.configs[0].baseline.clone();
    let html = render(&input);
    assert!(html.contains("Nothing recorded differs between the sides"));
}

fn iteration(i: u32, files_per_sec: f64) -> crate::fsmark::IterationResult {
    crate::fsmark::IterationResult {
        iteration: i,
        files: 200,
        count: 200 * i as u64,
        size: 4096,
        fs_use_pct: 3,
        files_per_sec,
        app_overhead_us: 1000 + i as u64,
        app_overhead_ns: Some((1000 + i as u64) * 1000),
        wall_ns: Some(250_000_000),
        files_per_sec_wall: Some(800.0),
        workers: Vec::new(),
        ops: Default::default(),
    }
}

#[test]
fn fs_mark_iterations_are_a_table_per_sample_and_a_plot() {
    let mut input = comparison_input();
    input.iterations = vec![IterationTables {
        config: CFG.into(),
        test: "smallfiles".into(),
        samples: vec![
            SampleIterations {
                role: Role::Baseline,
                run_id: 1,
                repetition: 1,
                sample_id: 11,
                rows: vec![
                    iteration(1, 1234.5),
                    iteration(2, 999.0),
                    iteration(3, 1111.0),
                ],
            },
            SampleIterations {
                role: Role::Current,
                run_id: 2,
                repetition: 1,
                sample_id: 21,
                rows: vec![
                    iteration(1, 777.0),
                    iteration(2, 888.0),
                    iteration(3, 666.0),
                ],
            },
        ],
    }];
    let html = render(&input);
    check_self_contained(&html);
    let start = html
        .find("<details class=\"iters\" open>")
        .expect("open: -L 3");
    let section = &html[start..start + html[start..].find("</details>").unwrap()];
    // Inside the test's section, before its end.
    assert!(start > html.find("id=\"t0\"").unwrap());
    assert_eq!(section.matches("<table class=\"iter\"").count(), 2);
    assert!(section.contains("baseline, run 1, repetition 1 (sample 11)"));
    assert!(section.contains("current, run 2, repetition 1 (sample 21)"));
    assert!(
        section.contains("dashed with rings the baseline's"),
        "the plot's legend"
    );
    // Three rows a sample, with fs_mark's columns.
    assert_eq!(section.matches("<tr><td class=\"num\">").count(), 6);
    for cell in [
        "<td class=\"num\">1234.5</td>",
        "<td class=\"num\">600</td>",
        "<td class=\"num\">1003</td>",
        "<td class=\"num\">0.250</td>",
    ] {
        assert!(section.contains(cell), "{cell} in {section}");
    }
    // The plot: one line and three markers per sample.
    let plot = svgs(section)
        .into_iter()
        .find(|s| s.contains("class=\"card chart iters\""))
        .expect("a plot of files/sec by iteration");
    assert_eq!(plot.matches("<polyline").count(), 2);
    assert_eq!(plot.matches("<circle").count(), 6);
    assert!(
        plot.contains("baseline, run 1, repetition 1 (sample 11), iteration 2: 999.0 files/sec")
    );

    // A row read from the real fs_mark has no wall time: its wall cells are a dash.
    let r = &mut input.iterations[0].samples[1].rows[0];
    r.wall_ns = None;
    r.files_per_sec_wall = None;
    r.app_overhead_ns = None;
    let html = render(&input);
    assert!(
        html.contains("<td class=\"num\">777.0</td><td class=\"num\">1001</td><td class=\"num\">-</td><td class=\"num\">-</td></tr>"),
        "{html}"
    );
    assert_eq!(html.matches("<td class=\"num\">0.250</td>").count(), 5);

    // One iteration a sample: the table folds and there is no plot.
    for s in &mut input.iterations[0].samples {
        s.rows.truncate(1);
    }
    let html = render(&input);
    assert!(html.contains("<details class=\"iters\"><summary>"));
    assert!(!html.contains("class=\"card chart iters\""));
    // No rows: no section.
    input.iterations.clear();
    assert!(!render(&input).contains("class=\"iters\""));
}

#[test]
fn a_long_history_dots_only_the_compared_runs() {
    let mut m = metric(
        "ext4",
        "files_per_sec",
        Unit::FilesPerSec,
        Direction::HigherIsBetter,
        &[100.0, 101.0],
        &[102.0, 103.0],
    );
    let mut short = step_history();
    m.history = Some(short.clone());
    let svg = charts::history_chart(&m);
    assert_eq!(
        svg.matches("class=\"hp\"").count(),
        18,
        "every other run of 20"
    );
    // 200 runs: the same line, dots and tips for the two compared runs only.
    let n = 200;
    short.points = (0..n)
        .map(|i| HistoryPoint {
            run_id: i as i64 + 1,
            label: "r".into(),
            median: 100.0 + (i % 7) as f64,
            n: 3,
            role: match i {
                198 => Role::Baseline,
                199 => Role::Current,
                _ => Role::Other,
            },
        })
        .collect();
    short.change_points.clear();
    short.segments.clear();
    m.history = Some(short);
    let svg = charts::history_chart(&m);
    assert!(n > charts::HISTORY_DOTS);
    assert_eq!(svg.matches("class=\"hp\"").count(), 0);
    assert_eq!(svg.matches("class=\"dot-b\"").count(), 1);
    assert_eq!(svg.matches("class=\"dot-c\"").count(), 1);
    assert_eq!(svg.matches("<polyline").count(), 1);
    assert!(svg.contains("200 runs"));
}

fn log_series(role: Role, sample_id: i64, ddir: u8, values: &[(u64, f64)]) -> FioLogSeries {
    FioLogSeries {
        role,
        run_id: sample_id / 10,
        repetition: 1,
        sample_id,
        ddir,
        lines: values.len() as u64,
        cut: false,
        points: values
            .iter()
            .map(|&(ms, v)| FioLogPoint {
                from_ms: ms,
                to_ms: ms,
                value: v,
                n: 1,
                min: v as u64,
                max: v as u64,
            })
            .collect(),
    }
}

#[test]
fn fio_logs_are_a_chart_per_log_with_a_line_per_sample_and_direction() {
    let mut input = comparison_input();
    input.fio_logs = vec![
        FioLogChart {
            config: CFG.into(),
            test: "smallfiles".into(),
            file: "x_clat.1.log".into(),
            kind: FioLogKind::Clat,
            series: vec![
                log_series(Role::Baseline, 11, 0, &[(100, 90_000.0), (200, 80_000.0)]),
                log_series(Role::Current, 21, 0, &[(100, 70_000.0), (200, 75_000.0)]),
                log_series(Role::Current, 21, 1, &[(100, 9_000.0), (200, 12_000.0)]),
            ],
        },
        FioLogChart {
            config: CFG.into(),
            test: "smallfiles".into(),
            file: "x_bw.1.log".into(),
            kind: FioLogKind::Bw,
            series: vec![log_series(
                Role::Current,
                21,
                1,
                &[(0, 50_000.0), (500, 61_000.0), (1000, 0.0)],
            )],
        },
    ];
    let html = render(&input);
    check_self_contained(&html);
    let start = html.find("<h3>fio logs</h3>").expect("a fio logs section");
    assert!(start > html.find("id=\"t0\"").unwrap());
    let charts: Vec<&str> = svgs(&html[start..])
        .into_iter()
        .filter(|s| s.contains("class=\"card chart fiolog\""))
        .collect();
    assert_eq!(charts.len(), 2);
    let clat = charts[0];
    assert!(clat.contains("x_clat.1.log (completion latency)"));
    // One line per sample and direction: the baseline's read dashed (cb), the current read
    // pink (cc), the current write blue (fl-w); a marker per point.
    assert_eq!(clat.matches("<polyline").count(), 3);
    for class in ["class=\"cb\"", "class=\"cc\"", "class=\"fl-w\""] {
        assert!(clat.contains(class), "{class}");
    }
    assert_eq!(clat.matches("<circle").count(), 6);
    assert!(clat.contains("baseline, run 1, repetition 1 (sample 11), read, 200 ms: 80 \u{b5}s"));
    assert!(clat.contains("current, run 2, repetition 1 (sample 21), write, 100 ms: 9 \u{b5}s"));
    // Latencies on a log axis: decade ticks.
    assert!(clat.contains(">10 \u{b5}s</text>") && clat.contains(">100 \u{b5}s</text>"));
    let bw = charts[1];
    assert!(bw.contains("KiB/s"));
    assert!(bw.contains("current, run 2, repetition 1 (sample 21), write, 500 ms: 61k"));
    // A cut log says so in the section's note.
    assert!(!html.contains("longer than fsdelta keeps"));
    input.fio_logs[1].series[0].cut = true;
    assert!(render(&input).contains("longer than fsdelta keeps"));
    // No logs: no section.
    input.fio_logs.clear();
    assert!(!render(&input).contains("fio logs"));
}

#[test]
fn the_title_names_configurations_and_guest_kernels_and_emulation_leads() {
    let mut input = comparison_input();
    let html = render(&input);
    // The host's kernel where no guest ran; the configuration of each side.
    assert!(
        html.contains(
            "<h1>fsdelta report: base [loop&lt;&amp;&quot;x&quot;&gt;, kernel 6.17] vs cur \
             [loop&lt;&amp;&quot;x&quot;&gt;, kernel 6.18]</h1>"
        ),
        "{}",
        &html[..html.find("</h1>").unwrap() + 5]
    );
    assert!(!html.contains("NOTE: guest samples"));
    // Two configurations side by side, each booted in a guest of its own kernel under TCG.
    input.configs = vec![ConfigFacts {
        name: "ext4-47 vs ext4-50".into(),
        baseline: vec![{
            let mut f = facts("rw");
            f.extra.insert("vm_kernel".into(), "6.1.0-47-amd64".into());
            f.extra.insert(
                "emulated".into(),
                "emulated: relative comparison only".into(),
            );
            f
        }],
        current: vec![{
            let mut f = facts("rw");
            f.extra.insert("vm_kernel".into(), "6.1.0-50-amd64".into());
            f
        }],
    }];
    let html = render(&input);
    assert!(
        html.contains(
            "<title>fsdelta report: base [ext4-47, kernel 6.1.0-47-amd64] vs cur [ext4-50, \
             kernel 6.1.0-50-amd64]</title>"
        ),
        "{}",
        &html[..html.find("</h1>").unwrap() + 5]
    );
    let note = html
        .find("NOTE: guest samples emulated: relative comparison only")
        .unwrap();
    assert!(
        note < html.find("class=\"sides\"").unwrap(),
        "the label leads"
    );
}

#[test]
fn a_response_curve_is_drawn_per_side_with_whiskers_the_knee_and_the_parting() {
    use crate::compare::curve::{self, Row};
    // baseline: IOPS scale to qd 16, p99 jumps at 64; current: saturates at 16
    let pts = [
        (1, 10_000.0, 100e3, 10_000.0, 100e3),
        (4, 40_000.0, 100e3, 40_000.0, 100e3),
        (16, 160_000.0, 100e3, 64_000.0, 200e3),
        (64, 160_000.0, 400e3, 64_000.0, 800e3),
    ];
    let spread = |v: f64| vec![v * 0.98, v, v * 1.02, v * 1.01];
    let mut keys = Vec::new();
    let mut vals = Vec::new();
    for (qd, bt, bl, ct, cl) in pts {
        for (metric, b, c, class, dir) in [
            (
                "read_iops",
                bt,
                ct,
                MetricClass::Throughput,
                Direction::HigherIsBetter,
            ),
            (
                "read_clat_ns_p99",
                bl,
                cl,
                MetricClass::Tail,
                Direction::LowerIsBetter,
            ),
        ] {
            keys.push(SeriesKey {
                config: CFG.into(),
                test: format!("rr[iodepth={qd}]"),
                metric: metric.into(),
            });
            let (b, c) = (spread(b), spread(c));
            let cmp = verdict::compare(&b, &c, dir, class, &Margins::default());
            vals.push((b, c, cmp));
        }
    }
    let rows: Vec<Row<'_>> = keys
        .iter()
        .zip(&vals)
        .map(|(k, (b, c, cmp))| Row {
            key: k,
            baseline: b,
            current: c,
            comparison: Some(cmp),
        })
        .collect();
    let mut input = comparison_input();
    input.response_curves = curve::curves(&rows);
    assert_eq!(input.response_curves.len(), 1);
    let html = render(&input);
    let at = html
        .find("<section id=\"curves\">")
        .expect("the curves section");
    let end = at + html[at..].find("</section>").unwrap();
    let sec = &html[at..end];
    // one line per side through the four points, whiskers both ways at every point
    assert_eq!(sec.matches("<polyline").count(), 2, "{sec}");
    assert_eq!(sec.matches("class=\"wb\"").count(), 8, "{sec}");
    assert_eq!(sec.matches("class=\"wc\"").count(), 8, "{sec}");
    // each side's knee ringed, the parting marked and named in the caption
    assert_eq!(sec.matches("class=\"knee\"").count(), 2, "{sec}");
    assert!(sec.contains("part at iodepth=16"), "{sec}");
    assert!(
        sec.contains("curves part at iodepth=16 (throughput -60 %, p99 +100 %)"),
        "{sec}"
    );
    assert!(
        sec.contains("knee: baseline iodepth=64, current iodepth=16"),
        "{sec}"
    );
    // a report without swept tests has no such section
    assert!(!render(&comparison_input()).contains("id=\"curves\""));
}
