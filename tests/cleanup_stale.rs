//! `fsdelta cleanup` tells a stale entry from a live one: a recorded loop device that was
//! detached and then attached by someone else to another file, an image that is gone, a mount
//! that is gone. Each is dropped with one line saying why, the exit code is 0, what is now
//! someone else's is left exactly as it is, and the next cleanup (or run) has nothing to say.
//!
//! Needs root and loop devices (losetup); skips say why, unless FSDELTA_REQUIRE_ALL=1.

mod common;

use common::{is_root, require};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A loop device the test attached (someone else's, as far as fsdelta is concerned), detached
/// when the test ends however it ends.
struct TheirLoop(PathBuf);

impl Drop for TheirLoop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.0).status();
    }
}

fn backing_of(dev: &Path) -> String {
    let name = dev.file_name().unwrap().to_str().unwrap();
    std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[test]
fn stale_entries_are_dropped_with_a_reason_and_exit_0() {
    if !(require(is_root(), "root (loop devices)")
        && require(Path::new("/dev/loop-control").exists(), "loop devices"))
    {
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let tmp = dir.path().canonicalize().unwrap();
    let theirs = tmp.join("their.img");
    std::fs::write(&theirs, vec![0u8; 1 << 20]).unwrap();
    let out = Command::new("losetup")
        .args(["-f", "--show"])
        .arg(&theirs)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let dev = TheirLoop(PathBuf::from(String::from_utf8(out.stdout).unwrap().trim()));
    // What a killed fsdelta recorded (pid 1's start time is never 1: the owner is dead): its
    // scratch root's entry was already cleared, its image is gone, its mount too, and its loop
    // device number now backs `their.img`.
    let root = tmp.join("ext4.4242");
    let state = tmp.join("state/leftovers.json");
    std::fs::create_dir(state.parent().unwrap()).unwrap();
    let entry = |id: u32, body: String| {
        format!(r#"{{"id":{id},"owner":{{"pid":4242,"start_time":1}},{body}}}"#)
    };
    let entries = [
        entry(
            1,
            format!(
                r#""kind":"mount","target":"{}","source":"{}","namespace":1"#,
                root.join("mnt").display(),
                dev.0.display()
            ),
        ),
        entry(
            2,
            format!(
                r#""kind":"loop","device":"{}","backing_file":"{}""#,
                dev.0.display(),
                root.join("image").display()
            ),
        ),
        entry(
            3,
            format!(r#""kind":"file","path":"{}""#, root.join("image").display()),
        ),
    ];
    std::fs::write(
        &state,
        format!(r#"{{"version":1,"entries":[{}]}}"#, entries.join(",")),
    )
    .unwrap();
    let cleanup = || {
        let mut c = common::fsdelta(&tmp.join("no-store.sqlite"));
        c.env("FSDELTA_STATE_FILE", &state).arg("cleanup");
        c.output().unwrap()
    };
    let out = cleanup();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("dropped a stale entry: ")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "{} now backs {}, not this image",
            dev.0.display(),
            theirs.display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("image") && stdout.contains("it is gone"),
        "{stdout}"
    );
    assert!(stdout.contains("no longer mounted"), "{stdout}");
    // Someone else's loop device is untouched.
    assert_eq!(backing_of(&dev.0), theirs.display().to_string());
    // Nothing left to say the next time.
    let out = cleanup();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("nothing to clean up"),
        "{out:?}"
    );
}

/// A dead fsdelta's mounts in a mount namespace that a leftover process still holds are not
/// stale: `cleanup` names the process and keeps the entries (exit 2), for a mount inside the
/// recorded scratch root and one outside it (as tracefs is); once that process is gone, the
/// namespace and its mounts are too, and the entries are dropped as stale (exit 0).
#[test]
fn a_mount_in_a_namespace_still_held_names_the_holder_then_goes_with_it() {
    if !(require(is_root(), "root (unshare -m)")
        && require(
            Command::new("sh")
                .args(["-c", "command -v unshare"])
                .output()
                .is_ok_and(|o| o.status.success()),
            "unshare (Debian package util-linux)",
        ))
    {
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let tmp = dir.path().canonicalize().unwrap();
    // The leftover process: a sleep in a mount namespace of its own, killed when the test ends.
    let mut holder = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sleep", "600"])
        .spawn()
        .unwrap();
    struct Kill<'a>(&'a mut std::process::Child);
    impl Drop for Kill<'_> {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let pid = holder.id();
    let mine = std::fs::read_link("/proc/self/ns/mnt").unwrap();
    let ns = loop {
        // unshare execs sleep once the namespace is made.
        if let Some(st) = holder.try_wait().unwrap() {
            panic!("unshare -m sleep ended: {st}");
        }
        let link = std::fs::read_link(format!("/proc/{pid}/ns/mnt")).unwrap();
        if link != mine
            && std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .unwrap()
                .trim()
                == "sleep"
        {
            break link.to_str().unwrap()[5..]
                .trim_end_matches(']')
                .to_string();
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let holder = Kill(&mut holder);
    let root = tmp.join("ext4.4242");
    let state = tmp.join("state/leftovers.json");
    std::fs::create_dir(state.parent().unwrap()).unwrap();
    std::fs::write(
        &state,
        format!(
            r#"{{"version":1,"entries":[{{"id":1,"owner":{{"pid":4242,"start_time":1}},"kind":"dir","path":"{r}"}},{{"id":2,"owner":{{"pid":4242,"start_time":1}},"kind":"mount","target":"{r}/mnt","source":"/dev/loop9","namespace":{ns}}},{{"id":3,"owner":{{"pid":4242,"start_time":1}},"kind":"mount","target":"{t}/tracing","source":"nodev","namespace":{ns}}}]}}"#,
            r = root.display(),
            t = tmp.display(),
        ),
    )
    .unwrap();
    let cleanup = || {
        let mut c = common::fsdelta(&tmp.join("no-store.sqlite"));
        c.env("FSDELTA_STATE_FILE", &state).arg("cleanup");
        c.output().unwrap()
    };
    let out = cleanup();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    // Inside the recorded scratch root or not (as tracefs is), the holder is named.
    assert_eq!(
        stdout
            .matches(&format!("pid {pid} (sleep) keeps alive"))
            .count(),
        2,
        "{stdout}"
    );
    drop(holder);
    let out = cleanup();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert_eq!(
        stdout.matches("went away with the mount namespace").count(),
        2,
        "{stdout}"
    );
}
