//! fio 3.33's zonemode=zbd over emulated zones (zbd.c init_zone_info): a regular file or a
//! non-zoned block device is cut into zones of `zonesize`, each sequential-write-required with
//! a write pointer kept in memory and capacity = size. Writes go to their zone's write pointer
//! (a full zone is reset first), at most `max_open_zones` zones are open for writing at a time
//! (zbd_convert_to_open_zone picks another open zone as fio does, from the I/O's offset), and
//! reads stay below the write pointers unless read_beyond_wp.
//!
//! Why it exists: fio's zbd examples (and users' jobs written for SMR/ZNS drives) run against
//! a file this way, and the I/O pattern, the bytes readable and so the I/O counts follow these
//! rules. As fio shares zone info per file name over all jobs, one [`Registry`] per run holds
//! every file's zones, behind one mutex per file (fio's per-zone and per-device locks, made
//! one: an I/O's zone decision and write pointer update are atomic, as fio's are under the
//! zone lock). What it must never do: emulate zones over a real zoned device (host-managed or
//! host-aware; its write pointers live on the device, fio reads them with BLKREPORTZONE) —
//! that is refused, naming the device — or issue a zone reset to any device (an emulated reset
//! only moves the in-memory write pointer, as fio's does for ZBD_NONE).

use super::files::ClonePlan;
use super::stats::{READ, WRITE};
use crate::fio::jobfile::{JobSpec, ZoneMode};
use crate::workload::WorkloadError;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// fio's ZBD_MAX_OPEN_ZONES: the size of the open-zones array.
const MAX_OPEN: usize = 4096;

/// The zones of one file, shared by every clone of every job that uses it.
#[derive(Debug)]
struct Dev {
    zone_size: u64,
    nr_zones: u64,
    /// Write pointer per zone (absolute offsets); the zone's start is `i * zone_size`.
    wp: Vec<u64>,
    open: Vec<bool>,
    /// A zone_reset_frequency reset owed before the next write to the zone (fio's reset_zone).
    reset_owed: Vec<bool>,
    /// fio's open_zones array: `num_open` live entries; the rest keeps what memmove left, as
    /// fio reads it unlocked (pick_random_zone_idx with no zone open reads entry 0).
    open_zones: Vec<u32>,
    num_open: usize,
    /// The limit fixed by the first job on the file (zbd_set_max_open_zones).
    max_open_zones: u32,
    /// fio's sectors_with_data / wp_sectors_with_data (equal: every emulated zone has a wp).
    with_data: u64,
    /// fio's write_cnt: writes left before a zone_reset_frequency reset.
    write_cnt: u32,
}

impl Dev {
    fn start(&self, z: usize) -> u64 {
        z as u64 * self.zone_size
    }
    fn cap_end(&self, z: usize) -> u64 {
        self.start(z) + self.zone_size
    }
    /// zbd_offset_to_zone_idx: the sentinel index for offsets at or past the end.
    fn zone_of(&self, off: u64) -> usize {
        (off / self.zone_size).min(self.nr_zones) as usize
    }
    fn full(&self, z: usize, required: u64) -> bool {
        self.wp[z] + required > self.cap_end(z)
    }
    /// zbd_reset_zone: an emulated zone's reset only moves its write pointer.
    fn reset(&mut self, z: usize, resets: &mut u64) {
        let data = self.wp[z] - self.start(z);
        if data == 0 {
            return;
        }
        self.with_data -= data;
        self.wp[z] = self.start(z);
        *resets += 1;
    }
    /// zbd_close_zone; `td_open` is the closing clone's count (fio's td->num_open_zones,
    /// unsigned, decremented by whichever thread closes the zone).
    fn close(&mut self, z: usize, td_open: &mut u32) {
        if !self.open[z] {
            return;
        }
        let Some(i) = self.open_zones[..self.num_open]
            .iter()
            .position(|&o| o as usize == z)
        else {
            return;
        };
        self.open_zones.copy_within(i + 1.., i);
        self.num_open -= 1;
        *td_open = td_open.wrapping_sub(1);
        self.open[z] = false;
    }
}

/// Every zoned file of a run, made before any clone starts (fio's zbd_init_files and
/// zbd_setup_files, which run before the first fork).
#[derive(Debug, Default)]
pub struct Registry {
    devs: Vec<(PathBuf, Arc<Mutex<Dev>>)>,
}

fn invalid(msg: String) -> WorkloadError {
    WorkloadError::InvalidOptions(msg)
}

