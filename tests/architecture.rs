//! The import graph of the crate's rooms, read from the source: every room may import only the
//! rooms below it in the flow (the table [`ALLOWED`] right below), no circle is allowed, and a
//! new room must be placed in the table on purpose.
//!
//! Why a test: the rooms and their "why / never does" docs only hold if an arrow against the flow
//! fails the build's tests the day it is written, not at the next review. The test reads every
//! file under `src/` (non-test code only: `#[cfg(test)]` items and modules, and files named
//! `tests.rs`, are left out), finds each import of another room (`crate::ROOM`, `use crate::{ROOM,
//! ...}`, nested groups, `super::` chains that climb out of a room; comments and string
//! literals ignored), and fails naming `file:line` and the rule. Its own parser is tested below
//! on snippets, so it cannot silently find nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Which rooms each room may import: the order of the flow, lower never imports higher.
/// Explained in docs/design.md (the pipeline, rooms and invariants); keep the two in step.
/// `lib.rs` and `main.rs` are not rooms. A room of `src/lib.rs` missing here fails the test.
const ALLOWED: &[(&str, &[&str])] = &[
    // Leaves: process-level helpers, then the plain records that cross room boundaries.
    ("os", &[]),
    ("model", &["os"]),
    // What to run, where, with what, measured how.
    ("plan", &["model", "os"]),
    ("probe", &["plan", "model", "os"]),
    ("site", &["probe", "plan", "model", "os"]),
    ("workload", &["probe", "plan", "model", "os"]),
    // The wings (one home per compatible tool): never each other, never a site.
    ("fio", &["workload", "probe", "plan", "model", "os"]),
    ("fsmark", &["workload", "probe", "plan", "model", "os"]),
    ("dbench", &["workload", "probe", "plan", "model", "os"]),
    // The engine catalogue, then guests (which boot kernels and carry jobs, never run samples).
    (
        "engines",
        &[
            "fio", "fsmark", "dbench", "workload", "probe", "plan", "model", "os",
        ],
    ),
    // Kernels built from a git tree (below vm: vm may call it to resolve TREE@COMMIT).
    ("kbuild", &["os"]),
    (
        "vm",
        &[
            "engines", "workload", "site", "probe", "plan", "model", "os",
        ],
    ),
    // Keeping and reading what was measured, judging it, rendering it.
    ("store", &["model", "os"]),
    (
        "read",
        &["store", "fio", "fsmark", "dbench", "probe", "model", "os"],
    ),
    ("compare", &["read", "probe", "model", "os"]),
    (
        "report",
        &[
            "compare", "read", "fio", "fsmark", "dbench", "probe", "plan", "model", "os",
        ],
    ),
    // The run loop (every sample loop, guest included) and the fleet's queue.
    (
        "runner",
        &[
            "vm", "engines", "workload", "site", "probe", "plan", "store", "read", "compare",
            "model", "os",
        ],
    ),
    ("queue", &["store", "plan", "model", "os"]),
    // Bisection: the loop of steps over a lab that builds and measures, judged by compare.
    ("bisect", &["compare", "model", "os"]),
    // The edge: flags, exit codes, the terminal.
    (
        "cli",
        &[
            "os", "model", "plan", "probe", "site", "workload", "fio", "fsmark", "dbench",
            "engines", "vm", "store", "read", "compare", "report", "runner", "queue", "bisect",
            "kbuild", "serve",
        ],
    ),
    // The second edge: HTTP instead of a terminal (`fsdelta serve`), beside cli.
    (
        "serve",
        &[
            "store", "read", "compare", "report", "queue", "probe", "model", "os",
        ],
    ),
];

