//! Hand-written SVG: escaping, scales (linear, log10, log-ratio), tick choice and a small element
//! writer, for the charts of the HTML report.
//!
//! Why a module of its own: the report must stay one self-contained file with no plotting crate,
//! and every chart needs the same few primitives; keeping them here lets them be unit tested on
//! their own (scales, ticks, escaping of labels with `<&"`).
//!
//! What it must never do: compute statistics, read the store, or emit anything that refers
//! outside the document (no `href`, no external font or image). The only URL it writes is the SVG
//! namespace in `xmlns`, which browsers and XML parsers treat as a name, not a location.

use std::fmt::Write;

/// The SVG namespace (a name, never fetched).
pub const SVG_NS: &str = "http://www.w3.org/2000/svg";

/// Escape text for XML and HTML element content and double-quoted attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // XML 1.0 forbids most control characters even as references.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// A coordinate with at most one decimal, without a trailing `.0` (keeps files small).
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "0".into();
    }
    let r = (v * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// Maps a domain interval linearly onto a pixel interval (which may run backwards, as y does).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Linear {
    /// Domain start.
    pub d0: f64,
    /// Domain end.
    pub d1: f64,
    /// Pixel at `d0`.
    pub r0: f64,
    /// Pixel at `d1`.
    pub r1: f64,
}

impl Linear {
    /// A scale; with a zero-width domain every value maps to the middle of the pixels.
    pub fn new(d0: f64, d1: f64, r0: f64, r1: f64) -> Linear {
        Linear { d0, d1, r0, r1 }
    }

    /// Pixel of `v`, clamped to the pixel interval.
    pub fn map(&self, v: f64) -> f64 {
        if self.d1 == self.d0 {
            return (self.r0 + self.r1) / 2.0;
        }
        let t = ((v - self.d0) / (self.d1 - self.d0)).clamp(0.0, 1.0);
        self.r0 + t * (self.r1 - self.r0)
    }

    /// Whether `v` lies outside the domain (it was clamped by [`Linear::map`]).
    pub fn clipped(&self, v: f64) -> bool {
        let (lo, hi) = if self.d0 <= self.d1 {
            (self.d0, self.d1)
        } else {
            (self.d1, self.d0)
        };
        v < lo || v > hi
    }
}

/// A log10 scale for positive values (latencies): a [`Linear`] scale on log10 of the value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Log10 {
    inner: Linear,
}

impl Log10 {
    /// A scale from `d0` to `d1` (both > 0).
    pub fn new(d0: f64, d1: f64, r0: f64, r1: f64) -> Log10 {
        let l = |v: f64| v.max(f64::MIN_POSITIVE).log10();
        Log10 {
            inner: Linear::new(l(d0), l(d1), r0, r1),
        }
    }

    /// Pixel of `v`; values <= 0 map to the start.
    pub fn map(&self, v: f64) -> f64 {
        if v <= 0.0 {
            return self.inner.r0;
        }
        self.inner.map(v.log10())
    }
}

/// Up to about `max` evenly spaced "nice" ticks (1, 2 or 5 times a power of ten) covering
/// `[lo, hi]` from inside.
pub fn nice_ticks(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi < lo || max == 0 {
        return Vec::new();
    }
    if hi == lo {
        return vec![lo];
    }
    let raw = (hi - lo) / max.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| (hi - lo) / s <= max as f64)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last)
        .map(|i| {
            // Round to the step's decimals: no 0.30000000000000004 and no -0 in labels.
            let digits = 10f64.powi((-step.log10().floor()).max(0.0) as i32);
            let v = (i as f64 * step * digits).round() / digits;
            if v == 0.0 { 0.0 } else { v }
        })
        .collect()
}

/// Ticks for a log axis from `lo` to `hi` (> 0): the powers of ten inside, and 2x and 5x of them
/// too when fewer than three powers fit.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi >= lo && hi.is_finite()) {
        return Vec::new();
    }
    let a = lo.log10().floor() as i32;
    let b = hi.log10().ceil() as i32;
    let inside = |v: &f64| *v >= lo * (1.0 - 1e-9) && *v <= hi * (1.0 + 1e-9);
    let decades: Vec<f64> = (a..=b).map(|e| 10f64.powi(e)).filter(inside).collect();
    if decades.len() >= 3 {
        return decades;
    }
    (a..=b)
        .flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(e)))
        .filter(inside)
        .collect()
}

