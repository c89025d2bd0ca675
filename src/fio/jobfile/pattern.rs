//! fio's pattern syntax (lib/pattern.c), as `verify_pattern=` takes it: a sequence of
//! `0x` hex numbers (bytes in the order written), decimal numbers (little-endian, as few bytes
//! as the value needs), `"strings"` and the `%o` format (the I/O's offset, 8 bytes
//! little-endian, pasted in when a block is filled).
//!
//! Why it exists: the pattern decides the bytes a verify job writes and expects, so it must
//! read a pattern exactly as fio does. What it must never do: accept text fio rejects
//! (a file pattern `'name'` is not supported and is an error), or exceed fio's 512 bytes.

/// fio's MAX_PATTERN_SIZE.
pub const MAX_PATTERN: usize = 512;

/// A parsed pattern: its bytes (zeros where a `%o` goes) and where each `%o` starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    /// The pattern's bytes, one repetition.
    pub bytes: Vec<u8>,
    /// Byte positions of `%o` formats (8 bytes each, cut at the pattern's end).
    pub offsets_at: Vec<usize>,
}

impl Pattern {
    /// Byte `pos` of a buffer filled with the pattern, `%o` being `offset` (fio pastes the
    /// formats into the first copy and spreads that copy over the buffer).
    #[inline]
    pub fn byte_at(&self, pos: usize, offset: u64) -> u8 {
        let i = pos % self.bytes.len();
        for &at in &self.offsets_at {
            if i >= at && i < at + 8 {
                return offset.to_le_bytes()[i - at];
            }
        }
        self.bytes[i]
    }

    /// Fill `buf` with the pattern, `%o` being `offset` (fio's paste_format).
    pub fn fill(&self, buf: &mut [u8], offset: u64) {
        let n = self.bytes.len();
        if self.offsets_at.is_empty() {
            for c in buf.chunks_mut(n) {
                c.copy_from_slice(&self.bytes[..c.len()]);
            }
            return;
        }
        for (i, b) in buf.iter_mut().enumerate() {
            *b = self.byte_at(i, offset);
        }
    }

    /// The pattern with every `%o` replaced by `offset` (fio's paste_format_inplace).
    pub fn with_offset(&self, offset: u64) -> Vec<u8> {
        let mut p = self.bytes.clone();
        for &at in &self.offsets_at {
            let n = (p.len() - at).min(8);
            p[at..at + n].copy_from_slice(&offset.to_le_bytes()[..n]);
        }
        p
    }
}

/// Parse `text` as fio's parse_and_fill_pattern; the error says what is wrong.
pub fn parse(text: &str) -> Result<Pattern, String> {
    let mut out: Vec<u8> = Vec::new();
    let mut offsets_at = Vec::new();
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err("an empty pattern".into());
    }
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('"') {
            let end = r.find('"').ok_or("a string without its closing quote")?;
            out.extend_from_slice(&r.as_bytes()[..end]);
            rest = &r[end + 1..];
        } else if rest.starts_with('\'') {
            return Err("a file pattern ('name') is not supported; write the bytes".into());
        } else if let Some(r) = rest.strip_prefix("%o") {
            offsets_at.push(out.len());
            out.extend_from_slice(&[0; 8]);
            rest = r;
        } else if rest.starts_with('%') {
            return Err(format!("unknown format in '{rest}' (only %o is known)"));
        } else if rest.len() > 2
            && (rest.starts_with("0x") || rest.starts_with("0X"))
            && rest.as_bytes()[2].is_ascii_hexdigit()
        {
            let digits = &rest[2..];
            let mut n = digits
                .find(|c: char| !c.is_ascii_hexdigit())
                .unwrap_or(digits.len());
            // "0xff0x14": the 0 of the next 0x is not a digit of this number.
            if n < digits.len() && n > 0 && digits[n - 1..].to_ascii_lowercase().starts_with("0x") {
                n -= 1;
            }
            let d = &digits[..n];
            // An odd count: the first digit is a byte of its own, as fio's %1hhx.
            let (first, pairs) = if d.len() % 2 == 1 {
                (Some(&d[..1]), &d[1..])
            } else {
                (None, d)
            };
            if let Some(f) = first {
                out.push(u8::from_str_radix(f, 16).map_err(|e| e.to_string())?);
            }
            for i in (0..pairs.len()).step_by(2) {
                out.push(u8::from_str_radix(&pairs[i..i + 2], 16).map_err(|e| e.to_string())?);
            }
            rest = &digits[n..];
        } else {
            // Decimal, up to the next "0x" or the first non-digit.
            let limit = rest.to_ascii_lowercase().find("0x").unwrap_or(rest.len());
            let s = &rest[..limit];
            let sign = usize::from(s.starts_with('-') || s.starts_with('+'));
            let end = sign
                + s[sign..]
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(s.len() - sign);
            if end == sign {
                return Err(format!("'{rest}' is not a number, \"string\" or %o"));
            }
            let v: i64 = s[..end]
                .parse()
                .map_err(|e| format!("'{}': {e}", &s[..end]))?;
            if v > i32::MAX as i64 || v < i32::MIN as i64 {
                return Err(format!("{v} does not fit in 32 bits"));
            }
            let mut u = v as i32 as u32;
            if u == 0 {
                out.push(0);
            }
            while u != 0 {
                out.push(u as u8);
                u >>= 8;
            }
            rest = &rest[end..];
        }
        if out.len() > MAX_PATTERN {
            return Err(format!("longer than fio's {MAX_PATTERN} bytes"));
        }
    }
    Ok(Pattern {
        bytes: out,
        offsets_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_numbers_keep_their_byte_order() {
        assert_eq!(
            parse("0xaa555aa5").unwrap().bytes,
            vec![0xaa, 0x55, 0x5a, 0xa5]
        );
        assert_eq!(parse("0xabc").unwrap().bytes, vec![0x0a, 0xbc]);
        assert_eq!(parse("0xff0x14").unwrap().bytes, vec![0xff, 0x14]);
    }

    #[test]
    fn decimals_are_little_endian_and_strings_verbatim() {
        assert_eq!(parse("258").unwrap().bytes, vec![2, 1]);
        assert_eq!(parse("0").unwrap().bytes, vec![0]);
        assert_eq!(parse("-1").unwrap().bytes, vec![0xff; 4]);
        assert_eq!(
            parse("\"abc\"0x01").unwrap().bytes,
            vec![b'a', b'b', b'c', 1]
        );
    }

    #[test]
    fn offset_format_is_pasted_little_endian() {
        let p = parse("0xff%o\"z\"").unwrap();
        assert_eq!(p.bytes.len(), 10);
        assert_eq!(p.offsets_at, vec![1]);
        let w = p.with_offset(0x0102);
        assert_eq!(&w[..4], &[0xff, 0x02, 0x01, 0]);
        assert_eq!(w[9], b'z');
        let mut buf = [0u8; 25];
        p.fill(&mut buf, 0x0102);
        assert_eq!(&buf[10..14], &[0xff, 0x02, 0x01, 0]);
        assert!((0..25).all(|i| buf[i] == p.byte_at(i, 0x0102) && buf[i] == w[i % 10]));
    }

    #[test]
    fn bad_patterns_are_errors() {
        assert!(parse("").is_err());
        assert!(parse("\"open").is_err());
        assert!(parse("'file'").is_err());
        assert!(parse("%q").is_err());
        assert!(parse("zz").is_err());
        assert!(parse("99999999999").is_err());
    }
}
