//! The values of fio options: sizes, times, whole numbers and fio's arithmetic.
//!
//! Why it exists: every option of the table reads its value through these few functions, so a
//! size means the same thing in `bs=`, `size=` and `offset=` (base 1024, fio's suffixes), a
//! negative number is refused the same way everywhere, and fio's arithmetic
//! (`size=5*1024*$mb_memory/8`, `bs=(4k*2)`) is evaluated once, here. It must never guess: an
//! unknown suffix or a malformed expression is an error, not fio's silent multiplier of 1.

use super::Bytes;
use std::time::Duration;

/// A parsed size value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeValue {
    /// Bytes.
    Bytes(Bytes),
    /// Percent.
    Percent(u64),
}

fn size_mult(suffix: &str) -> Option<u64> {
    Some(match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1 << 10,
        "m" | "mb" => 1 << 20,
        "g" | "gb" => 1 << 30,
        "t" | "tb" => 1 << 40,
        "p" | "pb" => 1 << 50,
        "kib" => 1000,
        "mib" => 1000u64.pow(2),
        "gib" => 1000u64.pow(3),
        "tib" => 1000u64.pow(4),
        "pib" => 1000u64.pow(5),
        _ => return None,
    })
}

/// A size with fio's suffixes: k/m/g/t/p (and kb, mb, ...) are powers of 1024; fio's inverted
/// `kib`/`mib`/... are powers of 1000 under the default `kb_base=1024`; `b` is bytes. `N%`
/// gives [`SizeValue::Percent`]. A value starting with `(` is fio's arithmetic. A negative
/// number is refused ("must be positive").
pub fn parse_size(text: &str) -> Result<SizeValue, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!("'{t}': must be positive"));
    }
    if t.starts_with('(') {
        return eval(t, Unit::Bytes).map(|v| SizeValue::Bytes(Bytes(v)));
    }
    let digits_end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(digits_end);
    if num.is_empty() {
        return Err(format!(
            "'{t}' is not a size (expected a number such as 4k, 1m, 2g)"
        ));
    }
    let suffix_l = suffix.trim().to_ascii_lowercase();
    if suffix_l == "%" {
        let p: u64 = num
            .parse()
            .map_err(|_| format!("'{t}': a percentage must be a whole number"))?;
        return Ok(SizeValue::Percent(p));
    }
    let Some(mult) = size_mult(&suffix_l) else {
        return Err(format!(
            "'{t}': unknown size suffix '{suffix}' (use k, m, g, t, p; base 1024)"
        ));
    };
    scale(num, mult, t).map(|b| SizeValue::Bytes(Bytes(b)))
}

fn scale(num: &str, mult: u64, whole: &str) -> Result<u64, String> {
    if num.contains('.') {
        let f: f64 = num
            .parse()
            .map_err(|_| format!("'{whole}' is not a number"))?;
        let b = f * mult as f64;
        if !b.is_finite() || b > u64::MAX as f64 {
            return Err(format!("'{whole}' is too large"));
        }
        Ok(b as u64)
    } else {
        let n: u64 = num.parse().map_err(|_| format!("'{whole}' is too large"))?;
        n.checked_mul(mult)
            .ok_or_else(|| format!("'{whole}' is too large"))
    }
}

fn time_mult_us(suffix: &str, default_us: u64) -> Option<u64> {
    Some(match suffix.to_ascii_lowercase().as_str() {
        "" => default_us,
        "s" | "sec" => 1_000_000,
        "us" | "usec" => 1,
        "ms" | "msec" => 1_000,
        "m" | "min" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        _ => return None,
    })
}

/// A time with fio's suffixes (us/usec, ms/msec, s, m, h, d); a bare number is seconds.
pub fn parse_time(text: &str) -> Result<Duration, String> {
    parse_time_unit(text, 1_000_000)
}

/// A time whose bare number is `default_us` microseconds (fio's thinktime is in us, its
/// runtime in s).
pub fn parse_time_unit(text: &str, default_us: u64) -> Result<Duration, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!("'{t}': must be positive"));
    }
    if t.starts_with('(') {
        return eval(t, Unit::Time { default_us }).map(Duration::from_micros);
    }
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, suffix) = t.split_at(digits_end);
    if num.is_empty() {
        return Err(format!(
            "'{t}' is not a time (expected a number such as 10, 500ms, 2m)"
        ));
    }
    let n: u64 = num.parse().map_err(|_| format!("'{t}' is too large"))?;
    let Some(per) = time_mult_us(suffix.trim(), default_us) else {
        return Err(format!(
            "'{t}': unknown time suffix '{suffix}' (use us, ms, s, m, h, d)"
        ));
    };
    let us = n
        .checked_mul(per)
        .ok_or_else(|| format!("'{t}' is too large"))?;
    Ok(Duration::from_micros(us))
}

