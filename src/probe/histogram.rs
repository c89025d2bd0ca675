//! A latency histogram with fio's log-linear bucket layout and fio's percentile rule.
//!
//! Why fio's layout: so that our p99 and fio's p99 of the same latencies are the same number.
//! Layout (fio `stat.h`, `FIO_IO_U_PLAT_BITS = 6`, 29 groups): values below 128 are kept exactly;
//! above, a value `v` with `msb = floor(log2 v)` goes to bucket
//! `(msb - 6 + 1) * 64 + ((v >> (msb - 6)) & 63)`. Each bucket reports its midpoint, so a
//! percentile is off by at most 1/128 (0.78 %) of the true value. A percentile `p` is the first
//! bucket whose cumulative count reaches `p / 100 * N`, without interpolation.
//!
//! `record` must stay allocation-free and branch-light: it runs in workloads' hot loops. Each
//! worker owns its histogram; merge them after the timed section.

use crate::model::{HistogramRecord, Unit};

/// Bits of linear resolution per group.
const PLAT_BITS: u32 = 6;
/// Buckets per group.
const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// Groups.
const PLAT_GROUP_NR: usize = 29;
/// Total buckets.
pub const PLAT_NR: usize = PLAT_GROUP_NR * PLAT_VAL as usize;
/// Layout name stored with a histogram.
pub const LAYOUT: &str = "fio-loglinear-6x29";

/// fio's default percentile list.
pub const FIO_DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// Bucket index of a value (fio's `plat_val_to_idx`).
#[inline]
pub fn value_to_index(v: u64) -> usize {
    let msb = if v == 0 { 0 } else { 63 - v.leading_zeros() };
    if msb <= PLAT_BITS {
        return v as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) as u64) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (v >> error_bits);
    let idx = (base + offset) as usize;
    idx.min(PLAT_NR - 1)
}

/// Value a bucket stands for (fio's `plat_idx_to_val`): the midpoint of its range.
pub fn index_to_value(idx: usize) -> u64 {
    let idx = idx as u64;
    if idx < (PLAT_VAL << 1) {
        return idx;
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + PLAT_BITS as u64);
    let k = idx % PLAT_VAL;
    // base + (k + 0.5) * 2^error_bits, in integers as fio's double arithmetic truncates.
    base + ((2 * k + 1) << error_bits) / 2
}

/// A histogram of u64 values (nanoseconds for latencies) with exact count, min, max, sum and
/// sum of squares beside the buckets.
#[derive(Clone)]
pub struct Histogram {
    buckets: Box<[u64; PLAT_NR]>,
    count: u64,
    min: u64,
    max: u64,
    sum: u128,
    sum_sq: f64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count)
            .field("min", &self.min)
            .field("max", &self.max)
            .finish()
    }
}

impl Histogram {
    /// An empty histogram (allocates its buckets once, here).
    pub fn new() -> Self {
        Histogram {
            buckets: Box::new([0; PLAT_NR]),
            count: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            sum_sq: 0.0,
        }
    }

