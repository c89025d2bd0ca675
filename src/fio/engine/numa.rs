//! numa_cpu_nodes= and numa_mem_policy= on a job's thread, as fio 3.33's thread_main applies
//! them through libnuma: numa_run_on_node_mask (the thread's CPU affinity becomes the CPUs of
//! the nodes, /sys/devices/system/node/nodeN/cpulist) and numa_set_preferred /
//! numa_set_membind / numa_set_interleave_mask / numa_set_localalloc (set_mempolicy(2) with
//! MPOL_PREFERRED, MPOL_BIND, MPOL_INTERLEAVE or MPOL_LOCAL, nodes in a 1024-bit mask).
//!
//! Why it exists: without libnuma, the same system calls fio makes, on the job's own thread
//! before its buffers are allocated, so that the buffers land where the policy says. The node
//! lists are resolved against the nodes the process may use (/proc/self/status
//! Mems_allowed_list, libnuma's numa_all_nodes) with fio's messages for a node that does not
//! exist; [`check`] does it before any job runs, as fio refuses such a job file when it reads
//! it. What it must never do: change the affinity or policy of any thread but the caller's,
//! or go on silently when a call fails (fio's libnuma only warns when set_mempolicy fails;
//! here it is an error, since the job would not run as its file says).

use crate::fio::jobfile::JobSpec;
use crate::fio::jobfile::numa::{MemPolicy, NodeList};

/// The kernel's MPOL_* modes (fio's numa_mem_mode values are the same).
pub const MPOL_DEFAULT: i32 = 0;
/// MPOL_PREFERRED.
pub const MPOL_PREFERRED: i32 = 1;
/// MPOL_BIND.
pub const MPOL_BIND: i32 = 2;
/// MPOL_INTERLEAVE.
pub const MPOL_INTERLEAVE: i32 = 3;
/// MPOL_LOCAL.
pub const MPOL_LOCAL: i32 = 4;

/// Nodes in the masks handed to the kernel (libnuma's default nodemask size).
const MASK_BITS: usize = 1024;
const MASK_WORDS: usize = MASK_BITS / 64;

/// Why a job's NUMA options cannot be applied.
#[derive(Debug, thiserror::Error)]
pub enum NumaError {
    /// A node list names a node the process may not use (fio refuses the job file).
    #[error("{origin}: job '{job}': option '{option}={value}': {message}")]
    Node {
        /// Where the option was written.
        origin: String,
        /// The job.
        job: String,
        /// numa_cpu_nodes or numa_mem_policy.
        option: &'static str,
        /// The value as written.
        value: String,
        /// What is wrong, with fio's words.
        message: String,
    },
    /// A sysfs or procfs file could not be read.
    #[error(
        "job '{job}': reading {path}: {why} (the NUMA options need it; run without numa_cpu_nodes/numa_mem_policy)"
    )]
    Read {
        /// The job.
        job: String,
        /// The file.
        path: String,
        /// The error.
        why: String,
    },
    /// sched_setaffinity or set_mempolicy failed.
    #[error("job '{job}': {call} failed: {source} (fio: \"{fio} failed\"){hint}")]
    Call {
        /// The job.
        job: String,
        /// The system call.
        call: &'static str,
        /// fio's name for the step.
        fio: &'static str,
        /// The OS error.
        source: std::io::Error,
        /// What to do about it.
        hint: &'static str,
    },
}

/// What a job's NUMA options come to on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// The CPUs the thread runs on (numa_cpu_nodes), None to leave the affinity alone.
    pub cpus: Option<Vec<usize>>,
    /// The memory policy (mode, nodes), None for none (numa_mem_policy=default or absent).
    pub policy: Option<(i32, Vec<u32>)>,
}

fn read(job: &JobSpec, path: &str) -> Result<String, NumaError> {
    std::fs::read_to_string(path).map_err(|e| NumaError::Read {
        job: job.name.clone(),
        path: path.to_string(),
        why: e.to_string(),
    })
}

fn list_of(job: &JobSpec, path: &str, text: &str) -> Result<Vec<i32>, NumaError> {
    crate::probe::events::parse_cpu_list(text.trim()).ok_or_else(|| NumaError::Read {
        job: job.name.clone(),
        path: path.to_string(),
        why: format!("'{}' is not a list", text.trim()),
    })
}

