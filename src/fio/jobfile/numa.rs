//! fio's NUMA options, `numa_cpu_nodes=NODES` and `numa_mem_policy=MODE[:NODES]`, read as fio
//! 3.33 reads them (options.c's str_numa_cpunodes_cb and str_numa_mpol_cb, node lists in
//! libnuma's numa_parse_nodestring syntax: `all`, `N`, `A-B`, comma lists, a leading `!` for
//! the complement, `+` for node numbers relative to the allowed nodes).
//!
//! Why it exists: the job file's text becomes a typed policy here, so that the engine only
//! applies it. The syntax is checked when the job file is read; which nodes exist is the
//! machine's business, so a [`NodeList`] is resolved against the allowed nodes it is handed
//! ([`NodeList::resolve`]), with fio's (libnuma's) messages for a node that does not exist.
//! What it must never do: read the system (the caller passes the nodes in), or accept a
//! list it cannot read (fio's device-affinity names, `netdev:eth0` and the like, are an error).

use super::Origin;

/// One item of a node list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeItem {
    /// `N`.
    One(u32),
    /// `A-B`, both ends included.
    Range(u32, u32),
}

/// A node list as written (libnuma's nodestring), resolved only against a machine's nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeList {
    /// The text, for messages.
    pub text: String,
    /// Where the option was written.
    pub origin: Origin,
    /// A leading `!`: the allowed nodes not listed.
    pub invert: bool,
    /// A `+` (after any `!`): numbers count the allowed nodes (`+0` is the first).
    pub relative: bool,
    /// `all`: every allowed node.
    pub all: bool,
    /// The listed nodes (empty with `all`).
    pub items: Vec<NodeItem>,
}

/// `numa_mem_policy=`: fio's memory policy modes (MPOL_*).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemPolicy {
    /// `default`: the policy is left as it is (fio makes no call).
    Default,
    /// `prefer:N`: allocate on node N first (where the option was written, for messages).
    Prefer(u32, Origin),
    /// `bind:NODES`: allocate on these nodes only.
    Bind(NodeList),
    /// `interleave[:NODES]`: spread pages over the nodes (all allowed ones without a list).
    Interleave(NodeList),
    /// `local`: allocate on the node of the CPU running the thread.
    Local,
}

impl NodeList {
    /// Read `text` as libnuma's numa_parse_nodestring does; Err is a message naming the
    /// piece it could not read.
    pub fn parse(text: &str, origin: &Origin) -> Result<NodeList, String> {
        let mut s = text.trim();
        let mut list = NodeList {
            text: s.to_string(),
            origin: origin.clone(),
            invert: false,
            relative: false,
            all: false,
            items: Vec::new(),
        };
        if s.is_empty() {
            return Err("needs a node list (e.g. 0, 0-1, 0,2, all)".into());
        }
        if let Some(r) = s.strip_prefix('!') {
            list.invert = true;
            s = r;
        }
        if let Some(r) = s.strip_prefix('+') {
            list.relative = true;
            s = r;
        }
        if s == "all" {
            list.all = true;
            return Ok(list);
        }
        if s.starts_with(|c: char| c.is_ascii_alphabetic()) && s.contains(':') {
            return Err(format!(
                "'{s}' is not a node list: write node numbers (0, 0-1, 0,2) or all (fio's device names such as netdev:eth0 are not supported)"
            ));
        }
        let num = |p: &str| -> Result<u32, String> {
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!(
                    "unparseable node description '{p}' in '{text}' (libnuma: \"unparseable node description `{p}'\"); write node numbers (0, 0-1, 0,2) or all"
                ));
            }
            p.parse::<u32>()
                .map_err(|_| format!("node number '{p}' is too large"))
        };
        for part in s.split(',') {
            list.items.push(match part.split_once('-') {
                Some((a, b)) => NodeItem::Range(num(a)?, num(b)?),
                None => NodeItem::One(num(part)?),
            });
        }
        Ok(list)
    }

    /// The nodes this list names among `allowed` (the nodes the process may use, ascending),
    /// as numa_parse_nodestring gives them; a node that is not allowed is an error with
    /// libnuma's and fio's words.
    pub fn resolve(&self, allowed: &[u32]) -> Result<Vec<u32>, String> {
        let missing = |n: u32, libnuma: &str| {
            let have: Vec<String> = allowed.iter().map(|n| n.to_string()).collect();
            format!(
                "node {n} does not exist on this machine (its nodes: {}; see /sys/devices/system/node); fio 3.33 refuses it too: \"libnuma: Warning: node argument {n} {libnuma}\", \"numa_parse_nodestring failed\"",
                have.join(",")
            )
        };
        // libnuma's get_nr: a relative number is the index of an allowed node.
        let node = |n: u32| -> Option<u32> {
            if self.relative {
                allowed.get(n as usize).copied()
            } else {
                allowed.contains(&n).then_some(n)
            }
        };
        let mut set: Vec<u32> = if self.all {
            allowed.to_vec()
        } else {
            Vec::new()
        };
        for item in &self.items {
            match *item {
                NodeItem::One(n) => set.push(node(n).ok_or_else(|| missing(n, "is out of range"))?),
                NodeItem::Range(a, b) => {
                    let first = node(a).ok_or_else(|| missing(a, "is out of range"))?;
                    let last = node(b).ok_or_else(|| missing(b, "out of range"))?;
                    set.extend(allowed.iter().filter(|&&n| n >= first && n <= last));
                }
            }
        }
        set.sort_unstable();
        set.dedup();
        if self.invert {
            set = allowed
                .iter()
                .copied()
                .filter(|n| !set.contains(n))
                .collect();
        }
        Ok(set)
    }
}

