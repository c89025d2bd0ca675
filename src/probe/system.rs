//! CPU and memory counters around a sample, always on: system-wide CPU time by state from
//! /proc/stat, this process's CPU time, context switches and faults from getrusage(RUSAGE_SELF)
//! (the native engines run as threads of this process), and page-in/out and fault counts from
//! /proc/vmstat, and the peaks of dirty and writeback memory seen in /proc/meminfo while the
//! sample runs. Each becomes a neutral metric: shown beside the workload's numbers, not judged.
//! Other processes' CPU share (`bg_cpu_pct`) is the machine's busy time less this process's
//! tree, its kernel threads (writeback, filesystem workers, compression: the workload's) and
//! interrupt time; the I/O of others and page-cache drops come from
//! [`crate::probe::disturbance`].
//!
//! Why: a slower run with more system time points at the kernel; one with more idle and iowait
//! points at the device. Must never fail a sample: a counter that cannot be read is left out.

use crate::model::{Direction, Metric, MetricKind, Unit};
use crate::probe::disturbance::Scan;
use std::fs;

/// Jiffies per state, summed over CPUs (the `cpu` line of /proc/stat).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// user + nice
    pub user: u64,
    /// system
    pub system: u64,
    /// idle
    pub idle: u64,
    /// iowait
    pub iowait: u64,
    /// irq
    pub irq: u64,
    /// softirq
    pub softirq: u64,
    /// steal + guest time not counted above
    pub other: u64,
}

impl CpuTimes {
    fn total(&self) -> u64 {
        self.user + self.system + self.idle + self.iowait + self.irq + self.softirq + self.other
    }
}

/// Parse the aggregate `cpu` line of /proc/stat.
pub fn parse_proc_stat(text: &str) -> Option<CpuTimes> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<Vec<u64>>>()?;
    if v.len() < 7 {
        return None;
    }
    // user nice system idle iowait irq softirq [steal guest guest_nice]; guest time is already
    // included in user, so only steal is added to `other`.
    Some(CpuTimes {
        user: v[0] + v[1],
        system: v[2],
        idle: v[3],
        iowait: v[4],
        irq: v[5],
        softirq: v[6],
        other: v.get(7).copied().unwrap_or(0),
    })
}

/// The /proc/vmstat counters we keep.
const VMSTAT_KEYS: [&str; 4] = ["pgpgin", "pgpgout", "pgfault", "pgmajfault"];

/// Parse the kept counters of /proc/vmstat, in [`VMSTAT_KEYS`] order.
pub fn parse_vmstat(text: &str) -> [Option<u64>; 4] {
    let mut out = [None; 4];
    for line in text.lines() {
        let mut f = line.split_whitespace();
        if let (Some(k), Some(v)) = (f.next(), f.next())
            && let Some(i) = VMSTAT_KEYS.iter().position(|x| *x == k)
        {
            out[i] = v.parse().ok();
        }
    }
    out
}

#[derive(Clone, Copy, Debug, Default)]
struct Rusage {
    user_us: u64,
    system_us: u64,
    nvcsw: u64,
    nivcsw: u64,
    minflt: u64,
    majflt: u64,
}

fn rusage_self() -> Option<Rusage> {
    rusage(libc::RUSAGE_SELF)
}

