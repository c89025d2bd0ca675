//! Children that die with the fsdelta thread that started them.
//!
//! Why: a run's mkfs, losetup, hooks, perf and qemu live in the run's private mount namespace
//! (`os::namespace`); one that outlives an fsdelta killed with -9 keeps that namespace, and with
//! it the run's mounts and loop devices, alive, so `fsdelta cleanup` could not undo them (a kill
//! during the mkfs of a matrix run's second configuration left the first one's mount behind for
//! as long as mkfs ran). Every child fsdelta waits for is therefore started with
//! `PR_SET_PDEATHSIG = SIGKILL`: the kernel kills it when the thread that spawned it ends.
//!
//! Must never be used for a child that a thread other than its spawner waits for, or that is
//! meant to outlive the spawning thread (the signal follows the thread, not the process), and
//! must never allocate between fork and exec.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Make `cmd`'s child die (SIGKILL) when the calling thread ends, and refuse to start it when
/// that thread's process is already gone by the time it runs (the parent changed).
pub fn dies_with_this_thread(cmd: &mut Command) -> &mut Command {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: prctl and getppid are async-signal-safe; the closure only reads a copied integer
    // and allocates nothing between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died before prctl: do not start an orphan.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// A child started from a thread that then ends is killed by the kernel, whatever it was
    /// doing: `sleep 600` is reaped as killed by SIGKILL long before its 600 s (the bound is a
    /// hang guard, not a timing assertion).
    #[test]
    fn a_child_dies_when_its_spawning_thread_ends() {
        use std::os::unix::process::ExitStatusExt;
        let child = std::thread::spawn(|| {
            let mut cmd = Command::new("sleep");
            cmd.arg("600");
            dies_with_this_thread(&mut cmd).spawn().unwrap()
        })
        .join()
        .unwrap();
        let mut child = child;
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(start.elapsed() < Duration::from_secs(300), "sleep lived on");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.signal(), Some(libc::SIGKILL));
    }

    #[test]
    fn a_child_of_a_living_thread_runs_to_its_end() {
        let mut cmd = Command::new("true");
        let status = dies_with_this_thread(&mut cmd).status().unwrap();
        assert!(status.success());
    }
}