/// A whole number: decimal, `0x` hex, fio's size suffixes (`1k` = 1024), or arithmetic in
/// parentheses. Negative numbers are refused.
pub fn parse_number(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!("'{t}': must be positive"));
    }
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).map_err(|_| format!("'{t}' is not a whole number"));
    }
    if t.starts_with('(') {
        return eval(t, Unit::Bytes);
    }
    if let Ok(n) = t.parse::<u64>() {
        return Ok(n);
    }
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, suffix) = t.split_at(digits_end);
    match (num.is_empty(), size_mult(suffix)) {
        (false, Some(m)) if !suffix.is_empty() => scale(num, m, t),
        _ => Err(format!("'{t}' is not a whole number")),
    }
}

/// What a bare number in an expression means.
#[derive(Clone, Copy)]
enum Unit {
    Bytes,
    Time { default_us: u64 },
}

/// fio's arithmetic (its exp/ parser): `+ - * / % ^`, parentheses, numbers with the value's
/// suffixes. The result must be a non-negative whole number.
fn eval(text: &str, unit: Unit) -> Result<u64, String> {
    let tokens = lex(text, unit)?;
    let mut p = ExprParser {
        tokens: &tokens,
        pos: 0,
    };
    let v = p.expr()?;
    if p.pos != tokens.len() {
        return Err(format!("'{text}': unexpected text in the expression"));
    }
    if !v.is_finite() {
        return Err(format!("'{text}': the expression has no finite value"));
    }
    if v < 0.0 {
        return Err(format!(
            "'{text}': must be positive (the expression is {v})"
        ));
    }
    if v > u64::MAX as f64 {
        return Err(format!("'{text}' is too large"));
    }
    Ok(v as u64)
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Tok {
    Num(f64),
    Op(char),
}

fn lex(text: &str, unit: Unit) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let b: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if "+-*/%^()".contains(c) {
            out.push(Tok::Op(c));
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || c == '.' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == '.') {
                i += 1;
            }
            let num: String = b[s..i].iter().collect();
            let ss = i;
            while i < b.len() && b[i].is_ascii_alphabetic() {
                i += 1;
            }
            let suffix: String = b[ss..i].iter().collect();
            let n: f64 = num
                .parse()
                .map_err(|_| format!("'{text}': '{num}' is not a number"))?;
            let mult = match unit {
                Unit::Bytes => size_mult(&suffix).map(|m| m as f64),
                Unit::Time { default_us } => time_mult_us(&suffix, default_us).map(|m| m as f64),
            };
            let Some(mult) = mult else {
                return Err(format!(
                    "'{text}': unknown suffix '{suffix}' in the expression"
                ));
            };
            out.push(Tok::Num(n * mult));
            continue;
        }
        return Err(format!(
            "'{text}': '{c}' is not allowed in an expression (numbers, + - * / % ^ and parentheses)"
        ));
    }
    Ok(out)
}

struct ExprParser<'a> {
    tokens: &'a [Tok],
    pos: usize,
}

impl ExprParser<'_> {
    fn peek(&self) -> Option<Tok> {
        self.tokens.get(self.pos).copied()
    }
    fn expr(&mut self) -> Result<f64, String> {
        let mut v = self.term()?;
        while let Some(Tok::Op(c @ ('+' | '-'))) = self.peek() {
            self.pos += 1;
            let r = self.term()?;
            v = if c == '+' { v + r } else { v - r };
        }
        Ok(v)
    }
    fn term(&mut self) -> Result<f64, String> {
        let mut v = self.power()?;
        while let Some(Tok::Op(c @ ('*' | '/' | '%'))) = self.peek() {
            self.pos += 1;
            let r = self.power()?;
            v = match c {
                '*' => v * r,
                '/' if r == 0.0 => return Err("division by zero in the expression".into()),
                '/' => v / r,
                _ if r == 0.0 => return Err("modulo by zero in the expression".into()),
                _ => v % r,
            };
        }
        Ok(v)
    }
    fn power(&mut self) -> Result<f64, String> {
        let base = self.unary()?;
        if let Some(Tok::Op('^')) = self.peek() {
            self.pos += 1;
            let e = self.power()?;
            return Ok(base.powf(e));
        }
        Ok(base)
    }
    fn unary(&mut self) -> Result<f64, String> {
        match self.peek() {
            Some(Tok::Op('-')) => {
                self.pos += 1;
                Ok(-self.unary()?)
            }
            Some(Tok::Op('+')) => {
                self.pos += 1;
                self.unary()
            }
            Some(Tok::Op('(')) => {
                self.pos += 1;
                let v = self.expr()?;
                if self.peek() != Some(Tok::Op(')')) {
                    return Err("unbalanced parentheses in the expression".into());
                }
                self.pos += 1;
                Ok(v)
            }
            Some(Tok::Num(n)) => {
                self.pos += 1;
                Ok(n)
            }
            _ => Err("incomplete expression".into()),
        }
    }
}