fn rusage(who: libc::c_int) -> Option<Rusage> {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a full rusage into the pointer on success.
    let rc = unsafe { libc::getrusage(who, ru.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: rc == 0 means the struct was filled.
    let ru = unsafe { ru.assume_init() };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Some(Rusage {
        user_us: us(ru.ru_utime),
        system_us: us(ru.ru_stime),
        nvcsw: ru.ru_nvcsw as u64,
        nivcsw: ru.ru_nivcsw as u64,
        minflt: ru.ru_minflt as u64,
        majflt: ru.ru_majflt as u64,
    })
}

/// The 1-minute load average, the first field of /proc/loadavg.
pub fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

/// `wchar` of /proc/self/io: bytes this process (every thread, and every child it has waited
/// for) passed to write-like system calls.
pub fn parse_wchar(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("wchar:"))
        .and_then(|v| v.trim().parse().ok())
}

/// A neutral metric (shown, never judged); a percentage is a share.
fn neutral(name: &str, value: f64, unit: Unit) -> Metric {
    let m = Metric::new(name, value, unit, Direction::Neutral);
    if unit == Unit::Percent {
        m.kind(MetricKind::Share)
    } else {
        m
    }
}

/// Counters read at the start of a sample.
#[derive(Clone, Debug)]
pub struct Snapshot {
    cpu: Option<CpuTimes>,
    rusage: Option<Rusage>,
    children: Option<Rusage>,
    vm: [Option<u64>; 4],
    loadavg_1m: Option<f64>,
    wchar: Option<u64>,
    /// Processes, kernel threads and the disturbance counters.
    scan: Scan,
}

/// The share of every CPU that other processes used, in percent: busy time of the whole
/// machine (/proc/stat, every state but idle, iowait, irq and softirq, `busy_ticks` of
/// `total_ticks` at `hz` ticks a second) minus this process's own CPU time, its waited-for
/// children's and the kernel threads' (`own_s`). Clamped at 0 (the two clocks tick at different granularity).
pub fn background_cpu_pct(busy_ticks: u64, total_ticks: u64, hz: f64, own_s: f64) -> Option<f64> {
    if total_ticks == 0 || hz <= 0.0 {
        return None;
    }
    let total_s = total_ticks as f64 / hz;
    let busy_s = busy_ticks as f64 / hz;
    Some((100.0 * (busy_s - own_s) / total_s).clamp(0.0, 100.0))
}

impl Snapshot {
    /// Read every counter now.
    pub fn take() -> Snapshot {
        Snapshot {
            cpu: fs::read_to_string("/proc/stat")
                .ok()
                .and_then(|t| parse_proc_stat(&t)),
            rusage: rusage_self(),
            children: rusage(libc::RUSAGE_CHILDREN),
            vm: fs::read_to_string("/proc/vmstat")
                .map(|t| parse_vmstat(&t))
                .unwrap_or([None; 4]),
            loadavg_1m: fs::read_to_string("/proc/loadavg")
                .ok()
                .and_then(|t| parse_loadavg(&t)),
            wchar: fs::read_to_string("/proc/self/io")
                .ok()
                .and_then(|t| parse_wchar(&t)),
            scan: Scan::take(),
        }
    }

    /// The processes, kernel threads and disturbance counters read with the rest (for
    /// [`crate::probe::disturbance::DeviceProbe::start_from`], so /proc is walked once).
    pub fn scan(&self) -> &Scan {
        &self.scan
    }

    /// The storage bytes of each other process between `self` and `end`, heaviest first (see
    /// [`Scan::others_io`]).
    pub fn others_io(&self, end: &Snapshot) -> Vec<(String, u64)> {
        self.scan.others_io(&end.scan)
    }

    /// Bytes this process and its waited-for children wrote with write-like system calls
    /// between `self` and `end`: the logical bytes of a workload that does not count its own.
    pub fn written_since(&self, end: &Snapshot) -> Option<u64> {
        Some(end.wchar?.saturating_sub(self.wchar?))
    }

    /// Metrics for what happened between `self` and now.
    pub fn metrics_since(&self) -> Vec<Metric> {
        self.delta(&Snapshot::take())
    }

    /// Metrics for what happened between `self` and `end`.
    pub fn delta(&self, end: &Snapshot) -> Vec<Metric> {
        let mut out = Vec::new();
        // SAFETY: sysconf has no memory effects.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        if let (Some(a), Some(b)) = (self.cpu, end.cpu) {
            let total = b.total().saturating_sub(a.total());
            if total > 0 {
                let pct = |x: u64, y: u64| 100.0 * y.saturating_sub(x) as f64 / total as f64;
                for (name, x, y) in [
                    ("sys_user_pct", a.user, b.user),
                    ("sys_system_pct", a.system, b.system),
                    ("sys_iowait_pct", a.iowait, b.iowait),
                    ("sys_irq_pct", a.irq, b.irq),
                    ("sys_softirq_pct", a.softirq, b.softirq),
                    ("sys_idle_pct", a.idle, b.idle),
                ] {
                    out.push(neutral(name, pct(x, y), Unit::Percent));
                }
                // Interrupt time is not any process's: mostly the workload's I/O completions.
                let busy = |c: &CpuTimes| c.total() - c.idle - c.iowait - c.irq - c.softirq;
                let own = |s: &Snapshot| {
                    s.rusage.zip(s.children).map(|(r, c)| {
                        (r.user_us + r.system_us + c.user_us + c.system_us) as f64 / 1e6
                    })
                };
                // Kernel threads (writeback, kworkers, filesystem workers, compression, jbd2,
                // loop) work for the workload: counted as its own, not as other processes'.
                let kthreads = self.scan.kthread_ticks(&end.scan) as f64 / hz;
                if let (Some(o0), Some(o1)) = (own(self), own(end))
                    && let Some(bg) = background_cpu_pct(
                        busy(&b).saturating_sub(busy(&a)),
                        total,
                        hz,
                        o1 - o0 + kthreads,
                    )
                {
                    out.push(neutral("bg_cpu_pct", bg, Unit::Percent));
                }
            }
        }
        out.extend(self.scan.metrics(&end.scan, hz));
        if let Some(l) = self.loadavg_1m {
            out.push(neutral("loadavg_1m_start", l, Unit::Ratio).kind(MetricKind::Share));
        }
        if let (Some(a), Some(b)) = (self.rusage, end.rusage) {
            let d = |x: u64, y: u64| y.saturating_sub(x) as f64;
            for (name, x, y) in [
                ("proc_user_s", a.user_us, b.user_us),
                ("proc_system_s", a.system_us, b.system_us),
            ] {
                out.push(neutral(name, d(x, y) / 1e6, Unit::Seconds));
            }
            for (name, x, y) in [
                ("proc_ctx_voluntary", a.nvcsw, b.nvcsw),
                ("proc_ctx_involuntary", a.nivcsw, b.nivcsw),
                ("proc_minor_faults", a.minflt, b.minflt),
                ("proc_major_faults", a.majflt, b.majflt),
            ] {
                out.push(neutral(name, d(x, y), Unit::Count));
            }
        }
        for (i, key) in VMSTAT_KEYS.iter().enumerate() {
            if let (Some(a), Some(b)) = (self.vm[i], end.vm[i]) {
                out.push(neutral(
                    &format!("vm_{key}"),
                    b.saturating_sub(a) as f64,
                    Unit::Count,
                ));
            }
        }
        out
    }
}

