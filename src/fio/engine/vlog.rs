//! The verify log of one file: every write logged for verify as a piece (offset, length, the
//! write's numberio), as fio 3.33's io_piece entries (iolog.c, log_io_piece). A write that
//! overlaps pieces already logged drops each of them whole, as fio's rb-tree insert does (the
//! older data is no longer what the old header says, and fio never reads back the part of an
//! older piece the newer write left); a write at the same offset replaces the old entry. The
//! verify phase reads each piece back with its own length, in offset order.
//!
//! Why it exists: with one block size a write fills exactly one block and a per-block slot was
//! enough; with bsrange= or bssplit= a write spans any number of the smallest blocks, so each
//! needs its own length. What it must never do: keep two overlapping pieces (the older one's
//! header would fail its check though nothing went wrong), or allocate per write: the log is
//! one slot per `unit` bytes of the region, made when the file's state is, and a slot is found
//! from its offset.

/// A slot holds a piece: this bit, then the numberio (bits 32..48) and the length (low 32).
const LOGGED: u64 = 1 << 63;

/// One logged write: where it starts (from the region's start), how long it is, its numberio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub offset: u64,
    pub len: u64,
    pub numberio: u16,
}

/// The pieces of one file, one slot per `unit` bytes (every write starts on a unit and is a
/// whole number of them). Empty (no slot) when the job does not verify its writes.
#[derive(Debug, Default)]
pub struct PieceLog {
    unit: u64,
    slots: Vec<u64>,
    /// The longest piece ever logged, in units: how far back a piece overlapping a new one
    /// can start.
    max_units: u64,
}

impl PieceLog {
    /// A log for a region of `region` bytes whose writes start on and are multiples of `unit`.
    pub fn new(region: u64, unit: u64) -> PieceLog {
        let unit = unit.max(1);
        PieceLog {
            unit,
            slots: vec![0; region.div_ceil(unit) as usize],
            max_units: 0,
        }
    }

    /// Whether the log keeps anything (the job verifies its writes).
    pub fn is_enabled(&self) -> bool {
        !self.slots.is_empty()
    }

    /// The slot of a piece starting at `offset`, if it is on a unit inside the region.
    fn slot(&self, offset: u64) -> Option<usize> {
        (offset % self.unit == 0)
            .then_some((offset / self.unit) as usize)
            .filter(|&i| i < self.slots.len())
    }

    fn piece_at(&self, i: usize) -> Option<Piece> {
        let s = self.slots[i];
        (s & LOGGED != 0).then_some(Piece {
            offset: i as u64 * self.unit,
            len: s & 0xffff_ffff,
            numberio: (s >> 32) as u16,
        })
    }

    /// Log a write of `len` bytes at `offset` (fio's log_io_piece): every piece it overlaps is
    /// dropped first and handed to `dropped`. A write that is not on a unit, or not inside the
    /// region, is not logged (false).
    pub fn log(
        &mut self,
        offset: u64,
        len: u64,
        numberio: u16,
        mut dropped: impl FnMut(Piece),
    ) -> bool {
        let Some(first) = self.slot(offset) else {
            return false;
        };
        if len == 0 || len > u32::MAX as u64 {
            return false;
        }
        let units = len.div_ceil(self.unit);
        // The one piece before that can reach into the write: the nearest logged slot back
        // (pieces never overlap each other), at most the longest piece away.
        let back = first.saturating_sub(self.max_units as usize);
        if let Some(i) = (back..first).rev().find(|&i| self.slots[i] & LOGGED != 0) {
            let p = self.piece_at(i).expect("logged");
            if p.offset + p.len > offset {
                self.slots[i] = 0;
                dropped(p);
            }
        }
        let end = (first + units as usize).min(self.slots.len());
        for i in first..end {
            if let Some(p) = self.piece_at(i) {
                self.slots[i] = 0;
                dropped(p);
            }
        }
        self.slots[first] = LOGGED | ((numberio as u64) << 32) | len;
        self.max_units = self.max_units.max(units);
        true
    }

    /// The piece logged at `offset`, if one is.
    pub fn get(&self, offset: u64) -> Option<Piece> {
        self.slot(offset).and_then(|i| self.piece_at(i))
    }

    /// Take the piece logged at `offset` out of the log (it is being verified, or its write
    /// failed).
    pub fn take(&mut self, offset: u64) -> Option<Piece> {
        let i = self.slot(offset)?;
        let p = self.piece_at(i);
        self.slots[i] = 0;
        p
    }

    /// The first piece at or after `offset`, in offset order.
    pub fn next_from(&self, offset: u64) -> Option<Piece> {
        let from = offset.div_ceil(self.unit) as usize;
        (from..self.slots.len()).find_map(|i| self.piece_at(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(l: &PieceLog) -> Vec<(u64, u64, u16)> {
        let mut v = Vec::new();
        let mut at = 0;
        while let Some(p) = l.next_from(at) {
            v.push((p.offset, p.len, p.numberio));
            at = p.offset + 1;
        }
        v
    }

    #[test]
    fn pieces_keep_their_own_lengths_in_offset_order() {
        let mut l = PieceLog::new(1 << 20, 512);
        assert!(l.log(4096, 65536, 1, |_| panic!("nothing overlaps")));
        assert!(l.log(0, 512, 0, |_| panic!("nothing overlaps")));
        assert!(l.log(512, 3584, 2, |_| panic!("nothing overlaps")));
        assert_eq!(
            pieces(&l),
            vec![(0, 512, 0), (512, 3584, 2), (4096, 65536, 1)]
        );
        assert_eq!(l.take(512).map(|p| p.len), Some(3584));
        assert_eq!(l.take(512), None);
        assert_eq!(pieces(&l), vec![(0, 512, 0), (4096, 65536, 1)]);
    }

    #[test]
    fn an_overlapping_write_drops_every_piece_it_touches_whole() {
        // fio's log_io_piece: the rb-tree insert erases each overlapping entry and restarts.
        let mut l = PieceLog::new(1 << 20, 512);
        l.log(0, 8192, 1, |_| {});
        l.log(8192, 512, 2, |_| {});
        l.log(8704, 1024, 3, |_| {});
        l.log(16384, 512, 4, |_| {});
        let mut gone = Vec::new();
        // Starts inside the first piece, ends inside the third.
        l.log(4096, 4608 + 512, 5, |p| gone.push(p.numberio));
        gone.sort();
        assert_eq!(gone, vec![1, 2, 3]);
        assert_eq!(pieces(&l), vec![(4096, 5120, 5), (16384, 512, 4)]);
        // The same offset: the newer write replaces the entry.
        let mut gone = Vec::new();
        l.log(16384, 512, 6, |p| gone.push(p.numberio));
        assert_eq!(gone, vec![4]);
        assert_eq!(l.get(16384).map(|p| p.numberio), Some(6));
    }

    #[test]
    fn writes_off_the_units_or_past_the_region_are_not_logged() {
        let mut l = PieceLog::new(4096, 512);
        assert!(!l.log(100, 512, 0, |_| {}));
        assert!(!l.log(4096, 512, 0, |_| {}));
        assert!(pieces(&l).is_empty());
        assert!(!PieceLog::default().is_enabled());
        assert!(l.is_enabled());
    }
}
