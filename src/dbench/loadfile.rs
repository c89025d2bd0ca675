//! The dbench 4.00 loadfile grammar: parsed once, before any client starts, into a compact
//! program that every client replays.
//!
//! Why parse up front: dbench re-tokenizes every line of its 26 MB loadfile in every client on
//! every pass; parsing once moves that cost out of the timed loop and lets a bad line be reported
//! with its line number before the run starts, instead of being skipped with a message mid-run.
//! This module must never touch the filesystem: it only turns text into [`Loadfile`].
//!
//! Grammar (dbench 4.00 `child.c`, `util.c:next_token`):
//! - one operation a line; tokens are separated by spaces (we also accept tabs and a trailing
//!   `\r`); a `"` toggles quoting and is dropped, so a quoted token may hold spaces;
//! - every `\` becomes `/`;
//! - a line with fewer than two tokens, or whose first token starts with `#`, is skipped;
//! - an optional leading token starting with a digit is the target time in seconds since the
//!   start of the pass (the client sleeps until then);
//! - the last token is the expected status: `NT_STATUS_*` or `0x..`; `NT_STATUS_OK` and a `0x`
//!   value of zero mean success expected, anything else failure expected;
//! - numbers are C `strtol(s, NULL, 0)` numbers: decimal, `0x` hex, or octal with a leading `0`.
//!
//! Deliberate differences, all of which turn what dbench silently skips or misreads into an
//! error with the line number: a malformed status, an unknown operation, a wrong number of
//! arguments, a non-numeric argument, and an unquoted path (dbench's `" /" -> " "` substitution
//! strips the slash of an unquoted path, so the operation runs on an empty name). dbench 5
//! directives (`LOOP`, `REPEAT`, `RANDOMSTRING`, `*` arguments, ...) are not part of the 4.00
//! grammar and are rejected.

use std::fmt;

/// Operation classes, in the order of dbench 4.00's final table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpClass {
    /// `NTCreateX`: open or create a file or directory.
    NtCreateX,
    /// `Close`.
    Close,
    /// `Rename`.
    Rename,
    /// `Unlink`.
    Unlink,
    /// `Deltree`: unlink every file below a directory.
    Deltree,
    /// `Rmdir`.
    Rmdir,
    /// `Mkdir`.
    Mkdir,
    /// `QUERY_PATH_INFORMATION`.
    Qpathinfo,
    /// `QUERY_FILE_INFORMATION`.
    Qfileinfo,
    /// `QUERY_FS_INFORMATION`.
    Qfsinfo,
    /// `SET_FILE_INFORMATION`.
    Sfileinfo,
    /// `FIND_FIRST`.
    Find,
    /// `WriteX`.
    WriteX,
    /// `ReadX`.
    ReadX,
    /// `LockX`.
    LockX,
    /// `UnlockX`.
    UnlockX,
    /// `Flush`.
    Flush,
}

/// Number of operation classes.
pub const OP_CLASSES: usize = 17;

impl OpClass {
    /// Every class in table order.
    pub const ALL: [OpClass; OP_CLASSES] = [
        OpClass::NtCreateX,
        OpClass::Close,
        OpClass::Rename,
        OpClass::Unlink,
        OpClass::Deltree,
        OpClass::Rmdir,
        OpClass::Mkdir,
        OpClass::Qpathinfo,
        OpClass::Qfileinfo,
        OpClass::Qfsinfo,
        OpClass::Sfileinfo,
        OpClass::Find,
        OpClass::WriteX,
        OpClass::ReadX,
        OpClass::LockX,
        OpClass::UnlockX,
        OpClass::Flush,
    ];