/// One import of a room found in the source.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Import {
    /// The imported room (the first path segment after `crate::`).
    room: String,
    /// 1-based line of the segment.
    line: usize,
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `src` with comments, string and character literals blanked (newlines kept, so lines stay).
fn strip(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < c.len() {
        let at_start = i == 0 || !is_ident(c[i - 1]);
        // Line comment.
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                blank(&mut out, c[i]);
                i += 1;
            }
            continue;
        }
        // Block comment (they nest).
        if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
            continue;
        }
        // Raw strings: r"..", r#".."#, br#".."#, cr".." (no escapes inside).
        if at_start {
            let prefix = match (c[i], c.get(i + 1)) {
                ('r', _) => 1,
                ('b' | 'c', Some('r')) => 2,
                _ => 0,
            };
            if prefix > 0 {
                let mut j = i + prefix;
                let mut hashes = 0;
                while c.get(j) == Some(&'#') {
                    hashes += 1;
                    j += 1;
                }
                if c.get(j) == Some(&'"') {
                    j += 1;
                    loop {
                        if j >= c.len() {
                            break;
                        }
                        if c[j] == '"' && (1..=hashes).all(|h| c.get(j + h) == Some(&'#')) {
                            j += 1 + hashes;
                            break;
                        }
                        j += 1;
                    }
                    for &ch in &c[i..j.min(c.len())] {
                        blank(&mut out, ch);
                    }
                    i = j;
                    continue;
                }
            }
        }
        // Strings (b".." and c".." too: the prefix is an identifier character kept as is).
        if c[i] == '"' {
            blank(&mut out, c[i]);
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' && i + 1 < c.len() {
                    blank(&mut out, c[i]);
                    i += 1;
                }
                blank(&mut out, c[i]);
                i += 1;
            }
            if i < c.len() {
                blank(&mut out, c[i]);
                i += 1;
            }
            continue;
        }
        // Character literals ('x', '\n', '\u{..}', '"'); a lifetime ('a) stays.
        if c[i] == '\'' {
            let end = if c.get(i + 1) == Some(&'\\') {
                (i + 3..c.len()).find(|&j| c[j] == '\'')
            } else if c.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            if let Some(end) = end {
                for &ch in &c[i..=end] {
                    blank(&mut out, ch);
                }
                i = end + 1;
                continue;
            }
        }
        out.push(c[i]);
        i += 1;
    }
    out
}

/// The index just past the brace block that opens at `open` (`c[open] == '{'`).
fn block_end(c: &[char], open: usize) -> usize {
    let mut depth = 0;
    for (j, &ch) in c.iter().enumerate().skip(open) {
        match ch {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
    }
    c.len()
}

/// The index just past the attribute that opens at `at` (`#[`), and what is inside its brackets
/// without spaces (`cfg(test)`).
fn attribute(c: &[char], at: usize) -> Option<(usize, String)> {
    if c.get(at) != Some(&'#') {
        return None;
    }
    let mut j = at + 1;
    if c.get(j) == Some(&'!') {
        j += 1;
    }
    if c.get(j) != Some(&'[') {
        return None;
    }
    let mut depth = 0;
    let mut text = String::new();
    for (k, &ch) in c.iter().enumerate().skip(j) {
        match ch {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some((k + 1, text));
                }
            }
            _ => {}
        }
        if k > j && !ch.is_whitespace() {
            text.push(ch);
        }
    }
    None
}

fn skip_space(c: &[char], mut i: usize) -> usize {
    while i < c.len() && c[i].is_whitespace() {
        i += 1;
    }
    i
}

/// The names of the `#[cfg(test)] mod NAME;` declarations of stripped source `s` (their files
/// are test code), and `s` with every `#[cfg(test)]` item blanked.
fn without_test_items(s: &str) -> (String, Vec<String>) {
    let mut c: Vec<char> = s.chars().collect();
    let mut test_mods = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let Some((after, text)) = attribute(&c, i) else {
            i += 1;
            continue;
        };
        if text != "cfg(test)" {
            i = after;
            continue;
        }
        // Further attributes, then the item: up to a `;` outside brackets, or through its
        // first brace block (and a `;` right after it: `use crate::{a, b};`).
        let mut j = skip_space(&c, after);
        while let Some((next, _)) = attribute(&c, j) {
            j = skip_space(&c, next);
        }
        let mut parens = 0i32;
        let mut end = c.len();
        let mut k = j;
        while k < c.len() {
            match c[k] {
                '(' | '[' => parens += 1,
                ')' | ']' => parens -= 1,
                ';' if parens == 0 => {
                    end = k + 1;
                    break;
                }
                '{' if parens == 0 => {
                    end = block_end(&c, k);
                    let next = skip_space(&c, end);
                    if c.get(next) == Some(&';') {
                        end = next + 1;
                    }
                    break;
                }
                _ => {}
            }
            k += 1;
        }
        if c[end.saturating_sub(1)] == ';' && !c[j..end].contains(&'{') {
            // `mod NAME;` (possibly `pub(crate) mod NAME;`): the module is a file of its own.
            let item: String = c[j..end].iter().collect();
            let words: Vec<&str> = item
                .split(|ch: char| !is_ident(ch))
                .filter(|w| !w.is_empty())
                .collect();
            if let [.., "mod", name] = words.as_slice() {
                test_mods.push(name.to_string());
            }
        }
        for ch in &mut c[i..end] {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
        i = end;
    }
    (c.into_iter().collect(), test_mods)
}