/// fio's blkzoned_get_zoned_model for a block device: the `queue/zoned` attribute of the disk
/// (of the partition's disk for a partition); absent means not zoned.
fn zoned_model(path: &Path) -> Option<String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let md = std::fs::metadata(path).ok()?;
    if !md.file_type().is_block_device() {
        return None;
    }
    let rdev = md.rdev();
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    [sys.join("queue/zoned"), sys.join("../queue/zoned")]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
        .filter(|m| m != "none")
}

impl Registry {
    /// Take clone `plan` of `job` (zonemode=zbd) into the run: create or join its files'
    /// zones, then align its regions to zone boundaries as fio's zbd_zone_align_file_sizes
    /// does (a writing job's start rounded up and end rounded down to zones). Returns fio's
    /// notes on the rounding (fio prints them); errors are fio's, saying how to fix the job.
    pub fn add(
        &mut self,
        job: &JobSpec,
        plan: &mut ClonePlan,
    ) -> Result<Vec<String>, WorkloadError> {
        let mut notes = Vec::new();
        if job.zonemode != Some(ZoneMode::Zbd) {
            return Ok(notes);
        }
        let zs = job.zonesize;
        for f in &mut plan.files {
            if let Some(model) = zoned_model(&f.path) {
                return Err(invalid(format!(
                    "job '{}': {} is a zoned block device ({model}); zonemode=zbd supports only emulated zones (regular files and non-zoned block devices), not a device's own zones",
                    job.name,
                    f.path.display()
                )));
            }
            let real = super::files::existing_size(&f.path)
                .unwrap_or(0)
                .max(f.offset + f.size);
            let dev = match self.devs.iter().find(|(p, _)| *p == f.path) {
                Some((_, d)) => d.clone(),
                None => {
                    // init_zone_info.
                    if real < zs {
                        return Err(invalid(format!(
                            "job '{}': {}: file/device size {real} is smaller than zone size {zs} (as fio refuses); lower zonesize",
                            job.name,
                            f.path.display()
                        )));
                    }
                    let nr = real.div_ceil(zs);
                    let d = Arc::new(Mutex::new(Dev {
                        zone_size: zs,
                        nr_zones: nr,
                        wp: (0..nr).map(|i| i * zs).collect(),
                        open: vec![false; nr as usize],
                        reset_owed: vec![false; nr as usize],
                        open_zones: vec![0; MAX_OPEN],
                        num_open: 0,
                        max_open_zones: job.max_open_zones,
                        with_data: 0,
                        write_cnt: u32::MAX,
                    }));
                    self.devs.push((f.path.clone(), d.clone()));
                    d
                }
            };
            let d = dev.lock().expect("zone lock");
            if f.offset >= real || f.size == 0 {
                continue;
            }
            if zs != d.zone_size {
                return Err(invalid(format!(
                    "job '{}': {}: zonesize {zs} does not match the device zone size {} (another job's); use one zonesize per file",
                    job.name,
                    f.path.display(),
                    d.zone_size
                )));
            }
            if job.max_open_zones > 0 && job.max_open_zones != d.max_open_zones {
                return Err(invalid(format!(
                    "job '{}': {}: different 'max_open_zones' values ({} here, {} in an earlier job); use one value per file",
                    job.name,
                    f.path.display(),
                    job.max_open_zones,
                    d.max_open_zones
                )));
            }
            if job.job_max_open_zones > 0 && d.max_open_zones == 0 {
                return Err(invalid(format!(
                    "job '{}': 'job_max_open_zones' cannot be used without a global open zones limit; set max_open_zones",
                    job.name
                )));
            }
            let reads_only = !job.rw.writes();
            let z = d.zone_of(f.offset);
            if f.offset != d.start(z) && !reads_only {
                let new_offset = d.start(z + 1);
                if new_offset >= f.offset + f.size {
                    return Err(invalid(format!(
                        "job '{}': {}: io_size must be at least one zone (zonesize={zs})",
                        job.name,
                        f.path.display()
                    )));
                }
                notes.push(format!(
                    "job '{}': {}: rounded up offset from {} to {new_offset} (zonemode=zbd)",
                    job.name,
                    f.path.display(),
                    f.offset
                ));
                f.size -= new_offset - f.offset;
                f.offset = new_offset;
            }
            let new_end = d.start(d.zone_of(f.offset + f.size));
            if !reads_only && f.offset + f.size != new_end {
                if new_end <= f.offset {
                    return Err(invalid(format!(
                        "job '{}': {}: io_size must be at least one zone (zonesize={zs})",
                        job.name,
                        f.path.display()
                    )));
                }
                notes.push(format!(
                    "job '{}': {}: rounded down io_size from {} to {} (zonemode=zbd)",
                    job.name,
                    f.path.display(),
                    f.size,
                    new_end - f.offset
                ));
                f.size = new_end - f.offset;
            }
        }
        Ok(notes)
    }

