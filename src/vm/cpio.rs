//! A writer of cpio archives in the "newc" format, the one the kernel unpacks into its initial
//! root filesystem. The kernel unpacks several archives laid end to end, so a cached base archive
//! and small per-run archives are simply concatenated.
//!
//! Must never write a path that escapes the archive root: names are relative, without `..`.

/// An archive being built in memory.
#[derive(Debug, Default)]
pub struct Archive {
    data: Vec<u8>,
    ino: u32,
}

fn pad4(v: &mut Vec<u8>) {
    while v.len() % 4 != 0 {
        v.push(0);
    }
}

impl Archive {
    /// An empty archive.
    pub fn new() -> Archive {
        Archive {
            data: Vec::new(),
            ino: 1000,
        }
    }

    fn entry(&mut self, name: &str, mode: u32, data: &[u8]) {
        let name = name.trim_start_matches('/');
        debug_assert!(!name.split('/').any(|c| c == ".."), "{name}");
        self.ino += 1;
        let fields = [
            self.ino,
            mode,
            0,
            0,
            1,
            0,
            data.len() as u32,
            0,
            0,
            0,
            0,
            name.len() as u32 + 1,
            0,
        ];
        self.data.extend_from_slice(b"070701");
        for f in fields {
            self.data.extend_from_slice(format!("{f:08X}").as_bytes());
        }
        self.data.extend_from_slice(name.as_bytes());
        self.data.push(0);
        pad4(&mut self.data);
        self.data.extend_from_slice(data);
        pad4(&mut self.data);
    }

    /// A directory (parents must come first).
    pub fn dir(&mut self, name: &str) {
        self.entry(name, 0o040_755, &[]);
    }

    /// A regular file with permission bits `perm` (e.g. 0o755).
    pub fn file(&mut self, name: &str, perm: u32, data: &[u8]) {
        self.entry(name, 0o100_000 | (perm & 0o7777), data);
    }

    /// A symbolic link to `target`.
    pub fn symlink(&mut self, name: &str, target: &str) {
        self.entry(name, 0o120_777, target.as_bytes());
    }

    /// Every parent directory of `path` (`a/b/c` gives `a`, `a/b`), for [`Archive::dir`].
    pub fn parents(path: &str) -> Vec<String> {
        let path = path.trim_start_matches('/');
        let parts: Vec<&str> = path.split('/').collect();
        (1..parts.len()).map(|i| parts[..i].join("/")).collect()
    }

    /// The archive's bytes, with its trailer.
    pub fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, &[]);
        // The kernel reads archives in 512-byte blocks only for compressed ones; pad anyway so
        // that concatenated archives stay aligned.
        while self.data.len() % 512 != 0 {
            self.data.push(0);
        }
        self.data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Read back (name, mode, data) entries, as the kernel's unpacker does.
    fn read(mut d: &[u8]) -> Vec<(String, u32, Vec<u8>)> {
        let mut out = Vec::new();
        loop {
            while d.first() == Some(&0) {
                d = &d[1..];
            }
            if d.is_empty() {
                return out;
            }
            assert_eq!(&d[..6], b"070701");
            let field = |i: usize| {
                u32::from_str_radix(std::str::from_utf8(&d[6 + 8 * i..14 + 8 * i]).unwrap(), 16)
                    .unwrap()
            };
            let mode = field(1);
            let size = field(6) as usize;
            let namesize = field(11) as usize;
            let name = String::from_utf8(d[110..110 + namesize - 1].to_vec()).unwrap();
            let data_start = (110 + namesize).div_ceil(4) * 4;
            let data = d[data_start..data_start + size].to_vec();
            d = &d[(data_start + size).div_ceil(4) * 4..];
            if name == "TRAILER!!!" {
                out.push((name, mode, data));
                continue;
            }
            out.push((name, mode, data));
        }
    }

    #[test]
    fn entries_read_back_and_archives_concatenate() {
        let mut a = Archive::new();
        for p in Archive::parents("lib/modules/x.ko") {
            a.dir(&p);
        }
        a.file("/lib/modules/x.ko", 0o644, b"abcde");
        a.symlink("bin/sh", "busybox");
        let mut bytes = a.finish();
        assert_eq!(bytes.len() % 512, 0);
        let mut b = Archive::new();
        b.file("job.json", 0o600, b"{}");
        bytes.extend(b.finish());
        let e = read(&bytes);
        let names: Vec<&str> = e.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "lib",
                "lib/modules",
                "lib/modules/x.ko",
                "bin/sh",
                "TRAILER!!!",
                "job.json",
                "TRAILER!!!"
            ]
        );
        assert_eq!(e[2].1, 0o100_644);
        assert_eq!(e[2].2, b"abcde");
        assert_eq!(e[3].1, 0o120_777);
        assert_eq!(e[3].2, b"busybox");
        assert_eq!(e[5].2, b"{}");
    }
}