impl MemPolicy {
    /// Read `numa_mem_policy=` as fio's str_numa_mpol_cb does (with its messages quoted).
    pub fn parse(text: &str, origin: &Origin) -> Result<MemPolicy, String> {
        let (mode, nodes) = match text.split_once(':') {
            Some((m, n)) => (m.trim(), Some(n.trim())),
            None => (text.trim(), None),
        };
        match (mode, nodes) {
            ("default", None) => Ok(MemPolicy::Default),
            ("local", None) => Ok(MemPolicy::Local),
            ("default" | "local", Some(_)) => Err(format!(
                "'{mode}' takes no node list (fio: \"NO nodelist for 'local'\"); write numa_mem_policy={mode}"
            )),
            ("prefer", Some(n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => n
                .parse::<u32>()
                .map(|n| MemPolicy::Prefer(n, origin.clone()))
                .map_err(|_| format!("node number '{n}' is too large")),
            ("prefer", Some(_)) => Err(
                "one node only for 'prefer' (fio: \"one node only for 'prefer'\"); write prefer:N"
                    .into(),
            ),
            ("prefer", None) => Err(
                "one node is needed for 'prefer' (fio: \"one node is needed for 'prefer'\"); write prefer:N"
                    .into(),
            ),
            ("bind", None) => Err(
                "a node list is needed for 'bind' (fio: \"a nodelist is needed for 'bind'\"); write bind:NODES, e.g. bind:0"
                    .into(),
            ),
            ("bind", Some(n)) => Ok(MemPolicy::Bind(NodeList::parse(n, origin)?)),
            // fio: an interleave without a list interleaves over all nodes.
            ("interleave", n) => Ok(MemPolicy::Interleave(NodeList::parse(
                n.unwrap_or("all"),
                origin,
            )?)),
            _ => Err(format!(
                "'{mode}' is not a memory policy: memory policy should be: default, prefer, bind, interleave, local (fio's words)"
            )),
        }
    }

    /// The node list the policy names, if any.
    pub fn nodes(&self) -> Option<&NodeList> {
        match self {
            MemPolicy::Bind(l) | MemPolicy::Interleave(l) => Some(l),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> Origin {
        Origin {
            file: "t.fio".into(),
            line: 3,
        }
    }

    fn nodes(text: &str, allowed: &[u32]) -> Result<Vec<u32>, String> {
        NodeList::parse(text, &origin())?.resolve(allowed)
    }

    #[test]
    fn node_lists_resolve_as_libnumas() {
        let four = [0, 1, 2, 3];
        assert_eq!(nodes("0", &four).unwrap(), vec![0]);
        assert_eq!(nodes("1-2,0", &four).unwrap(), vec![0, 1, 2]);
        assert_eq!(nodes("all", &four).unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(nodes("!1", &four).unwrap(), vec![0, 2, 3]);
        assert_eq!(nodes("!all", &four).unwrap(), Vec::<u32>::new());
        // Relative: the second and third allowed nodes.
        assert_eq!(nodes("+1-2", &[0, 4, 6, 8]).unwrap(), vec![4, 6]);
        // A range keeps the allowed nodes inside it only.
        assert_eq!(nodes("0-6", &[0, 4, 6, 8]).unwrap(), vec![0, 4, 6]);
        // On one node (this machine, most likely): what fio 3.33 refuses, with its words.
        let e = nodes("0-1", &[0]).unwrap_err();
        assert!(
            e.contains("node 1 does not exist") && e.contains("node argument 1 out of range"),
            "{e}"
        );
        let e = nodes("1", &[0]).unwrap_err();
        assert!(
            e.contains("node argument 1 is out of range") && e.contains("its nodes: 0"),
            "{e}"
        );
        assert_eq!(nodes("!0", &[0]).unwrap(), Vec::<u32>::new());
        for bad in ["foo", "0-", "0,,1", "-1", "netdev:eth0", ""] {
            assert!(nodes(bad, &four).is_err(), "{bad}");
        }
    }

    #[test]
    fn memory_policies_parse_as_fios() {
        let p = |t: &str| MemPolicy::parse(t, &origin());
        assert_eq!(p("default").unwrap(), MemPolicy::Default);
        assert_eq!(p("local").unwrap(), MemPolicy::Local);
        assert_eq!(p("prefer:1").unwrap(), MemPolicy::Prefer(1, origin()));
        let MemPolicy::Bind(l) = p("bind:0-1").unwrap() else {
            panic!("bind")
        };
        assert_eq!(l.resolve(&[0, 1, 2]).unwrap(), vec![0, 1]);
        let MemPolicy::Interleave(l) = p("interleave").unwrap() else {
            panic!("interleave")
        };
        assert!(l.all);
        for (bad, words) in [
            ("local:0", "NO nodelist for 'local'"),
            ("default:0", "NO nodelist for 'local'"),
            ("prefer", "one node is needed for 'prefer'"),
            ("prefer:0-1", "one node only for 'prefer'"),
            ("bind", "a nodelist is needed for 'bind'"),
            ("bind:x", "unparseable node description"),
            (
                "foo:0",
                "memory policy should be: default, prefer, bind, interleave, local",
            ),
        ] {
            let e = p(bad).unwrap_err();
            assert!(e.contains(words), "{bad}: {e}");
        }
    }
}
