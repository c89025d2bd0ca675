//! The page frame and the small HTML pieces every page uses: escaping, the layout with its
//! navigation, tables, links with query strings.
//!
//! Every stored text reaches a page through [`esc`] (element content and quoted attribute
//! values alike) or [`url`] (query values); this module must never put a stored text in a page
//! any other way, nor emit inline script or style (the Content-Security-Policy forbids both).

use std::fmt::Write as _;

/// Escape text for HTML element content and double- or single-quoted attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Percent-encode a query value (everything but unreserved characters).
pub fn url(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

/// A path with a query string of `pairs` (values encoded), escaped for an `href`.
pub fn href(path: &str, pairs: &[(&str, &str)]) -> String {
    let mut u = path.to_string();
    for (i, (k, v)) in pairs.iter().enumerate() {
        u.push(if i == 0 { '?' } else { '&' });
        u.push_str(k);
        u.push('=');
        u.push_str(&url(v));
    }
    esc(&u)
}

/// The pages of the navigation bar: (path, title).
const NAV: [(&str, &str); 6] = [
    ("/", "Home"),
    ("/alerts", "Alerts"),
    ("/compare", "Compare"),
    ("/runs", "Runs"),
    ("/machines", "Machines"),
    ("/jobs", "Jobs"),
];

/// A whole page: the head (stylesheet and script served by the binary), the navigation, `body`.
/// `title` is plain text (escaped here).
pub fn page(title: &str, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{} - fsdelta</title>\n<link rel=\"stylesheet\" href=\"/static/app.css\">\n\
         <script src=\"/static/app.js\" defer></script>\n</head>\n<body>\n<header><nav>",
        esc(title)
    );
    for (path, name) in NAV {
        let _ = write!(out, "<a href=\"{path}\">{name}</a>");
    }
    let _ = write!(
        out,
        "</nav></header>\n<main>\n<h1>{}</h1>\n{body}\n</main>\n<footer>fsdelta {} serve: every \
         number is a stored measurement or a statistic computed from them.</footer>\n</body>\n</html>\n",
        esc(title),
        env!("CARGO_PKG_VERSION")
    );
    out
}

/// A table: `head` cells (plain text) and rows of cells that are already HTML.
pub fn table(class: &str, head: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("<div class=\"scroll\"><table class=\"{class}\"><thead><tr>");
    for h in head {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>");
    for r in rows {
        out.push_str("<tr>");
        for c in r {
            let _ = write!(out, "<td>{c}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    out
}

/// A time as shown: UTC, to the minute.
pub fn when(t: &chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_leaves_no_markup_and_urls_no_reserved_characters() {
        let evil = "\"><img src=x onerror=alert(1)><script>alert('x')</script>&";
        let e = esc(evil);
        assert!(!e.contains('<') && !e.contains('>') && !e.contains('"') && !e.contains('\''));
        assert_eq!(
            e,
            "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;"
        );
        assert_eq!(url("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
        assert_eq!(
            href("/history", &[("test", "a&b"), ("metric", "\"x")]),
            "/history?test=a%26b&amp;metric=%22x"
        );
        let p = page("<t>", "<p>x</p>");
        assert!(p.contains("<title>&lt;t&gt; - fsdelta</title>") && !p.contains("<t>"));
        assert!(
            !p.contains("<script>") && !p.contains("<style>"),
            "no inline script or style"
        );
    }
}