/// The host's side of a guest's boot (issue 36): what the whole machine did while a QEMU guest
/// ran its samples, from two [`Snapshot`]s taken by the host around the boot (qemu started and
/// reaped between them). Each metric is neutral and named `host_*` or `vm_qemu_*`:
/// - `host_bg_cpu_pct`: the share of every host CPU that processes other than fsdelta and qemu
///   used (the load a guest's own `bg_cpu_pct` cannot see);
/// - `host_busy_pct`, `host_iowait_pct`: the host's busy and iowait share;
/// - `host_loadavg_1m_start`, `host_loadavg_1m_end`: the host's load average;
/// - `host_pgpgin`, `host_pgpgout`: KiB the host paged in and out (the guest's disk images
///   included);
/// - `vm_qemu_cpu_s`: the CPU time qemu used (the emulation's cost), and
///   `vm_qemu_cpu_per_s`, that time per second of the boot (how many host CPUs it kept busy).
pub fn host_context(start: &Snapshot, end: &Snapshot, wall_s: f64) -> Vec<Metric> {
    let mut out = Vec::new();
    for m in start.delta(end) {
        let name = match m.name.as_str() {
            "bg_cpu_pct" => "host_bg_cpu_pct",
            "sys_iowait_pct" => "host_iowait_pct",
            "vm_pgpgin" => "host_pgpgin",
            "vm_pgpgout" => "host_pgpgout",
            _ => continue,
        };
        out.push(neutral(name, m.value, m.unit));
    }
    if let (Some(a), Some(b)) = (start.cpu, end.cpu) {
        let total = b.total().saturating_sub(a.total());
        let busy = |c: &CpuTimes| c.total() - c.idle - c.iowait;
        if total > 0 {
            out.push(neutral(
                "host_busy_pct",
                100.0 * busy(&b).saturating_sub(busy(&a)) as f64 / total as f64,
                Unit::Percent,
            ));
        }
    }
    for (name, l) in [
        ("host_loadavg_1m_start", start.loadavg_1m),
        ("host_loadavg_1m_end", end.loadavg_1m),
    ] {
        if let Some(l) = l {
            out.push(neutral(name, l, Unit::Ratio).kind(MetricKind::Share));
        }
    }
    if let (Some(a), Some(b)) = (start.children, end.children) {
        let cpu = (b.user_us + b.system_us).saturating_sub(a.user_us + a.system_us) as f64 / 1e6;
        out.push(neutral("vm_qemu_cpu_s", cpu, Unit::Seconds));
        if wall_s > 0.0 {
            out.push(neutral("vm_qemu_cpu_per_s", cpu / wall_s, Unit::Ratio));
        }
    }
    out
}