/// Percent changes offered as ticks on a log-ratio axis, on each side of 0.
const RATIO_TICKS: [f64; 19] = [
    -90.0, -80.0, -50.0, -20.0, -10.0, -5.0, -2.0, -1.0, 0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0,
    100.0, 200.0, 500.0, 1000.0,
];

/// Position of a percent change on a log-ratio axis: ln(1 + pct / 100); -100 % and below map to
/// negative infinity.
pub fn ratio_ln(pct: f64) -> f64 {
    let r = 1.0 + pct / 100.0;
    if r > 0.0 { r.ln() } else { f64::NEG_INFINITY }
}

/// Ticks (as percent changes) for a log-ratio axis spanning `[-half, half]` in ln units, drawn
/// with `px_per_ln` pixels per ln unit: 0 first, then outward on each side, skipping a tick that
/// would sit closer than `min_px` to the one kept before it.
pub fn ratio_ticks(half: f64, px_per_ln: f64, min_px: f64) -> Vec<f64> {
    let mut out = vec![0.0];
    for side in [1.0, -1.0] {
        let mut last = 0.0f64;
        let mut cand: Vec<f64> = RATIO_TICKS
            .iter()
            .copied()
            .filter(|p| *p * side > 0.0)
            .collect();
        cand.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
        for p in cand {
            let x = ratio_ln(p);
            if x.abs() > half + 1e-12 {
                break;
            }
            if (x - last).abs() * px_per_ln >= min_px {
                out.push(p);
                last = x;
            }
        }
    }
    out.sort_by(f64::total_cmp);
    out
}

/// A percent change as a tick label: `0`, `+5%`, `-20%`, `+1000%`.
pub fn pct_label(p: f64) -> String {
    if p == 0.0 {
        "0".into()
    } else if p.fract() == 0.0 {
        format!("{p:+.0}%")
    } else {
        format!("{p:+}%")
    }
}

/// A writer of SVG elements into a string. Classes refer to the report's stylesheet; every
/// text goes through [`esc`].
pub struct Svg {
    out: String,
}