    /// Index into per-class arrays.
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// The label dbench prints in its final table.
    pub fn label(self) -> &'static str {
        match self {
            OpClass::NtCreateX => "NTCreateX",
            OpClass::Close => "Close",
            OpClass::Rename => "Rename",
            OpClass::Unlink => "Unlink",
            OpClass::Deltree => "Deltree",
            OpClass::Rmdir => "Rmdir",
            OpClass::Mkdir => "Mkdir",
            OpClass::Qpathinfo => "Qpathinfo",
            OpClass::Qfileinfo => "Qfileinfo",
            OpClass::Qfsinfo => "Qfsinfo",
            OpClass::Sfileinfo => "Sfileinfo",
            OpClass::Find => "Find",
            OpClass::WriteX => "WriteX",
            OpClass::ReadX => "ReadX",
            OpClass::LockX => "LockX",
            OpClass::UnlockX => "UnlockX",
            OpClass::Flush => "Flush",
        }
    }

    /// The stem of this class's metric names: the table label in lower case
    /// (`ntcreatex_avg_ms`, `qpathinfo_count`), so that the native engine and the parser of the
    /// real dbench's output produce the same names.
    pub fn metric_stem(self) -> &'static str {
        match self {
            OpClass::NtCreateX => "ntcreatex",
            OpClass::Close => "close",
            OpClass::Rename => "rename",
            OpClass::Unlink => "unlink",
            OpClass::Deltree => "deltree",
            OpClass::Rmdir => "rmdir",
            OpClass::Mkdir => "mkdir",
            OpClass::Qpathinfo => "qpathinfo",
            OpClass::Qfileinfo => "qfileinfo",
            OpClass::Qfsinfo => "qfsinfo",
            OpClass::Sfileinfo => "sfileinfo",
            OpClass::Find => "find",
            OpClass::WriteX => "writex",
            OpClass::ReadX => "readx",
            OpClass::LockX => "lockx",
            OpClass::UnlockX => "unlockx",
            OpClass::Flush => "flush",
        }
    }

    /// The class whose table label is `label`.
    pub fn from_label(label: &str) -> Option<OpClass> {
        OpClass::ALL.iter().copied().find(|c| c.label() == label)
    }
}

/// A path as written in the loadfile, after `\` -> `/`; it starts with `/` and is relative to
/// the run directory. Every `client1` in it is rewritten to the client's own name at run time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathTemplate(pub Box<str>);

/// A file handle number, as the loadfile names it.
pub type Handle = i64;

/// One operation with its arguments.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// `NTCreateX path create_options disposition handle`.
    NtCreateX {
        /// The file or directory.
        path: PathTemplate,
        /// SMB create options (bit 0x1: a directory).
        create_options: u32,
        /// SMB disposition (1 open, 2 create, 3 open-if, 4 overwrite, 5 overwrite-if).
        disposition: u32,
        /// The handle later operations name.
        handle: Handle,
    },
    /// `Close handle`.
    Close {
        /// Handle to close.
        handle: Handle,
    },
    /// `Rename old new`.
    Rename {
        /// Old name.
        from: PathTemplate,
        /// New name.
        to: PathTemplate,
    },
    /// `Unlink path attributes`.
    Unlink {
        /// The file.
        path: PathTemplate,
        /// SMB attribute mask (unused by the file backend).
        attr: i64,
    },
    /// `Deltree path`.
    Deltree {
        /// The directory.
        path: PathTemplate,
    },
    /// `Rmdir path`.
    Rmdir {
        /// The directory.
        path: PathTemplate,
    },
    /// `Mkdir path`.
    Mkdir {
        /// The directory.
        path: PathTemplate,
    },
    /// `QUERY_PATH_INFORMATION path level`.
    QueryPathInformation {
        /// The path.
        path: PathTemplate,
        /// Information level (unused by the file backend).
        level: i64,
    },
    /// `QUERY_FILE_INFORMATION handle level`.
    QueryFileInformation {
        /// The handle.
        handle: Handle,
        /// Information level.
        level: i64,
    },
    /// `QUERY_FS_INFORMATION level`.
    QueryFsInformation {
        /// Information level.
        level: i64,
    },
    /// `SET_FILE_INFORMATION handle level`.
    SetFileInformation {
        /// The handle.
        handle: Handle,
        /// Information level.
        level: i64,
    },
    /// `FIND_FIRST pattern level maxcnt count`.
    FindFirst {
        /// Directory and pattern.
        pattern: PathTemplate,
        /// Information level.
        level: i64,
        /// Most entries to read.
        max_count: i64,
        /// Entries the trace saw (unused).
        count: i64,
    },
    /// `WriteX handle offset size returned`.
    WriteX {
        /// The handle.
        handle: Handle,
        /// File offset.
        offset: u64,
        /// Bytes to write.
        size: usize,
        /// Bytes the write must return.
        ret: i64,
    },
    /// `ReadX handle offset size returned`.
    ReadX {
        /// The handle.
        handle: Handle,
        /// File offset.
        offset: u64,
        /// Bytes to read.
        size: usize,
        /// Bytes the read is expected to return (a mismatch is reported, not fatal).
        ret: i64,
    },
    /// `LockX handle offset length`.
    LockX {
        /// The handle.
        handle: Handle,
        /// Range start.
        offset: u64,
        /// Range length.
        len: u64,
    },
    /// `UnlockX handle offset length`.
    UnlockX {
        /// The handle.
        handle: Handle,
        /// Range start.
        offset: u64,
        /// Range length.
        len: u64,
    },
    /// `Flush handle`.
    Flush {
        /// The handle.
        handle: Handle,
    },
    /// `Sleep microseconds` (not timed, not counted).
    Sleep {
        /// Microseconds.
        usec: u64,
    },
}