/// Parse `Dirty:` and `Writeback:` of /proc/meminfo, in KiB.
pub fn parse_dirty_writeback(meminfo: &str) -> Option<(u64, u64)> {
    let get = |key: &str| {
        meminfo
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    Some((get("Dirty:")?, get("Writeback:")?))
}

/// The peaks of dirty and writeback page-cache memory while a sample runs, read from
/// /proc/meminfo every 100 ms by a sampling thread (about 20 us of CPU a read, so it is cheap
/// and off the workload's threads). Peaks shorter than the interval can be missed; the metrics
/// say "peak seen", not "peak".
pub struct PeakSampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: Option<std::thread::JoinHandle<Option<(u64, u64)>>>,
}

impl PeakSampler {
    /// Start sampling.
    pub fn start() -> PeakSampler {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("fsdelta-meminfo".into())
            .spawn(move || {
                let mut peak: Option<(u64, u64)> = None;
                loop {
                    if let Some((d, w)) = fs::read_to_string("/proc/meminfo")
                        .ok()
                        .and_then(|t| parse_dirty_writeback(&t))
                    {
                        let p = peak.get_or_insert((d, w));
                        p.0 = p.0.max(d);
                        p.1 = p.1.max(w);
                    }
                    if flag.load(Ordering::Relaxed) {
                        return peak;
                    }
                    std::thread::park_timeout(std::time::Duration::from_millis(100));
                }
            })
            .ok();
        PeakSampler { stop, handle }
    }

    /// Stop and return `dirty_peak_kib` and `writeback_peak_kib` (neutral).
    pub fn finish(mut self) -> Vec<Metric> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let Some(h) = self.handle.take() else {
            return Vec::new();
        };
        h.thread().unpark();
        match h.join() {
            Ok(Some((d, w))) => vec![
                Metric::new("dirty_peak_kib", d as f64, Unit::KiB, Direction::Neutral),
                Metric::new(
                    "writeback_peak_kib",
                    w as f64,
                    Unit::KiB,
                    Direction::Neutral,
                ),
            ],
            _ => Vec::new(),
        }
    }
}

impl Drop for PeakSampler {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_loadavg_and_wchar_as_the_kernel_prints_them() {
        assert_eq!(parse_loadavg("0.52 0.58 0.59 1/473 12345\n"), Some(0.52));
        assert_eq!(parse_loadavg(""), None);
        let io = "rchar: 323934931\nwchar: 323929600\nsyscr: 632687\nsyscw: 632675\n\
                  read_bytes: 0\nwrite_bytes: 323932160\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_wchar(io), Some(323929600));
        assert_eq!(parse_wchar("rchar: 1\n"), None);
    }