/// The nodes the process may allocate on (/proc/self/status Mems_allowed_list).
fn allowed_nodes(job: &JobSpec) -> Result<Vec<u32>, NumaError> {
    let path = "/proc/self/status";
    let status = read(job, path)?;
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("Mems_allowed_list:"))
        .ok_or_else(|| NumaError::Read {
            job: job.name.clone(),
            path: path.into(),
            why: "no Mems_allowed_list line (a kernel without NUMA support?)".into(),
        })?;
    Ok(list_of(job, path, line)?
        .into_iter()
        .map(|n| n as u32)
        .collect())
}

/// The CPUs of node `n` (/sys/devices/system/node/nodeN/cpulist; empty for a node of memory
/// only).
fn node_cpus(job: &JobSpec, n: u32) -> Result<Vec<usize>, NumaError> {
    let path = format!("/sys/devices/system/node/node{n}/cpulist");
    let text = read(job, &path)?;
    Ok(list_of(job, &path, &text)?
        .into_iter()
        .map(|c| c as usize)
        .collect())
}

/// Resolve `job`'s NUMA options against `allowed` nodes and `cpus_of` (a node's CPUs): what
/// the thread gets; a node that does not exist is an error with fio's words.
pub fn placement(
    job: &JobSpec,
    allowed: &[u32],
    cpus_of: impl Fn(u32) -> Result<Vec<usize>, NumaError>,
) -> Result<Placement, NumaError> {
    let refuse = |option: &'static str, list: &NodeList, message: String| NumaError::Node {
        origin: list.origin.to_string(),
        job: job.name.clone(),
        option,
        value: list.text.clone(),
        message,
    };
    let cpus = match &job.numa_cpu_nodes {
        None => None,
        Some(list) => {
            let nodes = list
                .resolve(allowed)
                .map_err(|m| refuse("numa_cpu_nodes", list, m))?;
            let mut cpus = Vec::new();
            for n in nodes {
                cpus.extend(cpus_of(n)?);
            }
            cpus.sort_unstable();
            cpus.dedup();
            Some(cpus)
        }
    };
    let resolve = |list: &NodeList| {
        list.resolve(allowed)
            .map_err(|m| refuse("numa_mem_policy", list, m))
    };
    let policy = match &job.numa_mem_policy {
        None | Some(MemPolicy::Default) => None,
        Some(MemPolicy::Local) => Some((MPOL_LOCAL, Vec::new())),
        Some(MemPolicy::Prefer(n, origin)) => {
            if !allowed.contains(n) {
                // fio 3.33 only prints libnuma's "set_mempolicy: Invalid argument" and runs
                // the job without the policy; the job would not run as written.
                let have: Vec<String> = allowed.iter().map(|n| n.to_string()).collect();
                return Err(NumaError::Node {
                    origin: origin.to_string(),
                    job: job.name.clone(),
                    option: "numa_mem_policy",
                    value: format!("prefer:{n}"),
                    message: format!(
                        "node {n} does not exist on this machine (its nodes: {}); fio 3.33 warns \"set_mempolicy: Invalid argument\" and runs without the policy",
                        have.join(",")
                    ),
                });
            }
            Some((MPOL_PREFERRED, vec![*n]))
        }
        Some(MemPolicy::Bind(list)) => Some((MPOL_BIND, resolve(list)?)),
        // libnuma's numa_set_interleave_mask: an empty mask is the default policy.
        Some(MemPolicy::Interleave(list)) => match resolve(list)? {
            nodes if nodes.is_empty() => Some((MPOL_DEFAULT, nodes)),
            nodes => Some((MPOL_INTERLEAVE, nodes)),
        },
    };
    Ok(Placement { cpus, policy })
}

fn has_numa_options(job: &JobSpec) -> bool {
    job.numa_cpu_nodes.is_some() || job.numa_mem_policy.is_some()
}

/// The job's placement on this machine (None without NUMA options), without applying it:
/// the check fio makes when it reads the job file.
pub fn check(job: &JobSpec) -> Result<Option<Placement>, NumaError> {
    if !has_numa_options(job) {
        return Ok(None);
    }
    let allowed = allowed_nodes(job)?;
    placement(job, &allowed, |n| node_cpus(job, n)).map(Some)
}