/// fio's `bc_calc`: a value that held `$mb_memory`, `$pagesize` or `$ncpus` and has `+ - * /`
/// (and no `'`) is piped through `bc`, whose result (a whole number: bc's default scale is 0,
/// so every `/` truncates) replaces the value, in the job and in fio's `job options`.
/// `None` when bc would not print a number (a suffix such as `4k`, a division by zero, text).
pub fn bc_calc(value: &str) -> Option<i128> {
    let v = value.trim();
    if !v.contains(['+', '-', '*', '/']) || v.contains('\'') {
        return None;
    }
    let mut b = Bc {
        s: v.as_bytes(),
        pos: 0,
        depth: 0,
    };
    let n = b.sum()?;
    b.skip();
    (b.pos == b.s.len()).then_some(n)
}

/// bc's integer grammar: `+ -` below `* / %` below `^` (right-assoc.) below unary minus.
struct Bc<'a> {
    s: &'a [u8],
    pos: usize,
    /// Nesting so far (parentheses, unary minus, `^`): beyond [`BC_MAX_DEPTH`] the value is
    /// not arithmetic fsdelta evaluates (a job file cannot overflow the stack).
    depth: u32,
}

/// How deep bc expressions may nest here.
const BC_MAX_DEPTH: u32 = 256;

impl Bc<'_> {
    fn skip(&mut self) {
        while self
            .s
            .get(self.pos)
            .is_some_and(|c| c.is_ascii_whitespace())
        {
            self.pos += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.skip();
        self.s.get(self.pos).copied()
    }
    fn sum(&mut self) -> Option<i128> {
        let mut v = self.product()?;
        while let Some(c @ (b'+' | b'-')) = self.peek() {
            self.pos += 1;
            let r = self.product()?;
            v = if c == b'+' {
                v.checked_add(r)?
            } else {
                v.checked_sub(r)?
            };
        }
        Some(v)
    }
    fn product(&mut self) -> Option<i128> {
        let mut v = self.power()?;
        while let Some(c @ (b'*' | b'/' | b'%')) = self.peek() {
            self.pos += 1;
            let r = self.power()?;
            v = match c {
                b'*' => v.checked_mul(r)?,
                b'/' => v.checked_div(r)?,
                _ => v.checked_rem(r)?,
            };
        }
        Some(v)
    }
    fn power(&mut self) -> Option<i128> {
        let base = self.unary()?;
        if self.peek() == Some(b'^') {
            self.pos += 1;
            self.depth += 1;
            if self.depth > BC_MAX_DEPTH {
                return None;
            }
            let e = self.power();
            self.depth -= 1;
            let e = e?;
            return match u32::try_from(e) {
                Ok(e) => base.checked_pow(e),
                // bc: a negative exponent at scale 0 is 0 (1 for a base of 1 or -1).
                Err(_) if e < 0 => Some(match base {
                    1 => 1,
                    -1 if e % 2 == 0 => 1,
                    -1 => -1,
                    _ => 0,
                }),
                Err(_) => None,
            };
        }
        Some(base)
    }
    fn unary(&mut self) -> Option<i128> {
        self.depth += 1;
        if self.depth > BC_MAX_DEPTH {
            return None;
        }
        let v = self.unary_inner();
        self.depth -= 1;
        v
    }
    fn unary_inner(&mut self) -> Option<i128> {
        match self.peek()? {
            b'-' => {
                self.pos += 1;
                self.unary()?.checked_neg()
            }
            b'(' => {
                self.pos += 1;
                let v = self.sum()?;
                (self.peek() == Some(b')')).then(|| self.pos += 1)?;
                Some(v)
            }
            c if c.is_ascii_digit() => {
                let start = self.pos;
                while self.s.get(self.pos).is_some_and(u8::is_ascii_digit) {
                    self.pos += 1;
                }
                std::str::from_utf8(&self.s[start..self.pos])
                    .ok()?
                    .parse()
                    .ok()
            }
            _ => None,
        }
    }
}

