//! Live progress of `fsdelta run`, the one place that draws it: on a terminal, one line per
//! configuration and test with a bar over its repetitions, elapsed time, the time left estimated
//! from the measured duration of its finished repetitions, and the last sample's headline number;
//! otherwise a plain line per sample on standard error; nothing with `--quiet`.
//!
//! The runner only emits events (`runner::Event`); `cli::run` turns them into these calls.

use crate::runner::{Event, Observer};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::HashMap;
use std::io::IsTerminal;
use std::time::Duration;

/// How progress is shown.
pub enum Progress {
    /// One bar per (configuration, test).
    Bars {
        /// The terminal group.
        multi: MultiProgress,
        /// Bars by (configuration, test).
        bars: HashMap<(String, String), ProgressBar>,
    },
    /// A line per sample on standard error.
    Lines,
    /// Nothing.
    Quiet,
}

impl Progress {
    /// Choose the form: bars on a terminal, lines otherwise, nothing when `quiet`.
    pub fn new(quiet: bool, rows: &[(String, String)], repetitions: u32) -> Progress {
        if quiet {
            return Progress::Quiet;
        }
        if !std::io::stderr().is_terminal() {
            return Progress::Lines;
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let width = rows
            .iter()
            .map(|(c, t)| c.len() + t.len() + 1)
            .max()
            .unwrap_or(10)
            .min(32);
        let style = ProgressStyle::with_template(&format!(
            "{{prefix:<{width}}} [{{bar:16}}] {{pos}}/{{len}} {{elapsed:>4}} left {{eta:>4}} {{msg}}"
        ))
        .expect("valid template")
        .progress_chars("=> ");
        let mut bars = HashMap::new();
        for (config, test) in rows {
            let bar = multi.add(ProgressBar::new(repetitions as u64));
            bar.set_style(style.clone());
            bar.set_prefix(format!("{config}/{test}"));
            bar.set_message("waiting");
            bars.insert((config.clone(), test.clone()), bar);
        }
        Progress::Bars { multi, bars }
    }

    fn bar(&self, config: &str, test: &str) -> Option<&ProgressBar> {
        match self {
            Progress::Bars { bars, .. } => bars.get(&(config.to_string(), test.to_string())),
            _ => None,
        }
    }

    /// A sample starts (repetition `rep` of `of`).
    pub fn start(&self, config: &str, test: &str, rep: u32, of: u32) {
        if let Some(b) = self.bar(config, test) {
            if b.length().is_some_and(|l| (of as u64) > l) {
                b.set_length(of as u64);
            }
            if b.position() == 0 {
                b.reset_elapsed();
                b.enable_steady_tick(Duration::from_millis(250));
            }
            b.set_message(format!("rep {rep}/{of} running"));
        }
    }

    /// A running workload entered a phase: shown as the bar's message.
    pub fn phase(&self, config: &str, test: &str, what: &str) {
        if let Some(b) = self.bar(config, test) {
            b.set_message(format!("running: {what}"));
        }
    }

    /// A sample ended: `line` for the log, `headline` for the bar.
    pub fn done(&self, config: &str, test: &str, line: &str, headline: &str) {
        match self {
            Progress::Bars { .. } => {
                if let Some(b) = self.bar(config, test) {
                    b.inc(1);
                    b.set_message(headline.to_string());
                }
            }
            Progress::Lines => eprintln!("{line}"),
            Progress::Quiet => {}
        }
    }

    /// Print a line above the bars (or to standard error).
    pub fn println(&self, line: &str) {
        match self {
            Progress::Bars { multi, .. } => {
                let _ = multi.println(line);
            }
            Progress::Lines => eprintln!("{line}"),
            Progress::Quiet => {}
        }
    }

    /// A warning: above the bars, or on standard error (also with `--quiet`).
    pub fn warn(&self, line: &str) {
        match self {
            Progress::Bars { multi, .. } => {
                let _ = multi.println(line);
            }
            Progress::Lines | Progress::Quiet => eprintln!("{line}"),
        }
    }

    /// Stop drawing; the bars stay on screen with their last state.
    pub fn finish(&self) {
        if let Progress::Bars { bars, .. } = self {
            for b in bars.values() {
                b.disable_steady_tick();
                b.abandon();
            }
        }
    }
}

/// The command line's observer: bars or lines from [`Progress`], the run's header line.
pub struct View {
    /// How progress is drawn.
    pub progress: Progress,
    /// `--quiet`: no header line.
    pub quiet: bool,
    /// Where results go (for the header line).
    pub location: String,
}

impl Observer for View {
    fn event(&self, e: Event) {
        let what =
            |config: &str, test: &str, rep: u32, of: u32| format!("{config}/{test} rep {rep}/{of}");
        match e {
            Event::RunStarted {
                run_id,
                label,
                suite,
                tests,
                configs,
                repetitions,
            } => {
                if !self.quiet {
                    self.progress.println(&format!(
                        "fsdelta run {run_id} ({label}): suite {suite}, {tests} test(s) x {} configuration(s) x {repetitions} repetition(s); results in {}",
                        configs.len(),
                        self.location
                    ));
                }
            }
            Event::SampleStarted {
                config,
                test,
                repetition,
                of,
            } => self.progress.start(&config, &test, repetition, of),
            Event::Phase { config, test, what } => self.progress.phase(&config, &test, &what),
            Event::SampleEnded { of, sample } => {
                let headline = crate::report::text::headline(&sample);
                let w = what(&sample.config, &sample.test, sample.repetition, of);
                self.progress.done(
                    &sample.config,
                    &sample.test,
                    &format!("{w}: {:.1} s, {headline}", sample.duration_s),
                    &headline,
                );
            }
            Event::SampleFailed { of, sample } => {
                let w = what(&sample.config, &sample.test, sample.repetition, of);
                self.progress.done(
                    &sample.config,
                    &sample.test,
                    &format!("{w}: FAILED: {}", sample.error.as_deref().unwrap_or("")),
                    "FAILED (see the end)",
                );
            }
            Event::Skipped {
                config,
                test,
                repetition,
                of,
                why,
            } => {
                let w = what(&config, &test, repetition, of);
                self.progress
                    .done(&config, &test, &format!("{w}: SKIPPED: {why}"), "skipped");
            }
            Event::Warning(w) => self.progress.warn(&format!("fsdelta: {w}")),
        }
    }
}