/// Apply the job's NUMA options to the calling thread (fio's thread_main, before the buffers
/// are allocated).
pub fn apply(job: &JobSpec) -> Result<(), NumaError> {
    let Some(p) = check(job)? else {
        return Ok(());
    };
    if let Some(cpus) = &p.cpus {
        set_affinity(cpus).map_err(|source| NumaError::Call {
            job: job.name.clone(),
            call: "sched_setaffinity",
            fio: "numa_run_on_node_mask",
            source,
            hint: ": the nodes have no CPUs this process may use (see /sys/devices/system/node/nodeN/cpulist)",
        })?;
    }
    if let Some((mode, nodes)) = &p.policy {
        set_mempolicy(*mode, nodes).map_err(|source| NumaError::Call {
            job: job.name.clone(),
            call: "set_mempolicy",
            fio: "set_mempolicy",
            source,
            hint: "",
        })?;
    }
    Ok(())
}

/// Pin the calling thread to these CPUs (sched_setaffinity of pid 0).
pub fn set_affinity(cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c >= libc::CPU_SETSIZE as usize {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: c is below CPU_SETSIZE, the bits of the set.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: pid 0 is the calling thread; the set is a live cpu_set_t of the size passed.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn mask_of(nodes: &[u32]) -> std::io::Result<[libc::c_ulong; MASK_WORDS]> {
    let mut mask = [0 as libc::c_ulong; MASK_WORDS];
    for &n in nodes {
        let n = n as usize;
        if n >= MASK_BITS {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        mask[n / 64] |= 1 << (n % 64);
    }
    Ok(mask)
}

fn set_mempolicy(mode: i32, nodes: &[u32]) -> std::io::Result<()> {
    let mask = mask_of(nodes)?;
    // SAFETY: set_mempolicy(2) reads MASK_BITS bits from the live mask (maxnode is one more,
    // as libnuma passes it) and changes the calling thread's policy only.
    let r = unsafe {
        libc::syscall(
            libc::SYS_set_mempolicy,
            mode as libc::c_long,
            mask.as_ptr(),
            (MASK_BITS + 1) as libc::c_ulong,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's memory policy: (mode, nodes).
pub fn thread_mempolicy() -> std::io::Result<(i32, Vec<u32>)> {
    let mut mode: libc::c_int = -1;
    let mut mask = [0 as libc::c_ulong; MASK_WORDS];
    // SAFETY: get_mempolicy(2) writes the mode and MASK_BITS bits of nodes into live
    // buffers; no address, no flags: the thread's policy.
    let r = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut libc::c_int,
            mask.as_mut_ptr(),
            (MASK_BITS + 1) as libc::c_ulong,
            std::ptr::null_mut::<libc::c_void>(),
            0 as libc::c_ulong,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let nodes = (0..MASK_BITS)
        .filter(|&n| mask[n / 64] & (1 << (n % 64)) != 0)
        .map(|n| n as u32)
        .collect();
    Ok((mode, nodes))
}

/// The CPUs the calling thread may run on.
pub fn thread_cpus() -> std::io::Result<Vec<usize>> {
    // SAFETY: as in set_affinity; the kernel fills the set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; the set is live and of the size passed.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: c is below CPU_SETSIZE, the bits of the set.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(text: &str) -> JobSpec {
        crate::fio::jobfile::parse_job_text(
            &format!("[j]\nsize=1m\n{text}\n"),
            "t.fio",
            &crate::fio::jobfile::SystemSources,
        )
        .unwrap()
        .jobs
        .remove(0)
    }

    /// Two nodes of two CPUs each, for the resolution alone.
    fn two_nodes(j: &JobSpec) -> Result<Placement, NumaError> {
        placement(j, &[0, 1], |n| Ok(vec![2 * n as usize, 2 * n as usize + 1]))
    }

    #[test]
    fn placements_resolve_as_fios() {
        let p = two_nodes(&job("numa_cpu_nodes=0-1\nnuma_mem_policy=interleave:0-1")).unwrap();
        assert_eq!(p.cpus, Some(vec![0, 1, 2, 3]));
        assert_eq!(p.policy, Some((MPOL_INTERLEAVE, vec![0, 1])));
        let p = two_nodes(&job("numa_cpu_nodes=1\nnuma_mem_policy=bind:0")).unwrap();
        assert_eq!(p.cpus, Some(vec![2, 3]));
        assert_eq!(p.policy, Some((MPOL_BIND, vec![0])));
        let p = two_nodes(&job("numa_mem_policy=prefer:1")).unwrap();
        assert_eq!((p.cpus, p.policy), (None, Some((MPOL_PREFERRED, vec![1]))));
        let p = two_nodes(&job("numa_mem_policy=local")).unwrap();
        assert_eq!(p.policy, Some((MPOL_LOCAL, vec![])));
        assert_eq!(
            two_nodes(&job("numa_mem_policy=default")).unwrap().policy,
            None
        );
        assert_eq!(
            two_nodes(&job("numa_mem_policy=interleave"))
                .unwrap()
                .policy,
            Some((MPOL_INTERLEAVE, vec![0, 1]))
        );
        assert_eq!(
            two_nodes(&job("numa_mem_policy=interleave:!all"))
                .unwrap()
                .policy,
            Some((MPOL_DEFAULT, vec![]))
        );
        // Node 2 does not exist: fio refuses the file, and so do we, naming file and line.
        let e = two_nodes(&job("numa_cpu_nodes=0-2"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("t.fio:3: job 'j': option 'numa_cpu_nodes=0-2'"),
            "{e}"
        );
        assert!(e.contains("node argument 2 out of range"), "{e}");
        let e = two_nodes(&job("numa_mem_policy=bind:3"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("node argument 3 is out of range"), "{e}");
        let e = two_nodes(&job("numa_mem_policy=prefer:5"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("set_mempolicy: Invalid argument"), "{e}");
    }

    /// For real, on a thread of its own: node 0 (every machine has it) pins the thread to
    /// node 0's CPUs, and each policy is what get_mempolicy then reports.
    #[test]
    fn node0_pinning_and_policies_take_effect() {
        let node0 = std::fs::read_to_string("/sys/devices/system/node/node0/cpulist");
        let Ok(node0) = node0 else {
            eprintln!("SKIPPED: no /sys/devices/system/node/node0 (a kernel without NUMA)");
            return;
        };
        let want: Vec<usize> = crate::probe::events::parse_cpu_list(node0.trim())
            .unwrap()
            .into_iter()
            .map(|c| c as usize)
            .collect();
        for (policy, mode, nodes) in [
            ("bind:0", MPOL_BIND, vec![0]),
            ("interleave:0", MPOL_INTERLEAVE, vec![0]),
            ("prefer:0", MPOL_PREFERRED, vec![0]),
            ("local", MPOL_LOCAL, vec![]),
        ] {
            let j = job(&format!("numa_cpu_nodes=0\nnuma_mem_policy={policy}"));
            let (cpus, pol) = std::thread::spawn(move || {
                apply(&j).unwrap();
                (thread_cpus().unwrap(), thread_mempolicy().unwrap())
            })
            .join()
            .unwrap();
            assert_eq!(cpus, want, "{policy}: affinity is node 0's cpulist");
            assert_eq!(pol, (mode, nodes), "{policy}: get_mempolicy");
        }
        // This thread was left alone.
        assert_eq!(thread_mempolicy().unwrap().0, MPOL_DEFAULT);
    }

    /// `!0` on a machine whose only node is 0: no CPU left, sched_setaffinity fails with
    /// EINVAL, as fio's numa_run_on_node_mask does ("err=22").
    #[test]
    fn no_cpus_left_is_fios_einval() {
        let allowed = allowed_nodes(&job("numa_cpu_nodes=0")).unwrap();
        if allowed != [0] {
            eprintln!("SKIPPED: this machine has nodes {allowed:?}, not node 0 alone");
            return;
        }
        let j = job("numa_cpu_nodes=!0");
        let e = std::thread::spawn(move || apply(&j).unwrap_err().to_string())
            .join()
            .unwrap();
        assert!(
            e.contains("sched_setaffinity failed") && e.contains("os error 22"),
            "{e}"
        );
        assert!(e.contains("numa_run_on_node_mask failed"), "{e}");
    }
}