impl Op {
    /// The class this operation is counted under; `None` for `Sleep`.
    pub fn class(&self) -> Option<OpClass> {
        Some(match self {
            Op::NtCreateX { .. } => OpClass::NtCreateX,
            Op::Close { .. } => OpClass::Close,
            Op::Rename { .. } => OpClass::Rename,
            Op::Unlink { .. } => OpClass::Unlink,
            Op::Deltree { .. } => OpClass::Deltree,
            Op::Rmdir { .. } => OpClass::Rmdir,
            Op::Mkdir { .. } => OpClass::Mkdir,
            Op::QueryPathInformation { .. } => OpClass::Qpathinfo,
            Op::QueryFileInformation { .. } => OpClass::Qfileinfo,
            Op::QueryFsInformation { .. } => OpClass::Qfsinfo,
            Op::SetFileInformation { .. } => OpClass::Sfileinfo,
            Op::FindFirst { .. } => OpClass::Find,
            Op::WriteX { .. } => OpClass::WriteX,
            Op::ReadX { .. } => OpClass::ReadX,
            Op::LockX { .. } => OpClass::LockX,
            Op::UnlockX { .. } => OpClass::UnlockX,
            Op::Flush { .. } => OpClass::Flush,
            Op::Sleep { .. } => return None,
        })
    }
}

/// The expected status of a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    /// As written (`NT_STATUS_OK`, `NT_STATUS_OBJECT_NAME_NOT_FOUND`, `0x0`).
    pub text: Box<str>,
    /// Whether success is expected.
    pub success: bool,
}

/// One parsed line.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// 1-based line number in the loadfile.
    pub lineno: u32,
    /// Target time in seconds since the start of the pass, when the line has one.
    pub target_time: Option<f64>,
    /// The operation.
    pub op: Op,
    /// The expected status.
    pub status: Status,
}

/// A parsed loadfile.
#[derive(Clone, Debug)]
pub struct Loadfile {
    /// Where it came from (a path, or `builtin:NAME`).
    pub name: String,
    /// The operations, in file order.
    pub lines: Vec<Line>,
    /// Number of text lines in the file (skipped ones included): dbench's line counter advances
    /// by this much per pass.
    pub text_lines: u32,
    /// Largest ReadX/WriteX size: the size of each client's I/O buffers.
    pub max_io: usize,
}

impl Loadfile {
    /// Whether any line moves bytes (ReadX or WriteX). dbench's warmup only ends once every
    /// client has moved bytes, so a loadfile without them would never leave warmup.
    pub fn moves_bytes(&self) -> bool {
        self.lines
            .iter()
            .any(|l| matches!(l.op, Op::ReadX { .. } | Op::WriteX { .. }))
    }
}

/// A line that cannot be replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadfileError {
    /// The loadfile's name.
    pub name: String,
    /// 1-based line number.
    pub line: u32,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl fmt::Display for LoadfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.name, self.line, self.message)
    }
}

impl std::error::Error for LoadfileError {}

/// A token with whether it began inside quotes.
struct Token {
    text: String,
    quoted_start: bool,
}

/// dbench's `next_token` over a whole line, with `\` -> `/` applied.
fn tokenize(line: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while matches!(chars.peek(), Some(' ' | '\t' | '\r')) {
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        let mut text = String::new();
        let mut quoted = false;
        let mut quoted_start = false;
        let mut first = true;
        while let Some(&c) = chars.peek() {
            if !quoted && matches!(c, ' ' | '\t' | '\r') {
                break;
            }
            chars.next();
            match c {
                '"' => {
                    quoted = !quoted;
                    if first && quoted {
                        quoted_start = true;
                    }
                    continue;
                }
                '\\' => text.push('/'),
                c => text.push(c),
            }
            first = false;
        }
        out.push(Token { text, quoted_start });
    }
    out
}