    #[test]
    fn a_guests_host_context_counts_qemu_as_the_emulation_not_as_background() {
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
        let ru = |cpu_us: u64| Rusage {
            user_us: cpu_us,
            system_us: 0,
            nvcsw: 0,
            nivcsw: 0,
            minflt: 0,
            majflt: 0,
        };
        let snap = |busy: u64, idle: u64, load: f64, own_us: u64, qemu_us: u64| Snapshot {
            cpu: Some(CpuTimes {
                user: busy,
                idle,
                ..Default::default()
            }),
            rusage: Some(ru(own_us)),
            children: Some(ru(qemu_us)),
            vm: [Some(0), Some(0), Some(0), Some(0)],
            loadavg_1m: Some(load),
            wchar: None,
            scan: Scan::default(),
        };
        // 2 CPUs for 10 s: 20 s of CPU, 15 s busy; fsdelta 1 s, qemu 9 s: others 5 s = 25 %.
        let a = snap(0, 0, 3.5, 0, 0);
        let b = snap(15 * hz, 5 * hz, 7.25, 1_000_000, 9_000_000);
        let m = host_context(&a, &b, 10.0);
        let v = |n: &str| m.iter().find(|x| x.name == n).map(|x| x.value);
        assert_eq!(v("host_bg_cpu_pct"), Some(25.0));
        assert_eq!(v("host_busy_pct"), Some(75.0));
        assert_eq!(v("host_loadavg_1m_start"), Some(3.5));
        assert_eq!(v("host_loadavg_1m_end"), Some(7.25));
        assert_eq!(v("vm_qemu_cpu_s"), Some(9.0));
        assert_eq!(v("vm_qemu_cpu_per_s"), Some(0.9));
        assert!(m.iter().all(|x| x.direction == Direction::Neutral));
    }

    #[test]
    fn background_cpu_is_the_machine_busy_time_less_our_own() {
        // 2 CPUs for 1 s at 100 Hz = 200 ticks; 150 busy; we used 0.5 s: others used 1 s = 50 %.
        assert_eq!(background_cpu_pct(150, 200, 100.0, 0.5), Some(50.0));
        assert_eq!(
            background_cpu_pct(10, 200, 100.0, 0.5),
            Some(0.0),
            "clamped"
        );
        assert_eq!(background_cpu_pct(10, 0, 100.0, 0.0), None);
    }