/// Whether a value holds fio's arithmetic outside parentheses (`5*1024*64/8`): fio evaluates
/// such a value after substituting `$mb_memory`, `$pagesize` or `$ncpus`.
pub fn wrap_arithmetic(value: &str) -> String {
    let v = value.trim();
    if v.starts_with('(') || !v.contains(['+', '-', '*', '/']) || v.contains('\'') {
        return v.to_string();
    }
    format!("({v})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_follows_precedence_and_suffixes() {
        assert_eq!(parse_number("(1+2*3)").unwrap(), 7);
        assert_eq!(parse_number("((1+2)*3)").unwrap(), 9);
        assert_eq!(parse_number("(2^10)").unwrap(), 1024);
        assert_eq!(parse_number("(10%4)").unwrap(), 2);
        assert_eq!(
            parse_size("(5*1024*64/8)").unwrap(),
            SizeValue::Bytes(Bytes(40960))
        );
        assert_eq!(parse_size("(4k*2)").unwrap(), SizeValue::Bytes(Bytes(8192)));
        assert_eq!(parse_time("(1m+30)").unwrap(), Duration::from_secs(90));
        assert!(
            parse_number("(1-2)")
                .unwrap_err()
                .contains("must be positive")
        );
        assert!(parse_number("(1/0)").is_err());
        assert!(parse_number("(1+)").is_err());
        assert!(parse_number("((1)").is_err());
        assert!(parse_number("(1x)").is_err());
    }

    #[test]
    fn negative_values_must_be_positive() {
        for t in ["-1", "-4k"] {
            assert!(
                parse_size(t).unwrap_err().contains("must be positive"),
                "{t}"
            );
            assert!(
                parse_number(t).unwrap_err().contains("must be positive"),
                "{t}"
            );
        }
        assert!(parse_time("-5").unwrap_err().contains("must be positive"));
    }

    #[test]
    fn numbers_take_hex_and_size_suffixes() {
        assert_eq!(parse_number("0x10").unwrap(), 16);
        assert_eq!(parse_number("2k").unwrap(), 2048);
        assert!(parse_number("two").is_err());
        assert!(parse_number("").is_err());
    }

    #[test]
    fn bc_calc_refuses_nesting_deeper_than_it_evaluates() {
        // A job file cannot overflow the stack: too deep is "not arithmetic", an error later.
        let deep = format!("{}1{}*2", "(".repeat(100_000), ")".repeat(100_000));
        assert_eq!(bc_calc(&deep), None);
        assert_eq!(bc_calc(&format!("{}1*2", "-".repeat(100_000))), None);
        assert_eq!(bc_calc(&format!("2{}*1", "^2".repeat(100_000))), None);
        let fine = format!("{}1{}*2", "(".repeat(100), ")".repeat(100));
        assert_eq!(bc_calc(&fine), Some(2));
    }

    #[test]
    fn bc_calc_is_bcs_integer_arithmetic() {
        assert_eq!(bc_calc("4*1024*2"), Some(8192));
        // scale 0: each division truncates, as bc's.
        assert_eq!(bc_calc("5*1024*3/8"), Some(1920));
        assert_eq!(bc_calc("7/2*2"), Some(6));
        assert_eq!(bc_calc("2^3^2+0"), Some(512));
        assert_eq!(bc_calc("(1+2)*3 - 10 % 4"), Some(7));
        assert_eq!(bc_calc("2-5"), Some(-3));
        // Not bc's: suffixes, division by zero, no arithmetic, quotes.
        assert_eq!(bc_calc("4k*2"), None);
        assert_eq!(bc_calc("4/0"), None);
        assert_eq!(bc_calc("4096"), None);
        assert_eq!(bc_calc("'1+1'"), None);
        assert_eq!(bc_calc("(1+2"), None);
    }

    #[test]
    fn bare_arithmetic_is_wrapped() {
        assert_eq!(wrap_arithmetic("5*1024*64/8"), "(5*1024*64/8)");
        assert_eq!(wrap_arithmetic("4k"), "4k");
        assert_eq!(wrap_arithmetic("(1+1)"), "(1+1)");
    }
}