impl Svg {
    /// Start an `<svg>` of `w` x `h` pixels with a CSS class and an accessible label.
    pub fn new(w: f64, h: f64, class: &str, label: &str) -> Svg {
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg xmlns="{SVG_NS}" class="{}" width="{}" height="{}" viewBox="0 0 {} {}" role="img" aria-label="{}">"#,
            esc(class),
            num(w),
            num(h),
            num(w),
            num(h),
            esc(label)
        );
        Svg { out }
    }

    /// A line.
    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, class: &str) {
        let _ = write!(
            self.out,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" class="{}"/>"#,
            num(x1),
            num(y1),
            num(x2),
            num(y2),
            esc(class)
        );
    }

    /// A rectangle (negative sizes are turned around).
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, class: &str) {
        let (x, w) = if w < 0.0 { (x + w, -w) } else { (x, w) };
        let (y, h) = if h < 0.0 { (y + h, -h) } else { (y, h) };
        let _ = write!(
            self.out,
            r#"<rect x="{}" y="{}" width="{}" height="{}" class="{}"/>"#,
            num(x),
            num(y),
            num(w),
            num(h),
            esc(class)
        );
    }

    /// A circle.
    pub fn circle(&mut self, cx: f64, cy: f64, r: f64, class: &str) {
        let _ = write!(
            self.out,
            r#"<circle cx="{}" cy="{}" r="{}" class="{}"/>"#,
            num(cx),
            num(cy),
            num(r),
            esc(class)
        );
    }

    /// A path from raw path data (built with [`num`]).
    pub fn path(&mut self, d: &str, class: &str) {
        let _ = write!(self.out, r#"<path d="{}" class="{}"/>"#, esc(d), esc(class));
    }

    /// A polyline through `points`.
    pub fn polyline(&mut self, points: &[(f64, f64)], class: &str) {
        let pts: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{},{}", num(*x), num(*y)))
            .collect();
        let _ = write!(
            self.out,
            r#"<polyline points="{}" class="{}"/>"#,
            pts.join(" "),
            esc(class)
        );
    }

    /// Text anchored `start`, `middle` or `end`.
    pub fn text(&mut self, x: f64, y: f64, anchor: &str, class: &str, text: &str) {
        let _ = write!(
            self.out,
            r#"<text x="{}" y="{}" text-anchor="{}" class="{}">{}</text>"#,
            num(x),
            num(y),
            esc(anchor),
            esc(class),
            esc(text)
        );
    }

    /// Text rotated by -90 degrees around its anchor (a y-axis title).
    pub fn vtext(&mut self, x: f64, y: f64, class: &str, text: &str) {
        let _ = write!(
            self.out,
            r#"<text x="{}" y="{}" text-anchor="middle" transform="rotate(-90 {} {})" class="{}">{}</text>"#,
            num(x),
            num(y),
            num(x),
            num(y),
            esc(class),
            esc(text)
        );
    }

    /// Open a group whose hover tooltip is `tip` (an SVG `<title>`, shown without script).
    pub fn open_tip(&mut self, tip: &str) {
        let _ = write!(self.out, "<g><title>{}</title>", esc(tip));
    }

    /// Open a group with a class.
    pub fn open_group(&mut self, class: &str) {
        let _ = write!(self.out, r#"<g class="{}">"#, esc(class));
    }

    /// Close the last group.
    pub fn close(&mut self) {
        self.out.push_str("</g>");
    }

    /// A marker shape centred on (x, y) of radius `r`: `triangle`, `circle`, `square`,
    /// `diamond`, or `dash`.
    pub fn marker(&mut self, shape: Shape, x: f64, y: f64, r: f64, class: &str) {
        match shape {
            Shape::Circle => self.circle(x, y, r, class),
            Shape::Square => self.rect(x - r * 0.85, y - r * 0.85, r * 1.7, r * 1.7, class),
            Shape::Triangle => self.path(
                &format!(
                    "M{} {}L{} {}L{} {}Z",
                    num(x),
                    num(y - r * 1.1),
                    num(x + r * 1.05),
                    num(y + r * 0.8),
                    num(x - r * 1.05),
                    num(y + r * 0.8)
                ),
                class,
            ),
            Shape::Diamond => self.path(
                &format!(
                    "M{} {}L{} {}L{} {}L{} {}Z",
                    num(x),
                    num(y - r * 1.2),
                    num(x + r),
                    num(y),
                    num(x),
                    num(y + r * 1.2),
                    num(x - r),
                    num(y)
                ),
                class,
            ),
            Shape::Dash => self.rect(x - r, y - 1.0, 2.0 * r, 2.0, class),
        }
    }

    /// Close the `<svg>` and return it.
    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>");
        self.out
    }
}

