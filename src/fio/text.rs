//! fio's text helpers that both the engine (its ETA line, its error lines) and the output formats
//! print with: `num2str` (fio's number shortening) and the errno text fio prints.
//!
//! Why it exists: the engine and the output formats both need them; living here, neither imports
//! the other for them (the output formats read the engine's results, never the reverse). What it
//! must never do: know a job, a result or an output format; pure functions of numbers only.

/// fio's num2str: `num` shortened to at most `maxlen` digits with a k/M/G (or Ki/Mi/Gi) prefix.
pub fn num2str(num: u64, maxlen: usize, pow2: bool, unit: &str) -> String {
    let si = ["", "k", "M", "G", "T", "P", "E"];
    let iec = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let prefix = if pow2 { iec } else { si };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let mut num = num;
    let mut post = 0usize;
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post < prefix.len() {
        if num.to_string().len() <= maxlen {
            break;
        }
        let m = num % thousand;
        modulo = Some(m);
        num /= thousand;
        carry = m >= thousand / 2;
        post += 1;
    }
    if post >= prefix.len() {
        post = 0;
    }
    let Some(m) = modulo else {
        return format!("{num}{}{unit}", prefix[post]);
    };
    let digits = num.to_string().len();
    if maxlen as i64 - digits as i64 <= 1 {
        if carry {
            num += 1;
        }
        return format!("{num}{}{unit}", prefix[post]);
    }
    let decimals = maxlen - digits - 1;
    let frac = format!("{:.*}", decimals, m as f64 / thousand as f64);
    if frac.starts_with('1') {
        num += 1;
    }
    format!("{num}.{}{}{unit}", &frac[2..], prefix[post])
}

/// strerror's text of the errnos a job may end with, as fio prints them.
pub fn errno_text(errno: i32) -> String {
    std::io::Error::from_raw_os_error(errno)
        .to_string()
        .split(" (os error")
        .next()
        .unwrap_or("")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num2str_matches_fio_examples() {
        // From fio 3.33's output of tests/data/fio/randrw.normal.txt.
        assert_eq!(num2str(128_000, 4, false, ""), "128k");
        assert_eq!(num2str(524_288_000, 4, true, "B/s"), "500MiB/s");
        assert_eq!(num2str(524_288_000, 4, false, "B/s"), "524MB/s");
        assert_eq!(num2str(4 << 20, 4, true, "B"), "4096KiB");
        assert_eq!(num2str(4_194_304, 4, false, "B"), "4194kB");
        assert_eq!(num2str(2856 * 1024, 4, true, "B"), "2856KiB");
        assert_eq!(num2str(1072, 6, false, ""), "1072");
        assert_eq!(num2str(85_333, 4, false, ""), "85.3k");
    }
}