    /// The zone state one clone works with (None when the job is not zonemode=zbd).
    pub fn clone_state(&self, job: &JobSpec, plan: &ClonePlan) -> Option<ZbdClone> {
        if job.zonemode != Some(ZoneMode::Zbd) {
            return None;
        }
        let files = plan
            .files
            .iter()
            .map(|f| {
                let dev = self
                    .devs
                    .iter()
                    .find(|(p, _)| *p == f.path)
                    .map(|(_, d)| d.clone())
                    .expect("every zbd file registered before the run");
                let (min_zone, max_zone) = {
                    let d = dev.lock().expect("zone lock");
                    (d.zone_of(f.offset), d.zone_of(f.offset + f.size))
                };
                ZbdFile {
                    dev,
                    file_offset: f.offset,
                    io_size: f.size,
                    min_zone,
                    max_zone,
                }
            })
            .collect();
        let mut c = ZbdClone {
            files,
            random: job.rw.is_random(),
            mixed: job.rw.reads() && job.rw.writes(),
            writes: job.rw.writes(),
            read_beyond_wp: job.read_beyond_wp,
            job_max_open: job.job_max_open_zones,
            zrt: job.zone_reset_threshold,
            zrf: job.zone_reset_frequency,
            td_open: 0,
            resets: 0,
        };
        for fi in 0..c.files.len() {
            c.file_reset(fi);
        }
        Some(c)
    }
}

#[derive(Debug)]
struct ZbdFile {
    dev: Arc<Mutex<Dev>>,
    /// fio's f->file_offset and f->io_size (absolute region).
    file_offset: u64,
    io_size: u64,
    /// Zones of the region: min_zone..max_zone.
    min_zone: usize,
    max_zone: usize,
}

impl ZbdFile {
    fn valid(&self, off: u64) -> bool {
        off.wrapping_sub(self.file_offset) < self.io_size
    }
    /// pick_random_zone_idx: an open-zones index from the I/O's place in the region.
    fn pick(&self, d: &Dev, off: u64) -> usize {
        ((off - self.file_offset) as u128 * d.num_open as u128 / self.io_size as u128) as usize
    }
}

/// One clone's view of its files' zones (fio's per-thread zone state: td->num_open_zones,
/// the zone-reset count).
#[derive(Debug)]
pub struct ZbdClone {
    files: Vec<ZbdFile>,
    random: bool,
    mixed: bool,
    writes: bool,
    read_beyond_wp: bool,
    job_max_open: u32,
    zrt: f64,
    zrf: f64,
    td_open: u32,
    /// Zones this clone reset (fio's nr_zone_resets).
    pub resets: u64,
}

impl ZbdClone {
    /// zbd_file_reset (each time fio resets the file: the start, each loop): a writing job
    /// recounts the bytes with data in its zones and restarts the reset-frequency count.
    pub fn file_reset(&mut self, fi: usize) {
        if !self.writes {
            return;
        }
        let f = &self.files[fi];
        let mut d = f.dev.lock().expect("zone lock");
        d.with_data = (f.min_zone..f.max_zone).map(|z| d.wp[z] - d.start(z)).sum();
        d.write_cnt = if self.zrf > 0.0 {
            (1.0 / self.zrf).min(u32::MAX as f64) as u32
        } else {
            u32::MAX
        };
    }

    /// zbd_adjust_ddir: a mixed job's read before any zone holds data becomes a write.
    pub fn adjust_ddir(&self, fi: usize, ddir: usize) -> usize {
        if ddir != READ || !self.mixed || self.read_beyond_wp {
            return ddir;
        }
        let d = self.files[fi].dev.lock().expect("zone lock");
        if d.with_data > 0 { READ } else { WRITE }
    }