    #[test]
    fn a_cpu_hog_in_another_process_shows_as_background_load() {
        // The hog's own CPU time (utime + stime of /proc/PID/stat), whatever the load gave it:
        // the other tests of this binary spin in this process and count as ours, so a fixed
        // share (a whole CPU) is not what the hog gets on a busy machine.
        let ticks = |pid: u32| -> u64 {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            let rest = &stat[stat.rfind(')').unwrap() + 1..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
        };
        let mut hog = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        // The hog's ticks inside the snapshots' interval, over a time that contains it: a lower
        // bound of its share of that interval.
        let outer = std::time::Instant::now();
        let start = Snapshot::take();
        let h0 = ticks(hog.id());
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let h1 = ticks(hog.id());
        let end = Snapshot::take();
        let wall = outer.elapsed().as_secs_f64();
        let _ = hog.kill();
        let _ = hog.wait();
        let m = start.delta(&end);
        let bg = m.iter().find(|m| m.name == "bg_cpu_pct").unwrap();
        // SAFETY: sysconf reads a system value and has no other effect.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let hog_pct = 100.0 * (h1 - h0) as f64 / hz / (wall * cpus);
        assert!(h1 > h0, "the hog never ran");
        // Others' share holds at least the hog's (less two ticks' rounding at each end).
        let slack = 100.0 * 4.0 / hz / (wall * cpus);
        assert!(
            bg.value >= hog_pct - slack,
            "bg_cpu_pct {} below the hog's own {hog_pct:.1} %",
            bg.value
        );
        assert!(m.iter().any(|m| m.name == "loadavg_1m_start"));
    }

    #[test]
    fn parses_a_real_proc_stat_line() {
        let text = "cpu  10132153 290696 3084719 46828483 16683 0 25195 0 0 0\n\
                    cpu0 1393280 32966 572056 13343292 6130 0 17875 0 0 0\nintr 1\n";
        let c = parse_proc_stat(text).unwrap();
        assert_eq!(c.user, 10132153 + 290696);
        assert_eq!(c.system, 3084719);
        assert_eq!(c.idle, 46828483);
        assert_eq!(c.iowait, 16683);
        assert_eq!(c.softirq, 25195);
        assert!(parse_proc_stat("cpu 1 2\n").is_none());
        assert!(parse_proc_stat("garbage").is_none());
    }

    #[test]
    fn dirty_pages_written_without_sync_show_in_the_peak() {
        assert_eq!(
            parse_dirty_writeback("MemTotal: 10 kB\nDirty:  1234 kB\nWriteback:  5 kB\n"),
            Some((1234, 5))
        );
        assert_eq!(parse_dirty_writeback("MemTotal: 10 kB\n"), None);
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        // 32 MiB written and left dirty (no fsync); `finish` reads /proc/meminfo once more
        // right away. Another process's sync() (stress-ng --io calls it in a loop) can clean the
        // pages before any reading: a few attempts, each a fresh file and sampler.
        let mut attempts = Vec::new();
        for i in 0..8 {
            let p = PeakSampler::start();
            std::fs::write(dir.path().join(format!("f{i}")), vec![7u8; 32 << 20]).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(150));
            let m = p.finish();
            let dirty = m.iter().find(|m| m.name == "dirty_peak_kib").unwrap();
            assert_eq!(dirty.unit, Unit::KiB);
            let writeback = m.iter().find(|m| m.name == "writeback_peak_kib").unwrap();
            // Background writeback (or another process's sync) may already have started: the
            // file's pages are then dirty or under writeback, and the peaks see them as either.
            let seen = dirty.value + writeback.value;
            attempts.push(m);
            if seen >= 1024.0 {
                return;
            }
        }
        panic!("no attempt saw 1 MiB dirty or under writeback: {attempts:?}");
    }

    #[test]
    fn parses_vmstat() {
        let v = parse_vmstat("nr_free_pages 5\npgpgin 100\npgpgout 7\npgfault 9\npgmajfault 1\n");
        assert_eq!(v, [Some(100), Some(7), Some(9), Some(1)]);
    }

    #[test]
    fn a_busy_loop_shows_user_time_and_cpu_shares_add_up() {
        // Spin until this thread has used 300 ms of CPU by its own clock (however loaded the
        // machine is); the process's rusage must then show at least that much.
        let thread_cpu = || {
            let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
            t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
        };
        let s = Snapshot::take();
        let c0 = thread_cpu();
        let mut x = 0u64;
        // About a millisecond of arithmetic per clock reading: reading the thread's CPU clock
        // is a system call, and with a short inner loop most of the time (as the kernel's ticks
        // see it under load) was system time, not the user time asserted below.
        while thread_cpu() - c0 < 0.3 {
            for _ in 0..1_000_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        let busy = s.metrics_since();
        let get = |m: &[Metric], n: &str| m.iter().find(|m| m.name == n).unwrap().value;
        let cpu = get(&busy, "proc_user_s") + get(&busy, "proc_system_s");
        // getrusage splits user and system time by tick sampling: allow for its granularity.
        assert!(cpu >= 0.25, "{busy:?}");
        assert!(get(&busy, "proc_user_s") >= 0.1, "{busy:?}");
        let s = Snapshot::take();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let idle = s.metrics_since();
        // Other tests run as threads of this process, so its CPU time during the sleep is not
        // zero; the system-wide shares must still add up to at most 100 %.
        let pcts: f64 = ["user", "system", "iowait", "irq", "softirq", "idle"]
            .iter()
            .map(|k| get(&idle, &format!("sys_{k}_pct")))
            .sum();
        assert!(pcts <= 100.0 + 1e-9);
    }
}