/// For each character of `s`, how many inline `mod NAME { .. }` blocks enclose it.
fn inline_depths(s: &[char]) -> Vec<usize> {
    let mut depth = vec![0; s.len()];
    let mut i = 0;
    while i + 3 < s.len() {
        let word = s[i..i + 3] == ['m', 'o', 'd']
            && (i == 0 || !is_ident(s[i - 1]))
            && s.get(i + 3).is_some_and(|c| c.is_whitespace());
        if word {
            let mut j = skip_space(s, i + 3);
            while j < s.len() && is_ident(s[j]) {
                j += 1;
            }
            let j = skip_space(s, j);
            if s.get(j) == Some(&'{') {
                for d in &mut depth[j + 1..block_end(s, j).saturating_sub(1)] {
                    *d += 1;
                }
            }
        }
        i += 1;
    }
    depth
}

/// The identifier starting at `i`, if any.
fn ident_at(c: &[char], i: usize) -> Option<String> {
    let w: String = c[i.min(c.len())..]
        .iter()
        .take_while(|&&ch| is_ident(ch))
        .collect();
    (!w.is_empty()).then_some(w)
}

/// `i` just past `::` (spaces allowed around it), if `::` comes next.
fn past_path_sep(c: &[char], i: usize) -> Option<usize> {
    let i = skip_space(c, i);
    (c.get(i) == Some(&':') && c.get(i + 1) == Some(&':')).then(|| skip_space(c, i + 2))
}

/// The first segments of the items of the group `{..}` opening at `open`.
fn group_heads(c: &[char], open: usize, line_of: &dyn Fn(usize) -> usize, out: &mut Vec<Import>) {
    let end = block_end(c, open);
    let mut depth = 0;
    let mut item_start = true;
    for k in open..end {
        match c[k] {
            '{' => {
                depth += 1;
                item_start = depth == 1;
            }
            '}' => depth -= 1,
            ',' if depth == 1 => item_start = true,
            ch if item_start && depth == 1 && is_ident(ch) => {
                item_start = false;
                if let Some(w) = ident_at(c, k) {
                    out.push(Import {
                        room: w,
                        line: line_of(k),
                    });
                }
            }
            ch if !ch.is_whitespace() => item_start = false,
            _ => {}
        }
    }
}

/// The crate-root segments that non-test source `src` of a file `module_depth` modules below
/// the crate root (`src/x.rs` is 1, `src/x/y.rs` 2) reaches: `crate::X`, `crate::{X, Y::..}`,
/// and `super::` chains that climb to the root.
fn imports(src: &str, module_depth: usize) -> (Vec<Import>, Vec<String>) {
    let (clean, test_mods) = without_test_items(&strip(src));
    let c: Vec<char> = clean.chars().collect();
    let mut lines = Vec::with_capacity(c.len());
    let mut line = 1;
    for &ch in &c {
        lines.push(line);
        if ch == '\n' {
            line += 1;
        }
    }
    let line_of = |i: usize| lines.get(i).copied().unwrap_or(line);
    let depths = inline_depths(&c);
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if i > 0 && (is_ident(c[i - 1]) || c[i - 1] == '$') {
            i += 1;
            continue;
        }
        // The path's root: `crate`, or enough `super`s to climb out of this module.
        let word = ident_at(&c, i);
        let root = match word.as_deref() {
            Some("crate") => past_path_sep(&c, i + 5),
            Some("super") => {
                let mut j = i;
                let mut supers = 0;
                while ident_at(&c, j).as_deref() == Some("super") {
                    match past_path_sep(&c, j + 5) {
                        Some(next) => {
                            supers += 1;
                            j = next;
                        }
                        None => break,
                    }
                }
                (supers > 0 && supers >= module_depth + depths[i]).then_some(j)
            }
            _ => None,
        };
        let Some(at) = root else {
            i += word.map_or(1, |w| w.len());
            continue;
        };
        if c.get(at) == Some(&'{') {
            group_heads(&c, at, &line_of, &mut out);
        } else if let Some(w) = ident_at(&c, at) {
            out.push(Import {
                room: w,
                line: line_of(at),
            });
        }
        i = at;
    }
    (out, test_mods)
}