/// C's `strtol(s, NULL, 0)` for a whole token: decimal, `0x` hex, or octal with a leading 0.
pub fn parse_c_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let v = if let Some(hex) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        i64::from_str_radix(hex, 16).ok()?
    } else if body.len() > 1 && body.starts_with('0') {
        i64::from_str_radix(&body[1..], 8).ok()?
    } else {
        body.parse::<i64>().ok()?
    };
    if body.is_empty() || body.starts_with(['+', '-']) {
        return None;
    }
    Some(if neg { -v } else { v })
}

/// Operation names of the 4.00 grammar with their argument counts (status excluded).
const ARITY: [(&str, usize); 18] = [
    ("NTCreateX", 4),
    ("Close", 1),
    ("Rename", 2),
    ("Unlink", 2),
    ("Deltree", 1),
    ("Rmdir", 1),
    ("Mkdir", 1),
    ("QUERY_PATH_INFORMATION", 2),
    ("QUERY_FILE_INFORMATION", 2),
    ("QUERY_FS_INFORMATION", 1),
    ("SET_FILE_INFORMATION", 2),
    ("FIND_FIRST", 4),
    ("WriteX", 4),
    ("ReadX", 4),
    ("LockX", 3),
    ("UnlockX", 3),
    ("Flush", 1),
    ("Sleep", 1),
];

/// Directives that dbench 5 added and 4.00 does not know.
const DBENCH5: [&str; 8] = [
    "LOOP",
    "ENDLOOP",
    "REPEAT",
    "SLEEP",
    "SETSP",
    "WAITSP",
    "WRITEPATTERN",
    "RANDOMSTRING",
];

/// A loadfile line taken apart by [`split_line`].
struct LineParts<'t> {
    /// The leading target time, seconds.
    target_time: Option<f64>,
    /// The operation's name.
    opname: &'t str,
    /// The expected status.
    status: Status,
    /// The arguments between the name and the status.
    args: &'t [Token],
}

/// The parts of a loadfile line (tokens, comments already skipped): its target time, operation
/// name, expected status and arguments, checked against dbench 4.00's grammar and [`ARITY`].
fn split_line<'t>(
    tokens: &'t [Token],
    err: &dyn Fn(String) -> LoadfileError,
) -> Result<LineParts<'t>, LoadfileError> {
    if tokens[0].text.starts_with("SMB") {
        return Err(err(
            "this is a dbench 1 loadfile (SMB* operations); use a dbench 3/4 loadfile".into(),
        ));
    }
    let mut toks: &[Token] = tokens;
    let mut target_time = None;
    if toks[0].text.starts_with(|c: char| c.is_ascii_digit()) {
        let t: f64 = toks[0].text.parse().map_err(|_| {
            err(format!(
                "leading target time '{}' is not a number of seconds",
                toks[0].text
            ))
        })?;
        target_time = Some(t);
        toks = &toks[1..];
    }
    let opname = toks[0].text.as_str();
    if DBENCH5.contains(&opname) {
        return Err(err(format!(
            "'{opname}' is a dbench 5 directive; the dbench 4.00 grammar has no loops, \
             repeats, sequence points or random strings"
        )));
    }
    let last = &toks[toks.len() - 1].text;
    if toks.len() < 2 || !(last.starts_with("NT_STATUS_") || last.starts_with("0x")) {
        return Err(err(format!(
            "badly formed status '{}': the last token must be NT_STATUS_* or 0x..",
            if toks.len() < 2 { "" } else { last }
        )));
    }
    let success = if last == "NT_STATUS_OK" {
        true
    } else if let Some(hex) = last.strip_prefix("0x") {
        u64::from_str_radix(hex, 16)
            .map_err(|_| err(format!("status '{last}' is not a hex number")))?
            == 0
    } else {
        false
    };
    let status = Status {
        text: last.clone().into_boxed_str(),
        success,
    };
    let args = &toks[1..toks.len() - 1];
    let Some(&(_, arity)) = ARITY.iter().find(|(n, _)| *n == opname) else {
        let known: Vec<&str> = ARITY.iter().map(|(n, _)| *n).collect();
        return Err(err(format!(
            "unknown operation '{opname}' (names are case sensitive; known: {})",
            known.join(", ")
        )));
    };
    if args.len() != arity {
        return Err(err(format!(
            "{opname} takes {arity} argument{} before the status, found {}",
            if arity == 1 { "" } else { "s" },
            args.len()
        )));
    }
    Ok(LineParts {
        target_time,
        opname,
        status,
        args,
    })
}