    /// zbd_adjust_block and zbd_queue_io: where the I/O of `len` bytes (bs, fixed per
    /// direction) at absolute `off` goes, with the write pointer moved past a write; None
    /// when the file has nothing more for this direction (fio's io_u_eof: the file is done).
    pub fn adjust(&mut self, fi: usize, ddir: usize, off: u64, len: u64) -> Option<u64> {
        if ddir == READ && self.read_beyond_wp {
            return Some(off);
        }
        let f = &self.files[fi];
        let mut d = f.dev.lock().expect("zone lock");
        let orig = d.zone_of(off);
        if ddir == READ {
            let mut zb = orig;
            let mut range = d.wp[zb] - d.start(zb);
            let mut off = off;
            if range < len || (!self.random && off + len > d.wp[zb]) {
                zb = find_zone(&d, f, self.random, len, zb)?;
                range = d.wp[zb] - d.start(zb);
                if !self.random {
                    off = d.start(zb);
                }
            }
            if range <= len {
                off = d.start(zb);
            } else if self.random {
                off = d.start(zb) + ((off - d.start(orig)) % (range - len)) / len * len;
            }
            return Some(off);
        }
        let mut z = orig;
        if !open_zone(&mut d, z, self.job_max_open, &mut self.td_open) {
            z = convert_to_open_zone(&mut d, f, off, len, self.job_max_open, &mut self.td_open)?;
        }
        if self.zrf > 0.0 && d.with_data as f64 >= f.io_size as f64 * self.zrt && {
            d.write_cnt = d.write_cnt.saturating_sub(1);
            let due = d.write_cnt == 0;
            if due {
                d.write_cnt = (1.0 / self.zrf).min(u32::MAX as f64) as u32;
            }
            due
        } {
            d.reset_owed[z] = true;
        }
        if d.reset_owed[z] || d.full(z, len) {
            d.reset_owed[z] = false;
            d.reset(z, &mut self.resets);
        }
        let off = d.wp[z];
        if !f.valid(off) {
            return None;
        }
        // zbd_queue_io: the write pointer moves when the write is issued; a write that fills
        // its zone closes it (zbd_end_zone_io).
        let end = (off + len).min(d.cap_end(z));
        d.with_data += end - d.wp[z];
        d.wp[z] = end;
        if off + len >= d.cap_end(z) {
            d.close(z, &mut self.td_open);
        }
        Some(off)
    }
}

/// zbd_open_zone.
fn open_zone(d: &mut Dev, z: usize, job_max: u32, td_open: &mut u32) -> bool {
    if d.max_open_zones == 0 {
        return true;
    }
    if d.open[z] {
        // Filled by writes in flight: treated as full.
        return d.wp[z] < d.cap_end(z);
    }
    if job_max > 0 && *td_open >= job_max {
        return false;
    }
    if d.num_open >= d.max_open_zones as usize {
        return false;
    }
    let n = d.num_open;
    d.open_zones[n] = z as u32;
    d.num_open += 1;
    *td_open = td_open.wrapping_add(1);
    d.open[z] = true;
    true
}

/// zbd_convert_to_open_zone: the zone a write that may not open its own goes to.
fn convert_to_open_zone(
    d: &mut Dev,
    f: &ZbdFile,
    off: u64,
    min_bs: u64,
    job_max: u32,
    td_open: &mut u32,
) -> Option<usize> {
    let mut zone_idx = if d.max_open_zones > 0 || job_max > 0 {
        d.open_zones[f.pick(d, off)] as usize
    } else {
        d.zone_of(off)
    };
    zone_idx = zone_idx.clamp(f.min_zone, f.max_zone - 1);
    let examine = loop {
        if d.max_open_zones == 0 && job_max == 0 {
            break true;
        }
        if d.num_open == 0 {
            break false;
        }
        let mut tmp = f.pick(d, off);
        let mut found = None;
        for _ in 0..d.num_open {
            if tmp >= d.num_open {
                tmp = 0;
            }
            let tz = d.open_zones[tmp] as usize;
            if f.min_zone <= tz && tz < f.max_zone {
                found = Some(tmp);
                break;
            }
            tmp += 1;
        }
        let new = d.open_zones[found?] as usize;
        if new == zone_idx {
            break true;
        }
        zone_idx = new;
    };
    if examine && d.wp[zone_idx] + min_bs <= d.cap_end(zone_idx) {
        return Some(zone_idx);
    }
    // Zone full or none open: open another (fio tries twice, after waiting for writes in
    // flight; here a write's effect on the zones is complete when it is issued).
    for _ in 0..2 {
        let mut z = zone_idx;
        for _ in 0..f.io_size / d.zone_size {
            z += 1;
            if !f.valid(d.start(z)) {
                z = f.min_zone;
            }
            zone_idx = z;
            if d.open[z] {
                continue;
            }
            if open_zone(d, z, job_max, td_open) {
                return Some(z);
            }
        }
        for i in 0..d.num_open {
            let z = d.open_zones[i] as usize;
            if z < f.min_zone || z >= f.max_zone {
                continue;
            }
            if d.wp[z] + min_bs <= d.cap_end(z) {
                return Some(z);
            }
            zone_idx = z;
        }
    }
    None
}

