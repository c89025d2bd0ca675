//! dbench 4.00's output formats, byte for byte: the start lines, the 1 s tick lines, the final
//! per-operation table and the `Throughput` line.
//!
//! Why exact: scripts (fsperf, mmtests, people's own) read dbench's output; `fsdelta dbench`
//! prints the same lines so they read ours too, and so the parser of the real dbench's output can
//! be tested against our renderer. Every function here is pure (records in, text out) and must
//! never measure or print.

use crate::dbench::{DbenchOptions, DbenchReport, Tick};

/// The lines printed before the clients start (dbench prints its version and the launch
/// barrier's progress here).
pub fn render_start(version: &str, opts: &DbenchOptions, loadfile: &str) -> String {
    let procs = opts.nprocs;
    format!(
        "fsdelta {version} dbench engine (dbench 4.00 compatible)\n\n\
         Running for {} seconds with load '{loadfile}' and minimum warmup {} secs\n\
         {procs} of {procs} processes prepared for launch   0 sec\n\
         releasing clients\n",
        opts.time_limit_s,
        opts.warmup(),
    )
}

/// One tick line, with its newline:
/// `"%4d  %8d  %7.2f MB/sec  {warmup|execute} %3.0f sec  latency %.03f ms"` or
/// `"%4d  cleanup %3.0f sec"`.
pub fn render_tick(tick: &Tick) -> String {
    match *tick {
        Tick::Warmup {
            active,
            lines,
            mb_s,
            t,
            latency_ms,
        } => format!(
            "{active:4}  {lines:8}  {mb_s:7.2} MB/sec  warmup {t:3.0} sec  latency {latency_ms:.3} ms\n"
        ),
        Tick::Execute {
            clients,
            lines,
            mb_s,
            t,
            latency_ms,
        } => format!(
            "{clients:4}  {lines:8}  {mb_s:7.2} MB/sec  execute {t:3.0} sec  latency {latency_ms:.3} ms\n"
        ),
        Tick::Cleanup { remaining, t } => format!("{remaining:4}  cleanup {t:3.0} sec\n"),
    }
}

/// The final table (rows with count 0 skipped), preceded by the blank line dbench prints after
/// its last tick and followed by one blank line.
pub fn render_table(report: &DbenchReport) -> String {
    let mut s = String::from("\n Operation      Count    AvgLat    MaxLat\n");
    s.push_str(" ----------------------------------------\n");
    for op in report.ops.iter().filter(|o| o.stats.count > 0) {
        s.push_str(&format!(
            " {:<12} {:7} {:9.3} {:9.3}\n",
            op.class.label(),
            op.stats.count,
            op.avg_ms(),
            op.max_ms()
        ));
    }
    s.push('\n');
    s
}

/// `Throughput %g MB/sec%s%s  %d clients  %d procs  max_latency=%.03f ms`, with its newline.
pub fn render_throughput(report: &DbenchReport) -> String {
    format!(
        "Throughput {} MB/sec{}{}  {} clients  {} procs  max_latency={:.3} ms\n",
        format_g(report.throughput_mb_s),
        if report.sync_open { " (sync open)" } else { "" },
        if report.sync_dirs { " (sync dirs)" } else { "" },
        report.clients,
        report.procs,
        report.max_latency_ms
    )
}

/// C's `%g`: six significant digits, trailing zeros removed, exponent form below 1e-4 and from
/// 1e6 on.
pub fn format_g(x: f64) -> String {
    const P: i32 = 6;
    if x == 0.0 {
        return "0".into();
    }
    if !x.is_finite() {
        return if x.is_nan() {
            "nan".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    // The exponent after rounding to P significant digits decides the style.
    let sci = format!("{:.*e}", (P - 1) as usize, x);
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..P).contains(&exp) {
        let mant = strip_zeros(mant);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (P - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dbench::OpSummary;
    use crate::dbench::client::OpStats;
    use crate::dbench::loadfile::OpClass;
    use crate::probe::clock::Nanos;

    #[test]
    fn ticks_match_dbench_400_byte_for_byte() {
        // Lines captured from Debian's dbench 4.00.
        let t = Tick::Execute {
            clients: 2,
            lines: 55394,
            mb_s: 367.41,
            t: 1.0002,
            latency_ms: 29.423,
        };
        assert_eq!(
            render_tick(&t),
            "   2     55394   367.41 MB/sec  execute   1 sec  latency 29.423 ms\n"
        );
        let t = Tick::Warmup {
            active: 1,
            lines: 12,
            mb_s: 0.5,
            t: 1.4,
            latency_ms: 0.0,
        };
        assert_eq!(
            render_tick(&t),
            "   1        12     0.50 MB/sec  warmup   1 sec  latency 0.000 ms\n"
        );
        assert_eq!(
            render_tick(&Tick::Cleanup {
                remaining: 2,
                t: 6.0001
            }),
            "   2  cleanup   6 sec\n"
        );
    }

    fn report() -> DbenchReport {
        let mut ops: Vec<OpSummary> = OpClass::ALL
            .iter()
            .map(|&class| OpSummary {
                class,
                stats: OpStats::default(),
            })
            .collect();
        ops[0].stats.count = 68806;
        ops[0].stats.total = Nanos(68806 * 46_000);
        ops[0].stats.max = Nanos(12_250_000);
        ops[16].stats.count = 4838;
        ops[16].stats.total = Nanos(4838 * 902_000);
        ops[16].stats.max = Nanos(13_279_000);
        DbenchReport {
            clients: 2,
            procs: 2,
            sync_open: false,
            sync_dirs: false,
            ops,
            throughput_mb_s: 364.771_2,
            max_latency_ms: 29.423,
            notices: 0,
        }
    }

    #[test]
    fn table_and_throughput_match_dbench_400() {
        let r = report();
        assert_eq!(
            render_table(&r),
            "\n Operation      Count    AvgLat    MaxLat\n \
             ----------------------------------------\n \
             NTCreateX      68806     0.046    12.250\n \
             Flush           4838     0.902    13.279\n\n"
        );
        assert_eq!(
            render_throughput(&r),
            "Throughput 364.771 MB/sec  2 clients  2 procs  max_latency=29.423 ms\n"
        );
        let mut r = r;
        r.sync_open = true;
        r.sync_dirs = true;
        assert!(
            render_throughput(&r)
                .starts_with("Throughput 364.771 MB/sec (sync open) (sync dirs)  2")
        );
    }

    #[test]
    fn percent_g_matches_c() {
        assert_eq!(format_g(364.7712), "364.771");
        assert_eq!(format_g(196.566), "196.566");
        assert_eq!(format_g(1234.5678), "1234.57");
        assert_eq!(format_g(0.0), "0");
        assert_eq!(format_g(12.5), "12.5");
        assert_eq!(format_g(100.0), "100");
        assert_eq!(format_g(1234567.0), "1.23457e+06");
        assert_eq!(format_g(0.0001234), "0.0001234");
        assert_eq!(format_g(0.00001234), "1.234e-05");
        assert_eq!(format_g(999999.5), "1e+06");
    }
}