    /// Record one value. No allocation.
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.buckets[value_to_index(v)] += 1;
        self.count += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += v as u128;
        let f = v as f64;
        self.sum_sq += f * f;
    }

    /// Add every value of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *a += *b;
        }
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
    }

    /// Number of values.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Smallest value, or 0 when empty.
    pub fn min(&self) -> u64 {
        if self.count == 0 { 0 } else { self.min }
    }

    /// Largest value, or 0 when empty.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Exact sum of values.
    pub fn sum(&self) -> u128 {
        self.sum
    }

    /// Exact mean, or 0 when empty.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// Sample standard deviation (n - 1), as fio reports it; 0 with fewer than two values.
    pub fn stddev(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        let n = self.count as f64;
        let mean = self.mean();
        let var = (self.sum_sq - n * mean * mean) / (n - 1.0);
        var.max(0.0).sqrt()
    }

    /// Percentile `p` (0 < p <= 100) by fio's rule: the midpoint of the first bucket whose
    /// cumulative count reaches `p / 100 * N`. None when empty.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        self.percentiles(&[p]).into_iter().next().flatten()
    }

    /// The non-empty buckets as (the value a bucket stands for, count), ascending: fio's json+
    /// `bins`.
    pub fn bins(&self) -> Vec<(u64, u64)> {
        self.buckets
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (index_to_value(i), *c))
            .collect()
    }

    /// Several percentiles at once; `ps` must be ascending (as fio requires of percentile_list).
    pub fn percentiles(&self, ps: &[f64]) -> Vec<Option<u64>> {
        let mut out = vec![None; ps.len()];
        if self.count == 0 {
            return out;
        }
        let n = self.count as f64;
        let mut j = 0;
        let mut cum: u64 = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            if c == 0 {
                continue;
            }
            cum += c;
            while j < ps.len() && cum as f64 >= ps[j] / 100.0 * n {
                out[j] = Some(index_to_value(i));
                j += 1;
            }
            if j == ps.len() {
                break;
            }
        }
        out
    }

    /// The record kept in the store.
    pub fn to_record(&self, name: &str, unit: Unit) -> HistogramRecord {
        HistogramRecord {
            name: name.to_string(),
            unit,
            layout: LAYOUT.to_string(),
            count: self.count,
            min: self.min(),
            max: self.max,
            sum: self.sum,
            buckets: self
                .buckets
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(i, c)| (i as u32, *c))
                .collect(),
        }
    }

    /// Rebuild from a stored record (sum of squares is not stored; stddev of a rebuilt
    /// histogram is estimated from bucket midpoints).
    pub fn from_record(rec: &HistogramRecord) -> Result<Histogram, String> {
        if rec.layout != LAYOUT {
            return Err(format!(
                "histogram '{}' has layout '{}', this fsdelta reads '{}'",
                rec.name, rec.layout, LAYOUT
            ));
        }
        let mut h = Histogram::new();
        for &(i, c) in &rec.buckets {
            let i = i as usize;
            if i >= PLAT_NR {
                return Err(format!(
                    "histogram '{}' has bucket {} out of range",
                    rec.name, i
                ));
            }
            h.buckets[i] += c;
            let v = index_to_value(i) as f64;
            h.sum_sq += v * v * c as f64;
        }
        h.count = rec.count;
        h.min = if rec.count == 0 { u64::MAX } else { rec.min };
        h.max = rec.max;
        h.sum = rec.sum;
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio 3.33's json+ bins of a 4k write job (keys 2544, 2576, 4192, 76288, 140288 printed by
    /// fio): the values recorded land on those keys, ascending, with their counts.
    #[test]
    fn bins_are_fios_json_plus_keys() {
        let mut h = Histogram::new();
        for v in [140_000, 2_550, 2_560, 4_200, 76_000, 2_575] {
            h.record(v);
        }
        assert_eq!(
            h.bins(),
            vec![(2544, 1), (2576, 2), (4192, 1), (76288, 1), (140288, 1)]
        );
    }

    #[test]
    fn small_values_are_exact() {
        for v in 0..128u64 {
            assert_eq!(value_to_index(v), v as usize);
            assert_eq!(index_to_value(v as usize), v);
        }
    }

    #[test]
    fn bucket_midpoints_match_fio() {
        // fio: msb(1000)=9, error_bits=3, base=(4)<<6=256, offset=(1000>>3)&63=125&63=61 -> 317
        assert_eq!(value_to_index(1000), 317);
        // idx 317: error_bits = (317>>6)-1 = 3, base = 1<<9 = 512, k = 61 -> 512 + 61.5*8 = 1004
        assert_eq!(index_to_value(317), 1004);
        // bucket 128 holds 128 and 129 and reports 129, as fio does
        assert_eq!(value_to_index(128), 128);
        assert_eq!(value_to_index(129), 128);
        assert_eq!(index_to_value(128), 129);
    }

    #[test]
    fn relative_error_is_bounded() {
        // The last group starts at 2^33 ns (8.6 s); beyond 2^34 values saturate, as in fio.
        let mut v = 128u64;
        while v < 1u64 << 34 {
            let mid = index_to_value(value_to_index(v));
            let err = (mid as f64 - v as f64).abs() / v as f64;
            assert!(err <= 1.0 / 128.0 + 1e-12, "v={v} mid={mid} err={err}");
            v = v * 17 / 16 + 1;
        }
    }

    #[test]
    fn huge_values_saturate_into_the_last_bucket() {
        assert_eq!(value_to_index(u64::MAX), PLAT_NR - 1);
    }

    #[test]
    fn percentiles_follow_fios_rule() {
        let mut h = Histogram::new();
        for v in 1..=100u64 {
            h.record(v);
        }
        assert_eq!(h.percentile(50.0), Some(50));
        assert_eq!(h.percentile(99.0), Some(99));
        assert_eq!(h.percentile(100.0), Some(100));
        assert_eq!(h.percentile(1.0), Some(1));
        assert_eq!(h.count(), 100);
        assert_eq!(h.min(), 1);
        assert_eq!(h.max(), 100);
        assert!((h.mean() - 50.5).abs() < 1e-9);
        // sample stddev of 1..=100
        assert!((h.stddev() - 29.011491975882016).abs() < 1e-9);
        assert_eq!(Histogram::new().percentile(50.0), None);
    }

    #[test]
    fn merge_and_record_round_trip() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        for v in [10u64, 2000, 300_000] {
            a.record(v);
        }
        for v in [5u64, 7_000_000] {
            b.record(v);
        }
        a.merge(&b);
        assert_eq!(a.count(), 5);
        assert_eq!(a.min(), 5);
        assert_eq!(a.max(), 7_000_000);
        let rec = a.to_record("x_ns", Unit::Nanoseconds);
        assert_eq!(rec.buckets.len(), 5);
        let back = Histogram::from_record(&rec).unwrap();
        assert_eq!(back.count(), 5);
        assert_eq!(
            back.percentiles(&[50.0, 99.0]),
            a.percentiles(&[50.0, 99.0])
        );
    }
}