/// zbd_find_zone: the next zone up (and for random I/O also the nearest down) holding at
/// least `min_bytes` below its write pointer.
fn find_zone(d: &Dev, f: &ZbdFile, random: bool, min_bytes: u64, zb: usize) -> Option<usize> {
    let (zf, zl) = (f.min_zone as i64, f.max_zone as i64);
    let (mut z1, mut z2) = (zb as i64 + 1, zb as i64 - 1);
    let has = |z: i64| d.start(z as usize) + min_bytes <= d.wp[z as usize];
    while z1 < zl || z2 >= zf {
        if z1 < zl {
            if has(z1) {
                return Some(z1 as usize);
            }
        } else if !random {
            break;
        }
        if random && z2 >= zf && has(z2) {
            return Some(z2 as usize);
        }
        z1 += 1;
        z2 -= 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(nr: u64, max_open: u32) -> Dev {
        let zs = 1 << 20;
        Dev {
            zone_size: zs,
            nr_zones: nr,
            wp: (0..nr).map(|i| i * zs).collect(),
            open: vec![false; nr as usize],
            reset_owed: vec![false; nr as usize],
            open_zones: vec![0; MAX_OPEN],
            num_open: 0,
            max_open_zones: max_open,
            with_data: 0,
            write_cnt: u32::MAX,
        }
    }

    fn file(d: &Dev) -> ZbdFile {
        ZbdFile {
            dev: Arc::new(Mutex::new(dev(d.nr_zones, d.max_open_zones))),
            file_offset: 0,
            io_size: d.nr_zones * d.zone_size,
            min_zone: 0,
            max_zone: d.nr_zones as usize,
        }
    }

    /// zbd_find_zone: sequential reads look up only; random ones also down, nearest first.
    #[test]
    fn find_zone_looks_up_then_down_for_random() {
        let mut d = dev(8, 0);
        let f = file(&d);
        d.wp[1] += 4096;
        d.wp[5] += 4096;
        assert_eq!(find_zone(&d, &f, false, 4096, 2), Some(5));
        assert_eq!(find_zone(&d, &f, false, 4096, 5), None);
        assert_eq!(find_zone(&d, &f, true, 4096, 2), Some(1));
        assert_eq!(find_zone(&d, &f, true, 4096, 3), Some(5));
        assert_eq!(find_zone(&d, &f, true, 8192, 3), None);
    }

    /// zbd_open_zone and zbd_convert_to_open_zone: past the limit a write goes to the open zone
    /// pick_random_zone_idx names from its offset; a full zone closes and frees its slot.
    #[test]
    fn open_zone_limit_and_conversion_are_fios() {
        let mut d = dev(8, 2);
        let f = file(&d);
        let mut td = 0;
        assert!(open_zone(&mut d, 6, 0, &mut td));
        assert!(open_zone(&mut d, 3, 0, &mut td));
        assert!(!open_zone(&mut d, 1, 0, &mut td));
        assert_eq!(td, 2);
        // Offset in the first half of the region: open_zones[0]; in the second: [1].
        assert_eq!(
            convert_to_open_zone(&mut d, &f, 1 << 20, 65536, 0, &mut td),
            Some(6)
        );
        assert_eq!(
            convert_to_open_zone(&mut d, &f, 6 << 20, 65536, 0, &mut td),
            Some(3)
        );
        // Zone 6 full: the next zone up that can be opened is taken instead... once a slot
        // is free (the filling write closed zone 3).
        d.wp[3] = d.cap_end(3);
        d.close(3, &mut td);
        d.wp[6] = d.cap_end(6);
        assert_eq!(
            convert_to_open_zone(&mut d, &f, 1 << 20, 65536, 0, &mut td),
            Some(7)
        );
        assert_eq!(&d.open_zones[..d.num_open], &[6, 7]);
    }

    /// zbd_zone_align_file_sizes: a writing job's region is cut to whole zones.
    #[test]
    fn a_write_region_is_aligned_to_zones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::File::create(&path)
            .unwrap()
            .set_len(8 << 20)
            .unwrap();
        let text = "[w]\nfilename=f\nrw=write\nzonemode=zbd\nzonesize=1m\n";
        let set =
            crate::fio::jobfile::parse_job_text(text, "t.fio", &crate::fio::jobfile::SystemSources)
                .unwrap();
        let mut plan = ClonePlan {
            files: vec![super::super::files::FilePlan {
                path,
                size: 3 << 20,
                offset: 100 << 10,
                fio_name: "f".into(),
            }],
            pass_bytes: 3 << 20,
        };
        let notes = Registry::default().add(&set.jobs[0], &mut plan).unwrap();
        assert_eq!(
            (plan.files[0].offset, plan.files[0].size),
            (1 << 20, 2 << 20)
        );
        assert_eq!(notes.len(), 2);
    }
}