/// Marker shapes: a cue that does not rely on colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A filled triangle.
    Triangle,
    /// A circle.
    Circle,
    /// A square.
    Square,
    /// A diamond.
    Diamond,
    /// A short horizontal bar.
    Dash,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_markup_characters() {
        assert_eq!(
            esc(r#"a<b & "c" 'd'>"#),
            "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;"
        );
        assert_eq!(esc("tab\tnl\n"), "tab\tnl\n");
        assert_eq!(esc("bell\u{7}"), "bell\u{FFFD}");
    }

    #[test]
    fn labels_with_markup_stay_well_formed() {
        let mut s = Svg::new(100.0, 50.0, "c<&\"", "label <&\"");
        s.text(1.0, 2.0, "start", "t", r#"<&">"#);
        s.open_tip("tip <b>&\"");
        s.circle(1.0, 1.0, 1.0, "d");
        s.close();
        let svg = s.finish();
        let doc = roxmltree::Document::parse(&svg).expect("well-formed");
        let text = doc
            .descendants()
            .find(|n| n.has_tag_name("text"))
            .unwrap()
            .text()
            .unwrap();
        assert_eq!(text, r#"<&">"#);
        assert_eq!(
            doc.root_element().attribute("aria-label"),
            Some("label <&\"")
        );
        let title = doc.descendants().find(|n| n.has_tag_name("title")).unwrap();
        assert_eq!(title.text(), Some("tip <b>&\""));
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(num(1.0), "1");
        assert_eq!(num(1.04), "1");
        assert_eq!(num(1.06), "1.1");
        assert_eq!(num(-0.26), "-0.3");
        assert_eq!(num(f64::NAN), "0");
    }

    #[test]
    fn linear_scale_maps_clamps_and_runs_backwards() {
        let s = Linear::new(0.0, 10.0, 100.0, 200.0);
        assert_eq!(s.map(0.0), 100.0);
        assert_eq!(s.map(5.0), 150.0);
        assert_eq!(s.map(20.0), 200.0);
        assert!(s.clipped(20.0) && !s.clipped(10.0));
        let y = Linear::new(0.0, 1.0, 80.0, 0.0);
        assert_eq!(y.map(0.25), 60.0);
        assert_eq!(Linear::new(3.0, 3.0, 0.0, 10.0).map(3.0), 5.0);
    }

    #[test]
    fn log_scale_gives_decades_equal_width() {
        let s = Log10::new(1.0, 1000.0, 0.0, 300.0);
        assert!((s.map(10.0) - 100.0).abs() < 1e-9);
        assert!((s.map(100.0) - 200.0).abs() < 1e-9);
        assert_eq!(s.map(0.0), 0.0);
    }

    #[test]
    fn nice_ticks_use_1_2_5_steps() {
        assert_eq!(
            nice_ticks(0.0, 10.0, 5),
            vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
        );
        assert_eq!(nice_ticks(0.13, 0.61, 5), vec![0.2, 0.3, 0.4, 0.5, 0.6]);
        assert_eq!(nice_ticks(-3.0, 3.0, 3), vec![-2.0, 0.0, 2.0]);
        assert_eq!(nice_ticks(7.0, 7.0, 4), vec![7.0]);
        assert!(nice_ticks(f64::NAN, 1.0, 4).is_empty());
        assert!(nice_ticks(2.0, 1.0, 4).is_empty());
    }

    #[test]
    fn log_ticks_are_decades_or_1_2_5() {
        assert_eq!(log_ticks(300.0, 2e6), vec![1e3, 1e4, 1e5, 1e6]);
        assert_eq!(log_ticks(150.0, 900.0), vec![200.0, 500.0]);
        assert!(log_ticks(0.0, 10.0).is_empty());
    }

    #[test]
    fn ratio_ticks_are_symmetric_in_log_space_and_spaced() {
        // +-ln(1.25): room for +-1, 2, 5, 10, 20 % given enough pixels.
        let t = ratio_ticks(1.25f64.ln(), 2000.0, 10.0);
        assert_eq!(
            t,
            vec![
                -20.0, -10.0, -5.0, -2.0, -1.0, 0.0, 1.0, 2.0, 5.0, 10.0, 20.0
            ]
        );
        // Few pixels: only well separated ticks survive.
        let t = ratio_ticks(11f64.ln(), 60.0, 30.0);
        assert!(t.contains(&0.0) && t.contains(&100.0) && t.contains(&-50.0));
        for w in t.windows(2) {
            assert!(
                (ratio_ln(w[1]) - ratio_ln(w[0])) * 60.0 >= 30.0 - 1e-9,
                "{t:?}"
            );
        }
        assert_eq!(ratio_ln(-100.0), f64::NEG_INFINITY);
        assert_eq!(pct_label(0.0), "0");
        assert_eq!(pct_label(-20.0), "-20%");
        assert_eq!(pct_label(5.0), "+5%");
    }

    #[test]
    fn markers_are_well_formed() {
        let mut s = Svg::new(10.0, 10.0, "m", "m");
        for shape in [
            Shape::Triangle,
            Shape::Circle,
            Shape::Square,
            Shape::Diamond,
            Shape::Dash,
        ] {
            s.marker(shape, 5.0, 5.0, 3.0, "x");
        }
        s.polyline(&[(0.0, 0.0), (1.0, 2.5)], "l");
        s.vtext(1.0, 5.0, "a", "y axis");
        let svg = s.finish();
        let doc = roxmltree::Document::parse(&svg).unwrap();
        assert_eq!(doc.root_element().children().count(), 7);
    }
}
