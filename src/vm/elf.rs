//! The few ELF facts the vm room needs, read by hand: a named section's bytes (a module's
//! `.modinfo`), whether a program is dynamically linked (`PT_INTERP`), and whether a vmlinux has
//! the PVH entry note QEMU needs to boot it directly (`XEN_ELFNOTE_PHYS32_ENTRY`).
//!
//! Why by hand: three questions of a 64-bit little-endian ELF file are ~80 lines; a crate for
//! them would be larger than the answer. Must never trust offsets: every read is bounds-checked
//! and a malformed file is "not ELF", never a panic.

const PT_INTERP: u32 = 3;
const PT_NOTE: u32 = 4;
/// `XEN_ELFNOTE_PHYS32_ENTRY`: the 32-bit PVH entry point QEMU's `-kernel` uses for an ELF.
const XEN_ELFNOTE_PHYS32_ENTRY: u32 = 18;

fn u16_at(d: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(d.get(o..o + 2)?.try_into().ok()?))
}
fn u32_at(d: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(d.get(o..o + 4)?.try_into().ok()?))
}
fn u64_at(d: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(d.get(o..o + 8)?.try_into().ok()?))
}

/// Whether `d` starts like a 64-bit little-endian ELF file.
pub fn is_elf64(d: &[u8]) -> bool {
    d.len() >= 64 && &d[..4] == b"\x7fELF" && d[4] == 2 && d[5] == 1
}

/// The program headers: (type, file offset, file size).
fn program_headers(d: &[u8]) -> Option<Vec<(u32, usize, usize)>> {
    if !is_elf64(d) {
        return None;
    }
    let phoff = usize::try_from(u64_at(d, 0x20)?).ok()?;
    let phentsize = usize::from(u16_at(d, 0x36)?);
    let phnum = usize::from(u16_at(d, 0x38)?);
    let mut out = Vec::with_capacity(phnum);
    for i in 0..phnum {
        let o = phoff.checked_add(i.checked_mul(phentsize)?)?;
        let kind = u32_at(d, o)?;
        let off = usize::try_from(u64_at(d, o + 8)?).ok()?;
        let size = usize::try_from(u64_at(d, o + 32)?).ok()?;
        out.push((kind, off, size));
    }
    Some(out)
}

/// Whether the ELF program is dynamically linked (has a `PT_INTERP`); `None` when not ELF.
pub fn is_dynamic(d: &[u8]) -> Option<bool> {
    Some(program_headers(d)?.iter().any(|(k, _, _)| *k == PT_INTERP))
}

/// Whether a vmlinux carries the PVH entry note (QEMU can boot it with `-kernel` directly).
pub fn has_pvh_note(d: &[u8]) -> bool {
    let Some(headers) = program_headers(d) else {
        return false;
    };
    let align4 = |n: usize| n.div_ceil(4) * 4;
    for (kind, off, size) in headers {
        if kind != PT_NOTE {
            continue;
        }
        let Some(notes) = d.get(off..off.saturating_add(size)) else {
            continue;
        };
        let mut o = 0;
        while o + 12 <= notes.len() {
            let (Some(namesz), Some(descsz), Some(ntype)) =
                (u32_at(notes, o), u32_at(notes, o + 4), u32_at(notes, o + 8))
            else {
                break;
            };
            let name_start = o + 12;
            let name_end = name_start + namesz as usize;
            let name = notes.get(name_start..name_end).unwrap_or_default();
            if ntype == XEN_ELFNOTE_PHYS32_ENTRY && name.starts_with(b"Xen") {
                return true;
            }
            o = name_start + align4(namesz as usize) + align4(descsz as usize);
        }
    }
    false
}

/// The bytes of the section called `name`, when the file is ELF and has it.
pub fn section<'a>(d: &'a [u8], name: &str) -> Option<&'a [u8]> {
    if !is_elf64(d) {
        return None;
    }
    let shoff = usize::try_from(u64_at(d, 0x28)?).ok()?;
    let shentsize = usize::from(u16_at(d, 0x3a)?);
    let shnum = usize::from(u16_at(d, 0x3c)?);
    let shstrndx = usize::from(u16_at(d, 0x3e)?);
    let header = |i: usize| -> Option<(u32, usize, usize)> {
        let o = shoff.checked_add(i.checked_mul(shentsize)?)?;
        let name = u32_at(d, o)?;
        let off = usize::try_from(u64_at(d, o + 0x18)?).ok()?;
        let size = usize::try_from(u64_at(d, o + 0x20)?).ok()?;
        Some((name, off, size))
    };
    let (_, stroff, strsize) = header(shstrndx)?;
    let strtab = d.get(stroff..stroff.checked_add(strsize)?)?;
    for i in 0..shnum {
        let (n, off, size) = header(i)?;
        let rest = strtab.get(n as usize..)?;
        let end = rest.iter().position(|&b| b == 0)?;
        if &rest[..end] == name.as_bytes() {
            return d.get(off..off.checked_add(size)?);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_test_binary_is_elf_and_garbage_is_not() {
        let me = std::fs::read("/proc/self/exe").unwrap();
        assert!(is_elf64(&me));
        assert!(is_dynamic(&me).is_some());
        assert!(section(&me, ".text").is_some_and(|s| !s.is_empty()));
        assert!(section(&me, ".no-such-section").is_none());
        assert!(!has_pvh_note(&me));
        let mut bad = me[..200].to_vec();
        bad[0x28..0x30].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(section(&bad, ".text").is_none());
        assert!(!is_elf64(
            b"not an elf file at all, really not, no............................"
        ));
        assert_eq!(is_dynamic(b"short"), None);
    }
}