/// The operation of a line from its name and arguments; `max_io` grows to the largest
/// ReadX/WriteX size.
fn build_op(
    opname: &str,
    args: &[Token],
    err: &dyn Fn(String) -> LoadfileError,
    max_io: &mut usize,
) -> Result<Op, LoadfileError> {
    let num = |k: usize| -> Result<i64, LoadfileError> {
        parse_c_int(&args[k].text).ok_or_else(|| {
            err(format!(
                "{opname} argument {} '{}' is not a number",
                k + 1,
                args[k].text
            ))
        })
    };
    let unsigned = |k: usize| -> Result<u64, LoadfileError> {
        let v = num(k)?;
        u64::try_from(v)
            .map_err(|_| err(format!("{opname} argument {} must not be negative", k + 1)))
    };
    let path = |k: usize| -> Result<PathTemplate, LoadfileError> {
        let t = &args[k];
        if !t.text.starts_with('/') {
            return Err(err(format!(
                "{opname} argument {} '{}' is not a path: paths start with \\ or /",
                k + 1,
                t.text
            )));
        }
        if !t.quoted_start {
            return Err(err(format!(
                "{opname} path '{}' must be quoted (\"\\dir\\file\"): dbench 4 strips the \
                 leading slash of an unquoted path and runs the operation on an empty name",
                t.text
            )));
        }
        // Every path must stay inside the client's directory: `\..\..\x` would make
        // NTCreateX create and Deltree empty a directory outside -D.
        if t.text.split('/').any(|c| c == "..") {
            return Err(err(format!(
                "{opname} path '{}' climbs out of the client's directory with '..'; \
                 every loadfile path must stay inside it: remove the '..' components",
                t.text.replace('/', "\\")
            )));
        }
        Ok(PathTemplate(t.text.clone().into_boxed_str()))
    };
    Ok(match opname {
        "NTCreateX" => Op::NtCreateX {
            path: path(0)?,
            create_options: num(1)? as u32,
            disposition: num(2)? as u32,
            handle: num(3)?,
        },
        "Close" => Op::Close { handle: num(0)? },
        "Rename" => Op::Rename {
            from: path(0)?,
            to: path(1)?,
        },
        "Unlink" => Op::Unlink {
            path: path(0)?,
            attr: num(1)?,
        },
        "Deltree" => Op::Deltree { path: path(0)? },
        "Rmdir" => Op::Rmdir { path: path(0)? },
        "Mkdir" => Op::Mkdir { path: path(0)? },
        "QUERY_PATH_INFORMATION" => Op::QueryPathInformation {
            path: path(0)?,
            level: num(1)?,
        },
        "QUERY_FILE_INFORMATION" => Op::QueryFileInformation {
            handle: num(0)?,
            level: num(1)?,
        },
        "QUERY_FS_INFORMATION" => Op::QueryFsInformation { level: num(0)? },
        "SET_FILE_INFORMATION" => Op::SetFileInformation {
            handle: num(0)?,
            level: num(1)?,
        },
        "FIND_FIRST" => Op::FindFirst {
            pattern: path(0)?,
            level: num(1)?,
            max_count: num(2)?,
            count: num(3)?,
        },
        "WriteX" | "ReadX" => {
            let handle = num(0)?;
            let offset = unsigned(1)?;
            let size = unsigned(2)?;
            if size > 64 << 20 {
                return Err(err(format!(
                    "{opname} size {size} is larger than 64 MiB; SMB transfers are at most \
                     a few MiB"
                )));
            }
            let size = size as usize;
            *max_io = (*max_io).max(size);
            let ret = num(3)?;
            if opname == "WriteX" {
                Op::WriteX {
                    handle,
                    offset,
                    size,
                    ret,
                }
            } else {
                Op::ReadX {
                    handle,
                    offset,
                    size,
                    ret,
                }
            }
        }
        "LockX" => Op::LockX {
            handle: num(0)?,
            offset: unsigned(1)?,
            len: unsigned(2)?,
        },
        "UnlockX" => Op::UnlockX {
            handle: num(0)?,
            offset: unsigned(1)?,
            len: unsigned(2)?,
        },
        "Flush" => Op::Flush { handle: num(0)? },
        "Sleep" => Op::Sleep { usec: unsigned(0)? },
        _ => unreachable!("every name of ARITY is matched"),
    })
}