/// The rooms declared in `src/lib.rs` (`pub mod X;`).
fn rooms_of_lib(lib: &str) -> Vec<String> {
    let (clean, _) = without_test_items(&strip(lib));
    let words: Vec<&str> = clean
        .split(|ch: char| !is_ident(ch))
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .filter(|w| w[0] == "mod")
        .map(|w| w[1].to_string())
        .collect()
}

/// The directory where the child modules of the module in `file` live.
fn child_dir(file: &Path) -> PathBuf {
    let parent = file.parent().unwrap_or(Path::new(""));
    match file.file_stem().and_then(|s| s.to_str()) {
        Some("mod" | "lib" | "main") => parent.to_path_buf(),
        Some(stem) => parent.join(stem),
        None => parent.to_path_buf(),
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// An import of room `to` by a file of room `from`.
struct Found {
    from: String,
    to: String,
    /// `src/..:LINE`.
    at: String,
}

/// Every cross-room import of the non-test code under `src`, and the rooms of `src/lib.rs`.
fn scan(src: &Path) -> (Vec<Found>, Vec<String>) {
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("src/lib.rs");
    let rooms = rooms_of_lib(&lib);
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut sources = BTreeMap::new();
    let mut test_only: Vec<PathBuf> = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(src).expect("under src").to_path_buf();
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let depth = rel.components().count() - usize::from(rel.ends_with("mod.rs"));
        let (found, test_mods) = imports(&text, depth);
        for m in test_mods {
            let dir = child_dir(&rel);
            test_only.push(dir.join(format!("{m}.rs")));
            test_only.push(dir.join(m));
        }
        sources.insert(rel, found);
    }
    let mut out = Vec::new();
    for (rel, found) in sources {
        let top = rel.components().next().expect("a path under src");
        let top = top.as_os_str().to_string_lossy();
        let room = top.strip_suffix(".rs").unwrap_or(&top).to_string();
        let test_code = rel.file_name().is_some_and(|n| n == "tests.rs")
            || test_only.iter().any(|t| rel.starts_with(t));
        if test_code || rel == Path::new("lib.rs") || rel == Path::new("main.rs") {
            continue;
        }
        for i in found {
            if i.room != room && rooms.contains(&i.room) {
                out.push(Found {
                    from: room.clone(),
                    to: i.room,
                    at: format!("src/{}:{}", rel.display(), i.line),
                });
            }
        }
    }
    (out, rooms)
}

fn allowed(room: &str) -> Option<&'static [&'static str]> {
    ALLOWED.iter().find(|(r, _)| *r == room).map(|(_, a)| *a)
}

/// A circle in `graph`, if there is one (the rooms along it, the first repeated at the end).
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(p) = path.iter().position(|x| x == n) {
            let mut c = path[p..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for m in graph.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

/// The whole table of found imports: each room, the rooms it imports, where first and how often.
fn table(found: &[Found]) -> String {
    let mut by: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
    for f in found {
        by.entry((&f.from, &f.to)).or_default().push(&f.at);
    }
    let mut t = String::from("imports found (room -> room: count, first place):\n");
    for ((from, to), at) in by {
        let mark = if allowed(from).is_some_and(|a| a.contains(&to)) {
            ""
        } else {
            "   <- NOT ALLOWED"
        };
        let _ = writeln!(t, "  {from} -> {to}: {}, {}{mark}", at.len(), at[0]);
    }
    t
}

/// The longest a function may be without a reason written above it (issue 34: a function over
/// 150 lines hides its steps; split it into named steps, or say why it is one piece).
const MAX_FN_LINES: usize = 150;

/// What a reason above a long function starts with (a `//` comment among the lines of doc
/// comments and attributes right above the `fn`).
const LONG_FN_REASON: &str = "// Over 150 lines:";

/// The functions of `text` longer than [`MAX_FN_LINES`] lines (from the `fn` line to its closing
/// brace) with no [`LONG_FN_REASON`] comment right above them: (line of the `fn`, name, lines).
fn long_functions(text: &str) -> Vec<(usize, String, usize)> {
    let stripped: Vec<char> = strip(text).chars().collect();
    let original: Vec<&str> = text.lines().collect();
    let line_of = |i: usize| stripped[..i].iter().filter(|&&c| c == '\n').count() + 1;
    let mut out = Vec::new();
    let mut i = 0;
    while i + 2 < stripped.len() {
        let starts_fn = stripped[i] == 'f'
            && stripped[i + 1] == 'n'
            && stripped[i + 2].is_whitespace()
            && (i == 0 || !is_ident(stripped[i - 1]));
        if !starts_fn {
            i += 1;
            continue;
        }
        let name = ident_at(&stripped, skip_space(&stripped, i + 2)).unwrap_or_default();
        // The body opens at the first `{` before any `;` (a declaration without a body).
        let Some(open) = (i..stripped.len()).find(|&j| stripped[j] == '{' || stripped[j] == ';')
        else {
            break;
        };
        if stripped[open] == ';' {
            i = open + 1;
            continue;
        }
        let first = line_of(i);
        let last = line_of(block_end(&stripped, open).saturating_sub(1));
        let lines = last - first + 1;
        let reasoned = original[..first - 1]
            .iter()
            .rev()
            .map(|l| l.trim())
            .take_while(|l| l.starts_with("//") || l.starts_with("#["))
            .any(|l| l.starts_with(LONG_FN_REASON));
        if lines > MAX_FN_LINES && !reasoned {
            out.push((first, name, lines));
        }
        i += 2;
    }
    out
}

#[test]
fn no_function_is_over_150_lines_without_a_reason() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() > 100, "the source was not found: {files:?}");
    let mut long = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (line, name, lines) in long_functions(&text) {
            long.push(format!("{}:{line}: fn {name}, {lines} lines", f.display()));
        }
    }
    assert!(
        long.is_empty(),
        "split these into named steps, or write the reason right above the fn \
         (`{LONG_FN_REASON} ...`):\n{}",
        long.join("\n")
    );
}

#[test]
fn long_functions_are_measured_from_fn_to_brace_and_a_reason_excuses_them() {
    let body = |n: usize| "    let x = 1;\n".repeat(n);
    // 3 lines of signature and braces around the body.
    let long = format!(
        "/// Doc.\n#[inline]\nfn long() {{\n{}}}\n",
        body(MAX_FN_LINES - 1)
    );
    assert_eq!(
        long_functions(&long),
        vec![(3, "long".to_string(), MAX_FN_LINES + 1)]
    );
    let just = format!("fn just() {{\n{}}}\n", body(MAX_FN_LINES - 2));
    assert!(long_functions(&just).is_empty());
    let excused = format!("/// Doc.\n{LONG_FN_REASON} a table.\n#[test]\n{long}");
    assert!(long_functions(&excused).is_empty());
    // Braces and `fn` inside strings and comments do not count; a declaration has no body.
    let tricky = format!(
        "trait T {{ fn decl(&self); }}\n// fn not_code() {{\nfn s() {{ let _ = \"{{ fn x\"; }}\n{long}"
    );
    assert_eq!(long_functions(&tricky).len(), 1, "{tricky}");
}

#[test]
fn every_import_runs_with_the_flow() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (found, rooms) = scan(&src);
    let mut problems = Vec::new();
    for r in &rooms {
        if allowed(r).is_none() {
            problems.push(format!(
                "src/lib.rs: room {r} is not in the table of tests/architecture.rs: place it on purpose (which rooms it may import, and which may import it; docs/design.md explains the order)"
            ));
        }
    }
    for f in &found {
        if let Some(ok) = allowed(&f.from)
            && !ok.contains(&f.to.as_str())
        {
            problems.push(format!(
                "{}: {} imports {}, against the flow: {} may import only [{}] (lower rooms never import higher ones; docs/design.md); move what it needs down, or pass it in",
                f.at,
                f.from,
                f.to,
                f.from,
                ok.join(", ")
            ));
        }
    }
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &found {
        graph
            .entry(f.from.clone())
            .or_default()
            .insert(f.to.clone());
    }
    if let Some(c) = cycle(&graph) {
        problems.push(format!("the rooms import in a circle: {}", c.join(" -> ")));
    }
    assert!(
        found.iter().any(|f| f.from == "cli") && found.iter().any(|f| f.from == "runner"),
        "the scan found no import of cli or runner: the parser is broken\n{}",
        table(&found)
    );
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}\n\n{}",
        problems.len(),
        problems.join("\n"),
        table(&found)
    );
}