/// Parse a whole loadfile. `name` is used in error messages.
pub fn parse(name: &str, text: &str) -> Result<Loadfile, LoadfileError> {
    let mut lines = Vec::new();
    let mut text_lines = 0u32;
    let mut max_io = 0usize;
    for (i, raw) in text.lines().enumerate() {
        let lineno = (i + 1) as u32;
        text_lines = lineno;
        let err = |message: String| LoadfileError {
            name: name.to_string(),
            line: lineno,
            message,
        };
        let tokens = tokenize(raw);
        if tokens.len() < 2 || tokens[0].text.starts_with('#') {
            continue;
        }
        let LineParts {
            target_time,
            opname,
            status,
            args,
        } = split_line(&tokens, &err)?;
        let op = build_op(opname, args, &err, &mut max_io)?;
        lines.push(Line {
            lineno,
            target_time,
            op,
            status,
        });
    }
    if lines.is_empty() {
        return Err(LoadfileError {
            name: name.to_string(),
            line: text_lines,
            message: "the loadfile has no operations".into(),
        });
    }
    Ok(Loadfile {
        name: name.to_string(),
        lines,
        text_lines,
        max_io,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Line {
        parse("t", line).unwrap().lines.remove(0)
    }

    fn fails(text: &str) -> LoadfileError {
        parse("t", text).unwrap_err()
    }

    #[test]
    fn every_operation_of_the_grammar_parses() {
        let text = r#"
# a comment
Deltree "\clients\client1" NT_STATUS_OK
Mkdir "\clients" NT_STATUS_OK
NTCreateX "\clients\client1\f" 0x40 0x2 9938 NT_STATUS_OK
WriteX 9938 65534 1 1 NT_STATUS_OK
ReadX 9938 0 4096 4096 NT_STATUS_OK
QUERY_FILE_INFORMATION 9938 258 NT_STATUS_OK
SET_FILE_INFORMATION 9938 1004 NT_STATUS_OK
LockX 9938 0x10 2 NT_STATUS_OK
UnlockX 9938 16 2 NT_STATUS_OK
Flush 9938 NT_STATUS_OK
Close 9938 NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\g" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND
QUERY_FS_INFORMATION 1 NT_STATUS_OK
FIND_FIRST "\clients\client1\*.txt" 260 1366 0 NT_STATUS_NO_SUCH_FILE
Rename "\clients\client1\f" "\clients\client1\g" NT_STATUS_OK
Unlink "\clients\client1\g" 0x16 NT_STATUS_OK
Rmdir "\clients\client1\d" 0x0
Sleep 1000 NT_STATUS_OK
"#;
        let lf = parse("t", text).unwrap();
        assert_eq!(lf.lines.len(), 18);
        assert_eq!(lf.text_lines, 20);
        assert_eq!(lf.max_io, 4096);
        assert!(lf.moves_bytes());
        assert_eq!(lf.lines[0].lineno, 3);
        assert_eq!(
            lf.lines[2].op,
            Op::NtCreateX {
                path: PathTemplate("/clients/client1/f".into()),
                create_options: 0x40,
                disposition: 2,
                handle: 9938
            }
        );
        assert_eq!(
            lf.lines[7].op,
            Op::LockX {
                handle: 9938,
                offset: 16,
                len: 2
            }
        );
        assert!(!lf.lines[11].status.success);
        assert_eq!(
            &*lf.lines[11].status.text,
            "NT_STATUS_OBJECT_NAME_NOT_FOUND"
        );
        assert!(lf.lines[16].status.success, "0x0 means success");
        assert_eq!(lf.lines[17].op.class(), None);
        let classes: Vec<_> = lf.lines.iter().filter_map(|l| l.op.class()).collect();
        for c in OpClass::ALL {
            assert!(classes.contains(&c), "{c:?} not covered");
        }
    }

    #[test]
    fn a_path_that_climbs_out_of_the_client_directory_is_refused() {
        for line in [
            r#"NTCreateX "\..\..\x" 0x1 0x2 1 NT_STATUS_OK"#,
            r#"Deltree "\clients\..\..\victim" NT_STATUS_OK"#,
            r#"Rename "\clients\a" "\clients\..\..\b" NT_STATUS_OK"#,
            r#"Mkdir "/../up" NT_STATUS_OK"#,
        ] {
            let e = fails(line).to_string();
            assert!(e.contains("climbs out") && e.contains("t:1"), "{line}: {e}");
        }
        // A name that merely contains dots stays inside.
        let l = one(r#"Mkdir "\clients\client1\..hidden\a..b" NT_STATUS_OK"#);
        assert!(matches!(l.op, Op::Mkdir { .. }), "{l:?}");
    }

    #[test]
    fn leading_number_is_the_target_time() {
        let l = one("12.5 Close 7 NT_STATUS_OK");
        assert_eq!(l.target_time, Some(12.5));
        assert_eq!(l.op, Op::Close { handle: 7 });
        assert_eq!(one("Close 7 0x0").target_time, None);
    }

    #[test]
    fn numbers_follow_strtol_base_zero() {
        assert_eq!(parse_c_int("0x1f"), Some(31));
        assert_eq!(parse_c_int("017"), Some(15));
        assert_eq!(parse_c_int("0"), Some(0));
        assert_eq!(parse_c_int("-12"), Some(-12));
        assert_eq!(parse_c_int("12a"), None);
        assert_eq!(parse_c_int("0x"), None);
        assert_eq!(parse_c_int(""), None);
        assert_eq!(parse_c_int("--1"), None);
    }

    #[test]
    fn quotes_group_spaces_and_backslashes_become_slashes() {
        let l = one(r#"Mkdir "\clients\client1\My Documents" NT_STATUS_OK"#);
        assert_eq!(
            l.op,
            Op::Mkdir {
                path: PathTemplate("/clients/client1/My Documents".into())
            }
        );
        let l = one("Close\t5\tNT_STATUS_OK\r");
        assert_eq!(l.op, Op::Close { handle: 5 });
        assert!(l.status.success);
    }

    #[test]
    fn short_and_comment_lines_are_skipped() {
        let lf = parse("t", "#Close 1 NT_STATUS_OK\nClose\n\n  \nClose 1 0x0\n").unwrap();
        assert_eq!(lf.lines.len(), 1);
        assert_eq!(lf.lines[0].lineno, 5);
    }

    #[test]
    fn bad_lines_are_errors_with_their_line_numbers() {
        let e = fails("Close 1 NT_STATUS_OK\nClose 1 OK\n");
        assert_eq!(e.line, 2);
        assert!(e.message.contains("badly formed status"), "{e}");
        assert_eq!(e.to_string().split(':').nth(1), Some("2"));

        let e = fails("Close 1 NT_STATUS_OK\n\nOpenX 1 NT_STATUS_OK\n");
        assert_eq!(e.line, 3);
        assert!(e.message.contains("unknown operation 'OpenX'"), "{e}");

        let e = fails("close 1 NT_STATUS_OK");
        assert!(e.message.contains("case sensitive"), "{e}");

        let e = fails("WriteX 1 0 4096 NT_STATUS_OK");
        assert!(e.message.contains("takes 4 arguments"), "{e}");

        let e = fails("ReadX 1 0 lots 4096 NT_STATUS_OK");
        assert!(e.message.contains("'lots' is not a number"), "{e}");

        let e = fails("ReadX 1 -5 10 10 NT_STATUS_OK");
        assert!(e.message.contains("must not be negative"), "{e}");

        let e = fails(r"Unlink \clients\client1\f 0 NT_STATUS_OK");
        assert!(e.message.contains("must be quoted"), "{e}");

        let e = fails(r#"Unlink "clients" 0 NT_STATUS_OK"#);
        assert!(e.message.contains("is not a path"), "{e}");

        let e = fails("Close 1 0xzz");
        assert!(e.message.contains("not a hex number"), "{e}");

        let e = fails("1x Close 1 NT_STATUS_OK");
        assert!(e.message.contains("target time"), "{e}");

        let e = fails("LOOP 5 NT_STATUS_OK");
        assert!(e.message.contains("dbench 5"), "{e}");

        let e = fails("SMBopenX 1 2 3");
        assert!(e.message.contains("dbench 1"), "{e}");

        let e = fails("# nothing\n");
        assert!(e.message.contains("no operations"), "{e}");
    }

    #[test]
    fn a_loadfile_without_data_transfer_is_recognised() {
        let lf = parse("t", "Mkdir \"\\a\" NT_STATUS_OK\n").unwrap();
        assert!(!lf.moves_bytes());
    }
}