#[test]
fn the_table_is_a_flow() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (room, ok) in ALLOWED {
        for to in *ok {
            assert!(
                allowed(to).is_some(),
                "{room} may import {to}, which has no row"
            );
            assert_ne!(room, to, "{room} lists itself");
        }
        graph
            .entry(room.to_string())
            .or_default()
            .extend(ok.iter().map(|s| s.to_string()));
    }
    assert_eq!(cycle(&graph), None, "the allowed imports have a circle");
}

fn rooms(src: &str, depth: usize) -> Vec<(String, usize)> {
    imports(src, depth)
        .0
        .into_iter()
        .map(|i| (i.room, i.line))
        .collect()
}

fn pairs(v: &[(&str, usize)]) -> Vec<(String, usize)> {
    v.iter().map(|(r, l)| (r.to_string(), *l)).collect()
}

#[test]
fn parser_reads_paths_and_groups() {
    let src = "use crate::model::Metric;\n\
               use crate::{probe::blockstat, os, site::{Prepared, env}};\n\
               pub(crate) use crate :: store::Store;\n\
               fn f() { let x = crate::plan::suite::parse(); }\n\
               use crate::{\n    self as fsd,\n    vm::Kernel,\n};\n";
    assert_eq!(
        rooms(src, 1),
        pairs(&[
            ("model", 1),
            ("probe", 2),
            ("os", 2),
            ("site", 2),
            ("store", 3),
            ("plan", 4),
            ("self", 6),
            ("vm", 7),
        ])
    );
}

#[test]
fn parser_ignores_comments_strings_and_chars() {
    let src = "// use crate::runner;\n\
               /* crate::report /* nested crate::store */ crate::queue */\n\
               //! see `crate::vm::guest`\n\
               let s = \"crate::cli and \\\" crate::read\";\n\
               let r = r#\"crate::compare \"# ;\n\
               let q = '\"'; let t: &'static str = \"crate::fio\";\n\
               let b = b\"crate::fsmark\"; fn g<'a>(x: &'a u8) {}\n\
               let e = '\\''; let u = '\\u{1F600}'; let h = \"crate::dbench\";\n\
               use crate::model;\n";
    assert_eq!(rooms(src, 1), pairs(&[("model", 9)]));
}

#[test]
fn parser_skips_test_code() {
    let src = "use crate::model;\n\
               #[cfg(test)]\n\
               mod tests {\n    use crate::runner;\n    fn f() { crate::cli::x(); }\n}\n\
               #[cfg(test)]\n#[allow(unused)]\nuse crate::{store, report};\n\
               #[cfg(test)]\nfn helper() -> u8 { crate::queue::x() }\n\
               #[cfg(test)]\nmod simulation;\n\
               #[cfg(test)]\npub(crate) mod conformance;\n\
               fn after() { crate::os::y(); }\n";
    let (found, test_mods) = imports(src, 1);
    let found: Vec<_> = found.into_iter().map(|i| (i.room, i.line)).collect();
    assert_eq!(found, pairs(&[("model", 1), ("os", 16)]));
    assert_eq!(test_mods, ["simulation", "conformance"]);
}

#[test]
fn parser_follows_super_out_of_a_room_only() {
    // In src/vm/guest.rs (depth 2): `super::` is vm, `super::super::` the crate root.
    let src = "use super::job::Job;\n\
               use super::super::runner::Site;\n\
               mod inner {\n    use super::super::job;\n    use super::super::super::store;\n}\n";
    assert_eq!(rooms(src, 2), pairs(&[("runner", 2), ("store", 5)]));
}

#[test]
fn lib_rooms_and_cycles() {
    let lib = "//! pub mod not_a_room;\npub mod cli;\nmod os;\n#[cfg(test)]\nmod testkit;\n";
    assert_eq!(rooms_of_lib(lib), ["cli", "os"]);
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    assert_eq!(cycle(&g), None);
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(
        cycle(&g),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}
